import { type ResourceTemplateSpec, ToolError } from '@keel-mcp/core'
import type { DatabaseTarget, PostgresDeps } from './tools/shared.js'

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

/**
 * The first segment of a target's URIs: the `--database` name, or for the default target (named
 * `default`) the database's own name, as before several databases existed.
 */
async function segmentOf(target: DatabaseTarget, options: { signal?: AbortSignal } = {}): Promise<string> {
  return target.name === 'default' ? target.currentDatabase(options) : target.name
}

/** The target a URI's first segment names (named targets first), or undefined. */
async function targetOf(deps: PostgresDeps, segment: string, signal?: AbortSignal) {
  const named = deps.targets.get(segment)
  if (named !== undefined && named.name !== 'default') return named
  const fallback = deps.targets.get('default')
  if (
    fallback !== undefined &&
    segment === (await fallback.currentDatabase({ ...(signal ? { signal } : {}) }))
  )
    return fallback
  return undefined
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
    // Each database on its own: one that is down leaves the others listed.
    const perTarget = await Promise.all(
      [...deps.targets.values()].map(async (target) => {
        try {
          const [database, page] = await Promise.all([
            segmentOf(target, { signal }),
            target.db.listTables({ limit: RESOURCE_LIST_LIMIT, signal }),
          ])
          return page.tables.map((table) => ({
            uri: tableUri(database, table.schema, table.name),
            name:
              deps.targets.size > 1
                ? `${target.name}: ${table.schema}.${table.name}`
                : `${table.schema}.${table.name}`,
            ...(table.comment ? { description: table.comment } : {}),
            mimeType: MIME,
          }))
        } catch (error) {
          if (deps.targets.size === 1) throw error
          return []
        }
      }),
    )
    return perTarget.flat()
  },
  complete: {
    database: async (value, { deps }) =>
      (
        await Promise.all(
          [...deps.targets.values()].map((target) => segmentOf(target).catch(() => undefined)),
        )
      ).filter((name): name is string => name !== undefined && startsWith(value)(name)),
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
    // A database this server does not serve has no tables of ours.
    const target = await targetOf(deps, database, signal)
    if (target === undefined) throw new ToolError('not_found', `No table at ${uri.href}`)
    const description = await target.db.describeTable(schema, table, { signal })
    if (description === null) throw new ToolError('not_found', `No table at ${uri.href}`)
    return [{ uri: uri.href, mimeType: MIME, text: JSON.stringify(description) }]
  },
}
