import { z } from '@keel-mcp/core'
import { listObjects as list, type ObjectKind, objectKinds, type TableKind } from '../lib/index.js'
import { databaseShape, defineTool, items, nonEmpty, readOnly, rowCount } from './shared.js'

export const tableKinds = ['table', 'view', 'materialized_view', 'foreign_table'] as const
/** Every kind list_objects and describe_object know. */
export const allKinds = [...tableKinds, ...objectKinds] as [
  TableKind | ObjectKind,
  ...(TableKind | ObjectKind)[],
]

export const isTableKind = (kind: string): kind is TableKind =>
  (tableKinds as readonly string[]).includes(kind)

export const listObjects = defineTool({
  name: 'list_objects',
  title: 'List objects',
  description: 'Functions, sequences, extensions, triggers, types… of one kind, a line each.',
  input: {
    kind: z.enum(allKinds).describe('Kind'),
    schema: z.string().refine(nonEmpty, 'must not be empty').optional().describe('Schema'),
    pattern: z
      .string()
      .refine((value) => value.length <= 200, 'at most 200 characters')
      .optional()
      .describe('Substring, or * ? wildcards'),
    limit: rowCount(1000).default(100).describe('Limit'),
    database: databaseShape,
  },
  output: { objects: items(), truncated: z.boolean() },
  annotations: readOnly,
  async run({ kind, schema, pattern, limit, database }, { deps, signal }) {
    const { db } = deps.target(database)
    const filter = {
      ...(schema === undefined ? {} : { schema }),
      ...(pattern === undefined ? {} : { pattern }),
      limit,
    }
    let objects: Array<{ schema: string | null; name: string; detail: string }>
    let truncated: boolean
    if (isTableKind(kind)) {
      const page = await db.listTables({ ...filter, kinds: [kind], signal })
      objects = page.tables.map((table) => ({
        schema: table.schema,
        name: table.name,
        detail: `${table.estimatedRows === null ? '' : `~${table.estimatedRows} rows`}${table.comment ? ` — ${table.comment}` : ''}`,
      }))
      truncated = page.nextOffset !== null
    } else {
      const result = await db.transaction({ signal }, (client) =>
        list(client, db.schemas, { ...filter, kind }),
      )
      objects = result.objects
      truncated = result.truncated
    }
    const lines = objects.map(
      (object) =>
        `${object.schema === null ? '' : `${object.schema}.`}${object.name}${object.detail ? `: ${object.detail}` : ''}`,
    )
    const label = kind.replace('_', ' ')
    const text = lines.length
      ? `${lines.join('\n')}${truncated ? `\n(first ${limit}; narrow with schema or pattern)` : ''}`
      : `No ${label} objects match.`
    return { data: { objects: objects.map((object) => ({ kind, ...object })), truncated }, text }
  },
})
