import { z } from '@keel-mcp/core'
import { withSql } from '../errors.js'
import { summarizePlan } from '../lib/index.js'
import { defineTool, paramsShape, readOnly, sqlShape } from './shared.js'

export const explainQuery = defineTool({
  name: 'explain_query',
  title: 'Explain query',
  description:
    'The plan of one read-only query: summary, tree, JSON. analyze runs it (rolled back) for real timings.',
  input: {
    sql: sqlShape.describe('The query, without EXPLAIN'),
    params: paramsShape,
    analyze: z.boolean().default(false).describe('Analyze'),
  },
  output: {
    summary: z.string(),
    analyzed: z.boolean(),
    plan: z.record(z.string(), z.unknown()),
  },
  annotations: readOnly,
  // A slow query or a search of a large tree can run as an MCP task: the client polls for it.
  taskSupport: 'optional',
  async run({ sql, params, analyze }, { deps, signal }) {
    const result = await withSql(sql, () => deps.db.explain(sql, { analyze, params: params ?? [], signal }))
    const { summary, tree } = summarizePlan(result.plan)
    return {
      data: { summary, analyzed: result.analyzed, plan: result.plan },
      text: `${summary}\n\n${tree}`,
    }
  },
})
