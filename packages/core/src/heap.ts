import { setFlagsFromString } from 'node:v8'

/**
 * How far V8's old generation may grow past what survived the last full collection before the
 * next one starts, in percent: V8's `--heap-growing-percent`, which {@link boundHeapGrowth} sets
 * for every process `run` owns.
 *
 * Left to itself, V8 picks a factor of up to 4 (on a machine with 2 GiB of heap limit or more)
 * from its GC and allocation speeds, and the heap it committed for that growth is resident. A
 * server whose live heap is 15–25 MiB then swings its RSS by up to 60 MiB between full
 * collections, and which of its sizes a user sees depends on where in the cycle they look: the
 * hardening soak measured RSS 15–23 % higher after 60 s of calls than before, with the heap live
 * after each full GC flat. At 50 % the swing is a few MiB (growth 0–7 % over the same soak). The
 * cost is a few more full collections of a small heap; V8 itself uses factors of 1.3–2 when its
 * heap limit is small. A bundled bin's launcher (tools/bundle/launcher.cjs) sets the same flag
 * before it compiles the bundle, so V8's code cache is made and used under the same flags (V8
 * rejects a cache made under others); the two values must stay equal.
 */
export const HEAP_GROWING_PERCENT = 50

const GROWING_FLAG = /^--(no-)?heap[-_]growing[-_]percent(=|$)/

/**
 * Applies {@link HEAP_GROWING_PERCENT} to this process's V8, unless node was started with a
 * `--heap-growing-percent` of its own (`node --heap-growing-percent=0 …` restores V8's own
 * choice). V8 reads the setting each time it sets the next collection's limit, so setting it
 * after start-up takes effect from the next full collection on. Returns whether it was applied.
 */
export function boundHeapGrowth(
  execArgv: readonly string[] = process.execArgv,
  setFlags: (flags: string) => void = setFlagsFromString,
): boolean {
  if (execArgv.some((arg) => GROWING_FLAG.test(arg))) return false
  setFlags(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
  return true
}
