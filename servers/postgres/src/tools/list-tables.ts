import { decodeCursor, encodeCursor, ToolError, z } from '@keel-mcp/core'
import { defineTool, readOnly } from './shared.js'

const kinds = ['table', 'view', 'materialized_view', 'foreign_table'] as const

export const listTables = defineTool({
  name: 'list_tables',
  title: 'List tables',
  description:
    'List tables, views and materialized views with estimated row counts and comments, paginated. ' +
    'Filter by schema and by a name pattern. Then describe_table for columns and keys.',
  input: {
    schema: z.string().min(1).optional().describe('Only this schema (default: every non-system schema)'),
    pattern: z
      .string()
      .max(200)
      .optional()
      .describe('Case-insensitive name filter: a substring, or * and ? wildcards (cust*)'),
    kinds: z.array(z.enum(kinds)).min(1).optional().describe('Only these kinds (default: all)'),
    limit: z.number().int().min(1).max(1000).default(100).describe('Tables per page'),
    cursor: z.string().optional().describe('nextCursor from the previous page'),
  },
  output: {
    tables: z.array(
      z.object({
        schema: z.string(),
        name: z.string(),
        kind: z.enum(kinds),
        estimatedRows: z.number().nullable().describe('Planner estimate; null if never analyzed'),
        comment: z.string().nullable(),
      }),
    ),
    total: z.number().int().describe('Matches across all pages'),
    nextCursor: z.string().optional(),
  },
  annotations: readOnly,
  async run({ schema, pattern, kinds: wanted, limit, cursor }, { deps, signal }) {
    // The cursor is bound to the filter: reusing it with other arguments is refused, not misread.
    const key = JSON.stringify([schema ?? null, pattern ?? null, wanted ?? null])
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
    const page = await deps.db.listTables({
      ...(schema === undefined ? {} : { schema }),
      ...(pattern === undefined ? {} : { pattern }),
      ...(wanted === undefined ? {} : { kinds: wanted }),
      limit,
      offset,
      signal,
    })
    const nextCursor = page.nextOffset === null ? undefined : encodeCursor({ offset: page.nextOffset, key })
    const lines = page.tables.map((table) => {
      const kind = table.kind === 'table' ? '' : ` [${table.kind.replace('_', ' ')}]`
      const rows = table.estimatedRows === null ? '' : ` ~${table.estimatedRows} rows`
      return `${table.schema}.${table.name}${kind}${rows}${table.comment ? ` — ${table.comment}` : ''}`
    })
    const shown = `${offset + 1}–${offset + page.tables.length} of ${page.total}`
    const text = page.tables.length
      ? `${lines.join('\n')}\n(${shown}${nextCursor ? `; more: cursor "${nextCursor}"` : ''})`
      : page.total > 0
        ? `No tables on this page (${page.total} in total).`
        : 'No tables match.'
    return {
      data: { tables: page.tables, total: page.total, ...(nextCursor ? { nextCursor } : {}) },
      text,
    }
  },
})
