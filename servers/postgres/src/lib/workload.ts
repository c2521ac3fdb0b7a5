/**
 * The workload as pg_stat_statements records it: the statements of this database that cost most,
 * by total time, mean time, calls or rows. Server-written SQL only (see docs/security.md): the
 * caller picks the order from a fixed list and a bounded limit, nothing else reaches the text.
 */
import type { PoolClient } from 'pg'
import { ExtensionMissingError, requireExtension } from './extensions.js'
import { positiveInteger } from './limits.js'

type Queryable = Pick<PoolClient, 'query'>

export type TopQueryOrder = 'total_time' | 'mean_time' | 'calls' | 'rows'

export interface TopQuery {
  /** Normalised text: constants replaced by $1, $2… */
  readonly query: string
  readonly queryId: string
  readonly calls: number
  readonly totalTimeMs: number
  readonly meanTimeMs: number
  readonly stddevTimeMs: number
  readonly rows: number
  /** shared_blks_hit / (hit + read), null when the statement read no shared buffers. */
  readonly sharedHitRatio: number | null
  /** This statement's share of the total execution time of the listed database's statements. */
  readonly shareOfTotalTime: number
}

const orderColumns: Readonly<Record<TopQueryOrder, string>> = {
  total_time: 'total_time',
  mean_time: 'mean_time',
  calls: 'calls',
  rows: 'rows',
}

/**
 * The most expensive statements of the current database. Versions before 1.8 (PostgreSQL 12)
 * name the time columns without `_exec`; both are handled.
 */
export async function topQueries(
  client: Queryable,
  options: { orderBy?: TopQueryOrder; limit?: number } = {},
): Promise<TopQuery[]> {
  const extension = await requireExtension(client, 'pg_stat_statements')
  const limit = Math.min(positiveInteger('limit', options.limit ?? 10), 100)
  const order = orderColumns[options.orderBy ?? 'total_time'] ?? 'total_time'
  const [major, minor] = extension.version.split('.').map(Number)
  const exec = (major ?? 0) > 1 || (minor ?? 0) >= 8 ? '_exec' : ''
  let rows: Array<Record<string, unknown>>
  try {
    const result = await client.query(
      `WITH s AS (
         SELECT query, queryid::text AS query_id, calls::float8 AS calls,
                total${exec}_time AS total_time, mean${exec}_time AS mean_time,
                stddev${exec}_time AS stddev_time, rows::float8 AS rows,
                shared_blks_hit::float8 AS hit, shared_blks_read::float8 AS read
           FROM ${extension.schema}.pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
       )
       SELECT query, query_id, calls, total_time, mean_time, stddev_time, rows,
              CASE WHEN hit + read > 0 THEN hit / (hit + read) END AS hit_ratio,
              total_time / NULLIF(sum(total_time) OVER (), 0) AS share
         FROM s
        ORDER BY ${order} DESC NULLS LAST, query_id
        LIMIT $1`,
      [limit],
    )
    rows = result.rows
  } catch (error) {
    // 55000: installed in this database, but the library is not in shared_preload_libraries.
    if ((error as { code?: unknown }).code === '55000') {
      throw new ExtensionMissingError(
        'pg_stat_statements',
        'pg_stat_statements is installed in this database but not loaded: it must be in shared_preload_libraries.',
      )
    }
    throw error
  }
  return rows.map((row) => ({
    query: String(row.query ?? ''),
    queryId: String(row.query_id ?? ''),
    calls: Number(row.calls),
    totalTimeMs: Number(row.total_time),
    meanTimeMs: Number(row.mean_time),
    stddevTimeMs: Number(row.stddev_time),
    rows: Number(row.rows),
    sharedHitRatio: row.hit_ratio === null || row.hit_ratio === undefined ? null : Number(row.hit_ratio),
    shareOfTotalTime: Number(row.share ?? 0),
  }))
}
