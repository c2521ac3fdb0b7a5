import { decodeCursor, encodeCursor, ToolError, z } from '@keel-mcp/core'
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
  },
  output: {
    tables: items(),
    total: z.number().int(),
    nextCursor: z.string().optional(),
  },
  annotations: readOnly,
  async run({ schema, pattern, kinds: wanted, limit, cursor, database }, { deps, signal }) {
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
