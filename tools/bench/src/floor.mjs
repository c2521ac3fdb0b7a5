// The cold-start floor of a server on SDK v2: the SDK's plain no-op server (baselines/sdk-noop.mjs,
// no Keel code) bundled by Keel's own bundler behind the same code-caching launcher as every Keel
// bin. A Keel server cannot start faster than this; a reference server on SDK v1 can.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const floorDir = fileURLToPath(new URL('../floor/', import.meta.url))
const bundler = fileURLToPath(new URL('../../bundle/bundle.mjs', import.meta.url))

/** Builds floor/dist once per bench run; returns the bin to spawn. */
let built
export function floorBin() {
  built ??= (() => {
    execFileSync(process.execPath, [bundler], { cwd: floorDir, stdio: ['ignore', 'ignore', 'inherit'] })
    const bin = join(floorDir, 'dist/index.js')
    if (!existsSync(bin)) throw new Error(`the floor server was not built: ${bin} is missing`)
    return bin
  })()
  return built
}
