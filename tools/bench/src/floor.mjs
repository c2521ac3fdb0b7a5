// The cold-start floor of a server on SDK v2: the SDK's plain no-op server (baselines/sdk-noop.mjs,
// no Keel code) bundled by Keel's own bundler behind the same code-caching launcher as every Keel
// bin. A Keel server cannot start faster than this; a reference server on SDK v1 can.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { coldStart, ratio, table } from './rpc.mjs'

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

/**
 * Cold start against the floor, as one table: `ours`, the floor and `reference`, alternated. What a
 * Keel server takes above the floor is Keel's and the server's own; what the floor takes above the
 * reference is the SDK generation's (every reference is built on SDK v1).
 */
export async function floorRow(name, ours, reference) {
  const rounds = Number(process.env.BENCH_COLD_ROUNDS ?? 11)
  const floor = { command: process.execPath, args: [floorBin()] }
  const contenders = [ours, floor, reference]
  await coldStart(contenders, 1) // the unmeasured first start of each (fills the V8 code cache)
  const [oursMs, floorMs, referenceMs] = await coldStart(contenders, rounds)
  console.log(
    `\n#### ${name}: cold start → tools/list against the SDK v2 floor (${rounds} alternated rounds, medians)\n`,
  )
  table(
    ['server', 'spawn → tools/list', '÷ reference', '÷ floor'],
    [
      [`keel ${name}`, `${oursMs.toFixed(0)} ms`, ratio(oursMs, referenceMs), ratio(oursMs, floorMs)],
      [
        'SDK v2 no-op, bundled like a Keel bin (the floor)',
        `${floorMs.toFixed(0)} ms`,
        ratio(floorMs, referenceMs),
        '1.00×',
      ],
      [`reference ${name} (SDK v1)`, `${referenceMs.toFixed(0)} ms`, '1.00×', ratio(referenceMs, floorMs)],
    ],
  )
}
