import {
  type Budget,
  budgetOutput,
  estimateTokens,
  maxTokensArgument,
  openBudget,
  ToolError,
  withMarker,
  z,
} from '@keel-mcp/core'
import { withSql } from '../errors.js'
import {
  explainWithHypotheticalIndexes,
  type HypotheticalExplain,
  maxHypotheticalIndexes,
  summarizePlan,
} from '../lib/index.js'
import { databaseShape, defineTool, items, paramsShape, readOnly, sqlShape } from './shared.js'

const cost = (value: number) => value.toFixed(2)

function hypotheticalText(result: HypotheticalExplain): string {
  const { before, after } = result
  const change = before.totalCost > 0 ? (1 - after.totalCost / before.totalCost) * 100 : 0
  const lines = [
    `Estimated cost ${cost(before.totalCost)} → ${cost(after.totalCost)} with the hypothetical indexes (${change >= 0 ? `${change.toFixed(1)} % lower` : `${(-change).toFixed(1)} % higher`}).`,
  ]
  for (const index of result.indexes) {
    lines.push(
      `${index.used ? 'Used' : 'Not used'}: ${index.definition} (~${Math.round(index.estimatedBytes / 1024)} KiB, shown as ${index.name})`,
    )
  }
  return lines.join('\n')
}

/**
 * The answer within the call's budget: the head (the summary, and the hypothetical indexes'
 * comparison), the tree and the JSON plan. What does not fit goes: first the JSON plan (the tree
 * says the same), then the tree's last lines, cut at a line with a cursor that shows the rest (by
 * planning again: with analyze, the rest comes from a new run).
 */
function within<T extends { summary: string; analyzed: boolean; plan: Record<string, unknown> }>(
  budget: Budget,
  head: string,
  tree: string,
  data: T,
) {
  const whole = `${head}\n\n${tree}`
  if (
    budget.start.offset === 0 &&
    estimateTokens(whole) + estimateTokens(JSON.stringify(data)) <= budget.tokens
  )
    return { data, text: whole }
  const lines = tree.replace(/\n$/, '').split('\n')
  const note = `The JSON plan is left out: it did not fit the answer's ${budget.tokens} tokens (the tree says the same).`
  const cut = budget.items(lines, (line) => line, {
    noun: 'plan lines',
    reserve: estimateTokens(head) + estimateTokens(note) + 3,
  })
  const { plan: _left, ...rest } = data
  return {
    data: { ...rest, ...(cut.cut ? { budget: cut.cut } : {}) },
    text: withMarker(`${head}\n${note}\n\n${cut.text}`, cut.marker),
  }
}

export const explainQuery = defineTool({
  name: 'explain_query',
  title: 'Explain query',
  description:
    'Plan of a read-only query: summary, tree, JSON. analyze runs it (rolled back); ' +
    'hypothetical_indexes: cost with them (hypopg).',
  input: {
    sql: sqlShape.describe('The query, without EXPLAIN'),
    params: paramsShape,
    analyze: z.boolean().default(false).describe('Analyze'),
    hypothetical_indexes: z
      .array(
        z
          .string()
          .refine((value) => value.length >= 1 && value.length <= 2_000, 'must be 1–2,000 characters'),
      )
      .refine(
        (values) => values.length >= 1 && values.length <= maxHypotheticalIndexes,
        `1–${maxHypotheticalIndexes} definitions`,
      )
      .optional()
      .describe('CREATE INDEX statements, never created'),
    database: databaseShape,
    cursor: z.string().optional().describe('Cursor'),
    max_tokens: maxTokensArgument,
  },
  output: {
    summary: z.string(),
    analyzed: z.boolean(),
    plan: z.record(z.string(), z.unknown()).optional(),
    costBefore: z.number().optional(),
    costAfter: z.number().optional(),
    hypotheticalIndexes: items().optional(),
    ...budgetOutput,
  },
  annotations: readOnly,
  // A slow query or a search of a large tree can run as an MCP task: the client polls for it.
  taskSupport: 'optional',
  async run(args, { deps, signal }) {
    const { sql, params, analyze, hypothetical_indexes, database } = args
    const budget = openBudget('explain_query', args)
    const { db } = deps.target(database)
    if (hypothetical_indexes !== undefined) {
      if (analyze) {
        throw new ToolError('invalid_argument', 'analyze and hypothetical_indexes cannot be combined.', {
          hint: 'Hypothetical indexes exist only for the planner: drop analyze to compare estimated costs.',
        })
      }
      const result = await withSql(sql, () =>
        explainWithHypotheticalIndexes(
          (work) => db.transaction({ signal }, work),
          sql,
          hypothetical_indexes,
          params ?? [],
        ),
      )
      const { summary, tree } = summarizePlan(result.after.plan)
      return within(budget, `${hypotheticalText(result)}\n\n${summary}`, tree, {
        summary,
        analyzed: false,
        plan: result.after.plan,
        costBefore: result.before.totalCost,
        costAfter: result.after.totalCost,
        hypotheticalIndexes: result.indexes.map((index) => ({ ...index })),
      })
    }
    const result = await withSql(sql, () => db.explain(sql, { analyze, params: params ?? [], signal }))
    const { summary, tree } = summarizePlan(result.plan)
    return within(budget, summary, tree, { summary, analyzed: result.analyzed, plan: result.plan })
  },
})
