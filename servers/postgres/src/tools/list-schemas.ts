import { z } from '@keel-mcp/core'
import { defineTool, items, readOnly } from './shared.js'

export const listSchemas = defineTool({
  name: 'list_schemas',
  title: 'List schemas',
  description: 'Schemas with owner, comment and table count. Start here, then list_tables.',
  input: {
    include_system: z.boolean().default(false).describe('Include system'),
  },
  output: {
    database: z.string(),
    schemas: items(),
  },
  annotations: readOnly,
  async run({ include_system }, { deps, signal }) {
    const [database, all] = await Promise.all([
      deps.currentDatabase({ signal }),
      deps.db.listSchemas({ signal }),
    ])
    const schemas = include_system ? all : all.filter((schema) => !schema.system)
    const lines = schemas.map(
      (schema) =>
        `${schema.name} (${schema.tableCount} table${schema.tableCount === 1 ? '' : 's'}${schema.accessible ? '' : ', no access'})${schema.comment ? `: ${schema.comment}` : ''}`,
    )
    const text = lines.length
      ? `Schemas of database ${database}:\n${lines.join('\n')}`
      : `No schemas visible in database ${database}.`
    return { data: { database, schemas }, text }
  },
})
