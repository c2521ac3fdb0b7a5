/** Run parameters (overridable from the environment) and the figures each suite reports. */
import { appendFileSync } from 'node:fs'

export const MiB = 1024 * 1024

/** The fuzz seed: fixed so CI is reproducible; `HARDENING_SEED=<n>` explores others. */
export const FUZZ_SEED = Number(process.env.HARDENING_SEED ?? 20261124)
/** Messages per server and transport. */
export const FUZZ_COUNT = Number(process.env.HARDENING_FUZZ_COUNT ?? 10_000)
/** Length of the soak window in ms. */
export const SOAK_MS = Number(process.env.HARDENING_SOAK_MS ?? 60_000)

/**
 * Prints one suite's figures to stderr (one JSON line, prefixed) and, when `HARDENING_REPORT`
 * names a file, appends them there (docs/security.md quotes such a run).
 */
export function record(suite: string, figures: Record<string, unknown>): void {
  const line = JSON.stringify({ suite, ...figures })
  process.stderr.write(`[hardening] ${line}\n`)
  const file = process.env.HARDENING_REPORT
  if (file) appendFileSync(file, `${line}\n`)
}
