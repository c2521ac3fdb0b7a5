import { ToolError, z } from '@keel-mcp/core'
import { withSql } from '../errors.js'
import { recommendIndexes as advise, type IndexAdvice } from '../lib/index.js'
import { databaseShape, defineTool, items, paramsShape, readOnly, rowCount, sqlShape } from './shared.js'

const withOptionalSql = <T>(sql: string | undefined, work: () => Promise<T>) =>
  sql === undefined ? work() : withSql(sql, work)

const kib = (bytes: number) => `${Math.max(1, Math.round(bytes / 1024))} KiB`

function adviceText(advice: IndexAdvice): string {
  const lines = advice.recommendations.map(
    (entry, index) =>
      `${index + 1}. ${entry.definition};\n   cost ${entry.costBefore.toFixed(0)} → ${entry.costAfter.toFixed(0)} ` +
      `(${(entry.improvement * 100).toFixed(1)} % lower over ${entry.queries} quer${entry.queries === 1 ? 'y' : 'ies'}), ~${kib(entry.estimatedBytes)}`,
  )
  const summary = `${advice.analysedQueries} quer${advice.analysedQueries === 1 ? 'y' : 'ies'} analysed, ${advice.candidatesCosted} candidate indexes costed with hypopg${advice.skipped.length ? `, ${advice.skipped.length} skipped` : ''}.`
  return lines.length
    ? `${lines.join('\n')}\n${summary} Run these yourself (the server never creates indexes).`
    : `No index would lower the estimated cost by 10 % or more. ${summary}`
}

export const recommendIndexes = defineTool({
  name: 'recommend_indexes',
  title: 'Recommend indexes',
  description: 'Indexes for sql, else for the pg_stat_statements workload: hypopg-costed, ranked.',
  input: {
    sql: sqlShape.optional().describe('SQL'),
    params: paramsShape,
    limit: rowCount(20).default(5).describe('Limit'),
    database: databaseShape,
  },
  output: { recommendations: items(), analysedQueries: z.number().int(), skipped: items() },
  annotations: readOnly,
  taskSupport: 'optional',
  async run({ sql, params, limit, database }, { deps, signal }) {
    if (sql === undefined && params !== undefined) {
      throw new ToolError('invalid_argument', 'params belong to sql.', {
        hint: 'Pass sql with params, or neither.',
      })
    }
    const { db } = deps.target(database)
    const advice = await withOptionalSql(sql, () =>
      advise(
        (work) => db.transaction({ signal }, work),
        sql === undefined ? { workload: true } : { sql, ...(params === undefined ? {} : { params }) },
        limit,
      ),
    )
    return {
      data: {
        recommendations: advice.recommendations.map((entry) => ({ ...entry })),
        analysedQueries: advice.analysedQueries,
        skipped: advice.skipped.map((entry) => ({ ...entry })),
      },
      text: adviceText(advice),
    }
  },
})
