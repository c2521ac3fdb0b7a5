import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/** Records every file a spawned Node process loads (CommonJS and ESM), and at exit its built-ins. */
export interface ModuleLoadRecorder {
  /** Node arguments to put before the script: `--require <preload>`. */
  args: string[]
  /** Environment to give the process (where the record is written). */
  env: Record<string, string>
  /** What was loaded so far: absolute file names, `file:` URLs, and `node:<name>` for built-ins (at exit). */
  loaded(): Promise<string[]>
  /** Removes the recorder's files. */
  dispose(): Promise<void>
}

const PRELOAD = `
const { appendFileSync } = require('node:fs')
const Module = require('node:module')
const log = process.env.KEEL_LOAD_LOG
const load = Module.prototype.load
Module.prototype.load = function (filename) {
  appendFileSync(log, filename + '\\n')
  return load.call(this, filename)
}
Module.register(HOOK_URL)
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

/**
 * A recorder of what a spawned server loads, for start-up tests ("nothing of X loads before the
 * first call"): spawn with `[...recorder.args, bin]` and `recorder.env`, then read `loaded()`.
 */
export async function recordModuleLoads(): Promise<ModuleLoadRecorder> {
  const work = await mkdtemp(join(tmpdir(), 'keel-module-loads-'))
  const log = join(work, 'loaded.txt')
  await writeFile(log, '')
  await writeFile(join(work, 'hook.mjs'), HOOK)
  const preload = join(work, 'preload.cjs')
  await writeFile(
    preload,
    PRELOAD.replace('HOOK_URL', JSON.stringify(pathToFileURL(join(work, 'hook.mjs')).href)),
  )
  return {
    args: ['--require', preload],
    env: { KEEL_LOAD_LOG: log },
    loaded: async () => (await readFile(log, 'utf8')).split('\n').filter(Boolean),
    dispose: () => rm(work, { recursive: true, force: true }),
  }
}
