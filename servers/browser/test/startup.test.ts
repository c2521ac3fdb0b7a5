import { fileURLToPath } from 'node:url'
import { type ModuleLoadRecorder, recordModuleLoads, spawnRaw } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// Start-up cost: the built bin answers initialize and tools/list without loading puppeteer-core,
// the policy proxy's HTTP stack (node:http) or any of the bundle's dist/vendor files; all of these
// load with the first browser (the e2e tests make those calls). A preload records every file Node
// loads, CommonJS and ESM, and at exit the built-in modules it loaded.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
let recorder: ModuleLoadRecorder

beforeAll(async () => {
  recorder = await recordModuleLoads()
})

afterAll(async () => {
  await recorder?.dispose()
})

describe('the built bin at start-up', () => {
  it('serves initialize and tools/list with no puppeteer, no HTTP stack and no vendor file loaded', async () => {
    const raw = spawnRaw(process.execPath, [...recorder.args, BIN], { env: recorder.env })
    const initialized = await raw.initialize()
    expect(initialized.result?.serverInfo?.name).toBeDefined()
    const listed = await raw.request('tools/list')
    expect(listed.result.tools.map((tool: { name: string }) => tool.name)).toContain('navigate')
    const { code } = await raw.end()
    expect(code).toBe(0)
    const loaded = await recorder.loaded()
    // The preload sees the bin itself and the built-ins it does load, so it sees what else would.
    expect(loaded).toContain(BIN)
    expect(loaded).toContain('node:net')
    expect(loaded.filter((file) => /puppeteer|[\\/]dist[\\/]vendor[\\/]/.test(file))).toEqual([])
    expect(loaded.filter((file) => /^node:(_?http|https)/.test(file))).toEqual([])
  })
})
