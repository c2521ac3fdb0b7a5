import {
  budgetOutput,
  decodeCursor,
  encodeCursor,
  maxTokensArgument,
  openBudget,
  ToolError,
  withMarker,
  z,
} from '@keel-mcp/core'
import { databaseShape, defineTool, items, nonEmpty, readOnly, rowCount } from './shared.js'

const kinds = ['table', 'view', 'materialized_view', 'foreign_table'] as const

export const listTables = defineTool({
  name: 'list_tables',
  title: 'List tables',
  description: 'Tables and views with estimated rows. Then describe_table.',
  input: {
    schema: z.string().refine(nonEmpty, 'must not be empty').optional().describe('Schema'),
    pattern: z
      .string()
      .refine((value) => value.length <= 200, 'at most 200 characters')
      .optional()
      .describe('Substring, or * ? wildcards'),
    kinds: z.array(z.enum(kinds)).refine(nonEmpty, 'must not be empty').optional().describe('Kinds'),
    limit: rowCount(1000).default(100).describe('Limit'),
    cursor: z.string().optional().describe('Cursor'),
    database: databaseShape,
    max_tokens: maxTokensArgument,
  },
  output: {
    tables: items(),
    total: z.number().int(),
    nextCursor: z.string().optional(),
    ...budgetOutput,
  },
  annotations: readOnly,
  async run(args, { deps, signal }) {
    const { schema, pattern, kinds: wanted, limit, database } = args
    // A cut page continues from a budget cursor: this page's own cursor and the tables shown of it.
    const budget = openBudget('list_tables', args, { upstream: true })
    const cursor = budget.start.upstream
    // The cursor is bound to the filter: reusing it with other arguments is refused, not misread.
    const key = JSON.stringify([schema ?? null, pattern ?? null, wanted ?? null, database ?? null])
    let offset = 0
    if (cursor !== undefined) {
      const decoded = decodeCursor<{ offset?: unknown; key?: unknown }>(cursor)
      if (
        decoded === undefined ||
        decoded.key !== key ||
        typeof decoded.offset !== 'number' ||
        !Number.isInteger(decoded.offset) ||
        decoded.offset < 0
      ) {
        throw new ToolError('invalid_argument', 'The cursor does not belong to these arguments.', {
          hint: 'Pass nextCursor unchanged with the same schema, pattern and kinds, or start without a cursor.',
        })
      }
      offset = decoded.offset
    }
    const page = await deps.target(database).db.listTables({
      ...(schema === undefined ? {} : { schema }),
      ...(pattern === undefined ? {} : { pattern }),
      ...(wanted === undefined ? {} : { kinds: wanted }),
      limit,
      offset,
      signal,
    })
    const cut = budget.items(
      page.tables,
      (table) => {
        const kind = table.kind === 'table' ? '' : ` [${table.kind.replace('_', ' ')}]`
        const rows = table.estimatedRows === null ? '' : ` ~${table.estimatedRows} rows`
        return `${table.schema}.${table.name}${kind}${rows}${table.comment ? ` — ${table.comment}` : ''}`
      },
      { noun: 'tables' },
    )
    const nextCursor =
      page.nextOffset === null || cut.cut ? undefined : encodeCursor({ offset: page.nextOffset, key })
    const first = offset + budget.start.offset
    const shown = `${first + 1}–${first + cut.shown.length} of ${page.total}`
    const text = cut.shown.length
      ? withMarker(`${cut.text}\n(${shown}${nextCursor ? `; more: cursor "${nextCursor}"` : ''})`, cut.marker)
      : page.total > 0
        ? `No tables on this page (${page.total} in total).`
        : 'No tables match.'
    return {
      data: {
        tables: cut.shown,
        total: page.total,
        ...(nextCursor ? { nextCursor } : {}),
        ...(cut.cut ? { budget: cut.cut } : {}),
      },
      text,
    }
  },
})
