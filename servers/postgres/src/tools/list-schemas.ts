import { z } from '@keel-mcp/core'
import { databaseShape, defineTool, items, readOnly } from './shared.js'

export const listSchemas = defineTool({
  name: 'list_schemas',
  title: 'List schemas',
  description: 'Schemas with table counts and comments. Start here, then list_tables.',
  input: {
    include_system: z.boolean().default(false).describe('Include system'),
    database: databaseShape,
  },
  output: {
    database: z.string(),
    schemas: items(),
  },
  annotations: readOnly,
  async run({ include_system, database: name }, { deps, signal }) {
    const target = deps.target(name)
    const [database, all] = await Promise.all([
      target.currentDatabase({ signal }),
      target.db.listSchemas({ signal }),
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
