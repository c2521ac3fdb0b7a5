import { ToolError, z } from '@keel-mcp/core'
import { describeObject as describe } from '../lib/index.js'
import { describeText, lookUpTable } from './describe-table.js'
import { allKinds, isTableKind } from './list-objects.js'
import { databaseShape, defineTool, items, nonEmpty, readOnly } from './shared.js'

function entryText(entry: Record<string, unknown>): string {
  return Object.entries(entry)
    .map(([key, value]) => {
      const shown = Array.isArray(value) ? value.join(', ') : String(value)
      return shown.includes('\n') ? `${key}:\n${shown}` : `${key}: ${shown}`
    })
    .join('\n')
}

export const describeObject = defineTool({
  name: 'describe_object',
  title: 'Describe object',
  description: 'One object by kind and name (functions: every overload; tables: as describe_table).',
  input: {
    kind: z.enum(allKinds).describe('Kind'),
    schema: z.string().refine(nonEmpty, 'must not be empty').optional().describe('Default: public'),
    name: z.string().refine(nonEmpty, 'must not be empty').describe('Name'),
    database: databaseShape,
  },
  output: { kind: z.string(), schema: z.string().nullable(), name: z.string(), entries: items() },
  annotations: readOnly,
  async run({ kind, schema, name, database }, { deps, signal }) {
    const { db } = deps.target(database)
    if (isTableKind(kind)) {
      const table = await lookUpTable(db, name, signal, schema)
      return {
        data: { kind: table.kind, schema: table.schema, name: table.name, entries: [{ ...table }] },
        text: describeText(table),
      }
    }
    const object = await db.transaction({ signal }, (client) =>
      describe(client, db.schemas, kind, schema, name),
    )
    if (object === null) {
      throw new ToolError('not_found', `No ${kind} ${schema === undefined ? name : `${schema}.${name}`}.`, {
        hint: `Call list_objects with kind ${kind} to see what exists.`,
      })
    }
    const title = `${kind} ${object.schema === null ? '' : `${object.schema}.`}${object.name}`
    const text = `${title}\n${object.entries.map(entryText).join('\n\n')}\n`
    return { data: { ...object, entries: object.entries }, text }
  },
})
