import { afterAll, describe, expect, it } from 'vitest'
import { sharedPostgres } from './harness/index.js'
import { closeAll, connect } from './helpers.js'

const shared = sharedPostgres()
afterAll(closeAll)

// Every tool, called on the shared test database through both client generations: each client
// checks structuredContent against the outputSchema it got from tools/list (the v1 client with
// Ajv) and throws when they disagree, so a call that resolves is a result that validates.
const calls: Array<[string, Record<string, unknown>]> = [
  ['list_schemas', {}],
  ['list_tables', { schema: 'shop', limit: 2 }],
  ['describe_table', { schema: 'shop', table: 'orders' }],
  ['query', { sql: 'SELECT id, status FROM shop.orders ORDER BY id LIMIT $1', params: [3], max_rows: 2 }],
  ['explain_query', { sql: 'SELECT count(*) FROM shop.orders' }],
]

describe.each([
  { label: 'v2 client', generation: 'v2' as const },
  { label: 'v1 client (Ajv)', generation: 'v1' as const },
])('structured results match the listed output schemas ($label)', ({ generation }) => {
  it('calls every tool and gets structuredContent the client validated', async () => {
    const connection = await connect(shared.url, { generation })
    const { tools } = await connection.client.listTools()
    expect(tools.filter((tool) => !tool.outputSchema).map((tool) => tool.name)).toEqual([])
    expect(calls.map(([name]) => name).sort()).toEqual(tools.map((tool) => String(tool.name)).sort())
    for (const [name, args] of calls) {
      const result = await connection.client.callTool({ name, arguments: args })
      const failure = result.isError ? (result.content as Array<{ text: string }>)[0]?.text : undefined
      expect({ name, failure }).toEqual({ name, failure: undefined })
      expect(result.structuredContent).toBeTypeOf('object')
    }
  })
})
