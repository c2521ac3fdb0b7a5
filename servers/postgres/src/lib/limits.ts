/**
 * Default limits of a call, and their validation: every number that ends up in SQL text passes
 * {@link positiveInteger} first, so nothing from a caller is ever spliced in as text.
 */
import { DatabaseConfigError } from './errors.js'
import type { QueryLimits, QueryOptions } from './types.js'

export const defaultLimits: QueryLimits = {
  maxRows: 1_000,
  timeoutMs: 30_000,
  lockTimeoutMs: 5_000,
  idleInTransactionTimeoutMs: 60_000,
}

/** The client-side deadline trails the server's statement_timeout, so the server normally wins. */
export const clientDeadlineGraceMs = 500

/** Bytes one call may receive by default (DatabaseOptions.maxResultBytes). */
export const defaultMaxResultBytes = 32 * 1024 * 1024

export function positiveInteger(name: string, value: number, { allowZero = false } = {}): number {
  if (!Number.isInteger(value) || value < (allowZero ? 0 : 1)) {
    throw new DatabaseConfigError(`${name} must be ${allowZero ? 'a non-negative' : 'a positive'} integer`)
  }
  return value
}

const zeroAllowed = { allowZero: true }

/** The limits of one call: the caller's maxRows and timeoutMs over the defaults, validated. */
export function resolveLimits(defaults: QueryLimits, options: QueryOptions): QueryLimits {
  const maxRows = positiveInteger('maxRows', options.maxRows ?? defaults.maxRows, zeroAllowed)
  const timeoutMs = positiveInteger('timeoutMs', options.timeoutMs ?? defaults.timeoutMs)
  return {
    maxRows,
    timeoutMs,
    lockTimeoutMs: Math.min(defaults.lockTimeoutMs, timeoutMs),
    idleInTransactionTimeoutMs: Math.max(defaults.idleInTransactionTimeoutMs, timeoutMs),
  }
}
