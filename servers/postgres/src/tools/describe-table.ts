import { ToolError, z } from '@keel-mcp/core'
import type { Database, TableDescription } from '../lib/index.js'
import { databaseShape, defineTool, item, items, nonEmpty, readOnly } from './shared.js'

const kinds = z.enum(['table', 'view', 'materialized_view', 'foreign_table'])

/** The structured description; also what the table resources return. */
export const tableDescriptionShape = {
  schema: z.string(),
  name: z.string(),
  kind: kinds,
  comment: z.string().nullable(),
  estimatedRows: z.number().nullable(),
  totalBytes: z.number(),
  viewDefinition: z.string().nullable(),
  // Items as open objects: the keys and their types are listed, the fields of each item are in
  // the text (a full schema here cost 600 tokens in every conversation).
  columns: items(),
  primaryKey: item().nullable(),
  foreignKeys: items(),
  referencedBy: items(),
  constraints: items(),
  indexes: items(),
}

const quoted = (name: string) => (/^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`)

function bytes(value: number): string {
  if (value >= 1024 ** 3) return `${(value / 1024 ** 3).toFixed(1)} GiB`
  if (value >= 1024 ** 2) return `${(value / 1024 ** 2).toFixed(1)} MiB`
  if (value >= 1024) return `${Math.round(value / 1024)} KiB`
  return `${value} B`
}

/** A compact, psql \d-like rendering. */
export function describeText(table: TableDescription): string {
  const title = `${table.kind.replace('_', ' ')} ${quoted(table.schema)}.${quoted(table.name)}`
  const size = [
    table.estimatedRows === null ? undefined : `~${table.estimatedRows} rows`,
    table.kind === 'view' ? undefined : bytes(table.totalBytes),
  ].filter(Boolean)
  const lines = [
    `${title[0]?.toUpperCase()}${title.slice(1)}${size.length ? ` (${size.join(', ')})` : ''}${table.comment ? `: ${table.comment}` : ''}`,
    'Columns:',
  ]
  for (const column of table.columns) {
    const parts = [`  ${quoted(column.name)} ${column.type}`]
    if (!column.nullable) parts.push('not null')
    if (column.identity) parts.push(`identity ${column.identity.replace('_', ' ')}`)
    if (column.generated) parts.push(`generated (${column.default ?? ''}) ${column.generated}`)
    else if (column.default !== null) parts.push(`default ${column.default}`)
    if (column.comment) parts.push(`-- ${column.comment}`)
    lines.push(parts.join(' '))
  }
  if (table.primaryKey) lines.push(`Primary key: (${table.primaryKey.columns.map(quoted).join(', ')})`)
  if (table.foreignKeys.length) {
    lines.push('Foreign keys:')
    for (const key of table.foreignKeys) lines.push(`  ${key.definition}`)
  }
  if (table.referencedBy.length) {
    lines.push('Referenced by:')
    for (const key of table.referencedBy)
      lines.push(
        `  ${quoted(key.schema)}.${quoted(key.table)}(${key.columns.map(quoted).join(', ')}) → (${key.referencedColumns.map(quoted).join(', ')})`,
      )
  }
  if (table.constraints.length) {
    lines.push('Constraints:')
    for (const constraint of table.constraints) lines.push(`  ${constraint.name}: ${constraint.definition}`)
  }
  if (table.indexes.length) {
    lines.push('Indexes:')
    for (const index of table.indexes) {
      const using = / USING (.*)$/.exec(index.definition)?.[1] ?? index.definition
      const flags = [
        index.primary ? 'primary key' : index.unique ? 'unique' : '',
        index.valid ? '' : 'INVALID',
      ]
        .filter(Boolean)
        .join(', ')
      lines.push(`  ${index.name}${flags ? ` (${flags})` : ''}: ${using}`)
    }
  }
  if (table.viewDefinition !== null) lines.push('Definition:', table.viewDefinition.trim())
  return `${lines.join('\n')}\n`
}

/**
 * Finds a table by its name (and schema, when given): exactly as stored, else ignoring letter case
 * (the model writes `ORDERS` or `Sales` for what SQL folds to `orders` and `sales`).
 */
export async function findTable(
  db: Database,
  table: string,
  signal: AbortSignal,
  schema?: string,
): Promise<{ schema: string; name: string }> {
  const page = await db.listTables({ pattern: table, limit: 1000, signal })
  const same = (a: string, b: string, exactly: boolean) =>
    exactly ? a === b : a.toLowerCase() === b.toLowerCase()
  const pick = (exactly: boolean) =>
    page.tables.filter(
      (candidate) =>
        same(candidate.name, table, exactly) &&
        (schema === undefined || same(candidate.schema, schema, exactly)),
    )
  const exact = pick(true)
  const matches = exact.length ? exact : pick(false)
  const [first] = matches
  if (first !== undefined && matches.length === 1) return first
  if (matches.length > 1) {
    throw new ToolError(
      'invalid_argument',
      `Several tables are named ${table}: ${matches.map((match) => `${match.schema}.${match.name}`).join(', ')}.`,
      { hint: 'Pass schema as well.' },
    )
  }
  throw notFound(table, schema)
}

/**
 * One table or view described: exactly as given first (one catalog lookup), then by name (and
 * schema) ignoring letter case. Throws `not_found`, or `invalid_argument` when several match.
 */
export async function lookUpTable(db: Database, table: string, signal: AbortSignal, schema?: string) {
  const exact = schema === undefined ? null : await db.describeTable(schema, table, { signal })
  if (exact) return exact
  const found = await findTable(db, table, signal, schema)
  const description = await db.describeTable(found.schema, found.name, { signal })
  if (description === null) throw notFound(table, schema)
  return description
}

export function notFound(table: string, schema?: string): ToolError {
  const dotted = schema === undefined && table.includes('.')
  return new ToolError(
    'not_found',
    `No table or view ${schema === undefined ? table : `${schema}.${table}`}.`,
    {
      hint: dotted
        ? `Pass the schema separately: schema "${table.slice(0, table.indexOf('.'))}", table "${table.slice(table.indexOf('.') + 1)}".`
        : 'Call list_tables to see the tables that exist.',
    },
  )
}

export const describeTable = defineTool({
  name: 'describe_table',
  title: 'Describe table',
  description:
    'Columns, keys both ways, constraints, indexes, size of a table or view. Use before writing SQL.',
  input: {
    schema: z.string().refine(nonEmpty, 'must not be empty').optional().describe('Schema'),
    table: z.string().refine(nonEmpty, 'must not be empty').describe('Table'),
    database: databaseShape,
  },
  output: tableDescriptionShape,
  annotations: readOnly,
  async run({ schema, table, database }, { deps, signal }) {
    const { db } = deps.target(database)
    const description = await lookUpTable(db, table, signal, schema)
    return { data: description, text: describeText(description) }
  },
})
