import { type ResourceTemplateSpec, ToolError } from '@keel-mcp/core'
import type { PostgresDeps } from './tools/shared.js'

/** Tables listed by resources/list; the template, completion and list_tables reach the rest. */
export const RESOURCE_LIST_LIMIT = 1000

const MIME = 'application/json'

/** `postgres://<database>/<schema>/<table>`, each part percent-encoded. */
export function tableUri(database: string, schema: string, table: string): string {
  return `postgres://${[database, schema, table].map(encodeURIComponent).join('/')}`
}

function decoded(value: string | string[] | undefined): string | undefined {
  if (typeof value !== 'string') return undefined
  try {
    return decodeURIComponent(value)
  } catch {
    return undefined
  }
}

const startsWith = (prefix: string) => (name: string) => name.toLowerCase().startsWith(prefix.toLowerCase())

/** One resource per table or view: its definition as JSON (the structured output of describe_table). */
export const tableResource: ResourceTemplateSpec<PostgresDeps> = {
  name: 'table',
  uriTemplate: 'postgres://{database}/{schema}/{table}',
  title: 'Table definition',
  description:
    'Columns, keys, indexes and comments of one table or view, as JSON (what describe_table returns).',
  mimeType: MIME,
  async list({ deps, signal }) {
    const [database, page] = await Promise.all([
      deps.currentDatabase({ signal }),
      deps.db.listTables({ limit: RESOURCE_LIST_LIMIT, signal }),
    ])
    return page.tables.map((table) => ({
      uri: tableUri(database, table.schema, table.name),
      name: `${table.schema}.${table.name}`,
      ...(table.comment ? { description: table.comment } : {}),
      mimeType: MIME,
    }))
  },
  complete: {
    database: async (value, { deps }) => [await deps.currentDatabase()].filter(startsWith(value)),
    schema: async (value, { deps }) =>
      (await deps.db.listSchemas())
        .filter((schema) => !schema.system)
        .map((schema) => schema.name)
        .filter(startsWith(value)),
    table: async (value, { deps, arguments: chosen }) => {
      // Names come from the schema the client already chose, or from every visible schema.
      const page = await deps.db.listTables({
        pattern: `${value}*`,
        limit: 100,
        ...(chosen.schema ? { schema: chosen.schema } : {}),
      })
      return [...new Set(page.tables.map((table) => table.name))]
    },
  },
  async read(uri, variables, { deps, signal }) {
    const database = decoded(variables.database)
    const schema = decoded(variables.schema)
    const table = decoded(variables.table)
    if (database === undefined || schema === undefined || table === undefined) {
      throw new ToolError('not_found', `No table at ${uri.href}`)
    }
    // One server serves one database: another database's name is not a table of ours.
    if (database !== (await deps.currentDatabase({ signal }))) {
      throw new ToolError('not_found', `No table at ${uri.href}`)
    }
    const description = await deps.db.describeTable(schema, table, { signal })
    if (description === null) throw new ToolError('not_found', `No table at ${uri.href}`)
    return [{ uri: uri.href, mimeType: MIME, text: JSON.stringify(description) }]
  },
}
