import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { spawnRaw } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// Start-up cost: the built bin answers initialize and tools/list without loading puppeteer-core,
// the policy proxy's HTTP stack (node:http) or any of the bundle's dist/vendor files; all of these
// load with the first browser (the e2e tests make those calls). A preload records every file Node
// loads, CommonJS and ESM, and at exit the built-in modules it loaded.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const PRELOAD = `
const { appendFileSync } = require('node:fs')
const Module = require('node:module')
const log = process.env.KEEL_LOAD_LOG
const load = Module.prototype.load
Module.prototype.load = function (filename) {
  appendFileSync(log, filename + '\\n')
  return load.call(this, filename)
}
Module.register("HOOK")
process.on('exit', () => {
  for (const entry of process.moduleLoadList)
    if (entry.startsWith('NativeModule ')) appendFileSync(log, 'node:' + entry.slice(13) + '\\n')
})
`
const HOOK = `
import { appendFileSync } from 'node:fs'
export async function load(url, context, next) {
  appendFileSync(process.env.KEEL_LOAD_LOG, url + '\\n')
  return next(url, context)
}
`
let work: string

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'keel-browser-startup-'))
  await writeFile(join(work, 'hook.mjs'), HOOK)
  await writeFile(
    join(work, 'preload.cjs'),
    PRELOAD.replace('"HOOK"', JSON.stringify(pathToFileURL(join(work, 'hook.mjs')).href)),
  )
})

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true })
})

describe('the built bin at start-up', () => {
  it('serves initialize and tools/list with no puppeteer, no HTTP stack and no vendor file loaded', async () => {
    const log = join(work, 'loaded.txt')
    await writeFile(log, '')
    const raw = spawnRaw(process.execPath, ['--require', join(work, 'preload.cjs'), BIN], {
      env: { KEEL_LOAD_LOG: log },
    })
    const initialized = await raw.initialize()
    expect(initialized.result?.serverInfo?.name).toBeDefined()
    const listed = await raw.request('tools/list')
    expect(listed.result.tools.map((tool: { name: string }) => tool.name)).toContain('navigate')
    const { code } = await raw.end()
    expect(code).toBe(0)
    const loaded = (await readFile(log, 'utf8')).split('\n').filter(Boolean)
    // The preload sees the bin itself and the built-ins it does load, so it sees what else would.
    expect(loaded).toContain(BIN)
    expect(loaded).toContain('node:net')
    expect(loaded.filter((file) => /puppeteer|[\\/]dist[\\/]vendor[\\/]/.test(file))).toEqual([])
    expect(loaded.filter((file) => /^node:(_?http|https)/.test(file))).toEqual([])
  })
})
