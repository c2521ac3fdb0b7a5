import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  listToolsAndExit,
  type ModuleLoadRecorder,
  recordModuleLoads,
  spawnRaw,
} from '@keel-mcp/core/testing'
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
    // The URL policy's resolver and the file tools' promises API load with their first use.
    expect(loaded.filter((file) => /^node:(fs\/promises|dns)/.test(file))).toEqual([])
    // Nor node:crypto: the launcher's cache key and core's start need none (lazy-crypto.ts).
    expect(loaded.filter((file) => /^node:(internal\/)?crypto/.test(file))).toEqual([])
  })

  it('lists from the kept tool schemas exactly what it lists when it converts them, per configuration', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'keel-browser-cache-'))
    const uploads = await mkdtemp(join(tmpdir(), 'keel-browser-uploads-'))
    const list = async (args: string[], env: Record<string, string> = {}) => {
      const { tools, stderr } = await listToolsAndExit(process.execPath, [BIN, ...args], {
        env: { KEEL_COMPILE_CACHE_DIR: directory, KEEL_COMPILE_CACHE_DEBUG: '1', ...env },
      })
      return { tools, cache: /keel schema cache: (\w+)/.exec(stderr)?.[1] }
    }
    try {
      const configs = [[], ['--caps', 'evaluate,pdf'], ['--upload-dir', uploads, '--read-only']]
      const converted = []
      for (const args of configs) converted.push((await list(args, { KEEL_COMPILE_CACHE: '0' })).tools)
      expect(new Set(converted.map((tools) => tools?.length)).size).toBe(3)
      for (const round of ['miss', 'hit', 'hit']) {
        for (const [index, args] of configs.entries()) {
          const listed = await list(args)
          expect(listed.cache, `${args.join(' ')} (${round})`).toBe(round)
          expect(listed.tools).toEqual(converted[index])
        }
      }
    } finally {
      await rm(directory, { recursive: true, force: true })
      await rm(uploads, { recursive: true, force: true })
    }
  })
})
