import { z } from '@keel-mcp/core'
import { type TopQuery, topQueries } from '../lib/index.js'
import { databaseShape, defineTool, items, readOnly, rowCount, untrusted } from './shared.js'

const ms = (value: number) => (value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(2)} ms`)

function line(entry: TopQuery, index: number): string {
  const hit =
    entry.sharedHitRatio === null ? 'no buffers' : `${(entry.sharedHitRatio * 100).toFixed(1)} % cache hits`
  const text = entry.query.replace(/\s+/g, ' ').trim()
  return (
    `${index + 1}. ${entry.calls} calls, total ${ms(entry.totalTimeMs)} (${(entry.shareOfTotalTime * 100).toFixed(1)} %), ` +
    `mean ${ms(entry.meanTimeMs)} ± ${ms(entry.stddevTimeMs)}, ${entry.rows} rows, ${hit}\n   ${text.length > 500 ? `${text.slice(0, 500)}…` : text}`
  )
}

export const getTopQueries = defineTool({
  name: 'get_top_queries',
  title: 'Get top queries',
  description: 'Costliest statements, from pg_stat_statements. Then recommend_indexes.',
  input: {
    order_by: z.enum(['total_time', 'mean_time', 'calls', 'rows']).default('total_time').describe('Order by'),
    limit: rowCount(100).default(10).describe('Limit'),
    database: databaseShape,
  },
  output: { queries: items() },
  annotations: readOnly,
  async run({ order_by, limit, database }, { deps, signal }) {
    const { db } = deps.target(database)
    const queries = await db.transaction({ signal }, (client) =>
      topQueries(client, { orderBy: order_by, limit }),
    )
    const text = queries.length
      ? untrusted(queries.map(line).join('\n'))
      : 'pg_stat_statements has recorded no statements for this database yet.'
    return { data: { queries }, text }
  },
})
