/**
 * EXPLAIN of one read-only query, as PostgreSQL's JSON plan: the query is gated, EXPLAIN is
 * composed around it and gated again, and error positions are mapped back to the caller's text.
 */
import { SqlRefusedError } from './errors.js'
import { checkReadOnlySql, type SqlReferences } from './sql-guard.js'
import type { CallOptions, ExplainResult, QueryOptions, QueryResult } from './types.js'

export type ExplainOptions = CallOptions & {
  readonly analyze?: boolean
  readonly params?: readonly unknown[]
}

/** The Database's executor: runs `sql` after the function policy has judged `references`. */
export type Executor = (
  sql: string,
  params: readonly unknown[],
  options: QueryOptions,
  references: SqlReferences,
) => Promise<QueryResult>

/**
 * The JSON plan of one read-only query (pass the query itself, without EXPLAIN). With `analyze`
 * the query really runs (inside the read-only transaction, rolled back), so it is gated first
 * like {@link query}; so is the plain plan, for one rule in both cases. `params` are the values of
 * the query's `$n` placeholders (bound, never spliced into the text).
 */
export async function explain(
  sql: string,
  options: ExplainOptions,
  execute: Executor,
): Promise<ExplainResult> {
  const verdict = await checkReadOnlySql(sql)
  if (!verdict.ok) throw new SqlRefusedError(verdict.code, verdict.message, verdict.position)
  if (verdict.statement !== 'select') {
    throw new SqlRefusedError(
      'not_read_only',
      verdict.statement === 'explain'
        ? 'Pass the query itself, without EXPLAIN: explain adds it.'
        : 'Only queries can be explained.',
    )
  }
  const analyze = options.analyze === true
  const prefix = `EXPLAIN (FORMAT JSON${analyze ? ', ANALYZE, BUFFERS' : ''}) `
  const statement = `${prefix}${sql}`
  // The composed text is gated again: it must still be one EXPLAIN of the same kind of query.
  const composed = await checkReadOnlySql(statement)
  if (!composed.ok || composed.statement !== 'explain' || composed.analyze !== analyze) {
    throw new SqlRefusedError('not_read_only', 'This query cannot be explained.')
  }
  let result: QueryResult
  try {
    result = await execute(statement, options.params ?? [], { ...options, maxRows: 1 }, composed.references)
  } catch (error) {
    // PostgreSQL (and the function policy) count positions in the composed statement; the
    // caller wrote only `sql`.
    if (error instanceof SqlRefusedError) {
      const shifted = error.position === undefined ? undefined : error.position - prefix.length
      throw new SqlRefusedError(
        error.code,
        error.message,
        shifted !== undefined && shifted > 0 ? shifted : undefined,
      )
    }
    const pgError = error as { position?: unknown }
    const position = Number(pgError.position)
    if (Number.isInteger(position) && position > prefix.length)
      pgError.position = String(position - prefix.length)
    throw error
  }
  const plans = result.rows[0]?.[0]
  const plan = Array.isArray(plans) ? (plans[0] as Record<string, unknown> | undefined) : undefined
  if (plan === undefined) throw new Error('EXPLAIN returned no plan')
  return { plan, analyzed: analyze }
}
