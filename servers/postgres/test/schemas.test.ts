import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminQuery, createScratchDatabase, seedSampleSchema, sharedPostgres } from './harness/index.js'
import { closeAll, connect } from './helpers.js'

const shared = sharedPostgres()
let scratch: Awaited<ReturnType<typeof createScratchDatabase>>

// A copy of the sample schema with the extensions the DBA tools read.
beforeAll(async () => {
  scratch = await createScratchDatabase(shared.superuserUrl, shared.url)
  await seedSampleSchema(scratch.superuserUrl, { readerRole: shared.readerRole })
  await adminQuery(scratch.superuserUrl, 'CREATE EXTENSION pg_stat_statements; CREATE EXTENSION hypopg')
})
afterAll(async () => {
  await closeAll()
  await scratch?.drop()
})

// Every tool, called on the shared test database through both client generations: each client
// checks structuredContent against the outputSchema it got from tools/list (the v1 client with
// Ajv) and throws when they disagree, so a call that resolves is a result that validates.
const calls: Array<[string, Record<string, unknown>]> = [
  ['list_schemas', {}],
  ['list_tables', { schema: 'shop', limit: 2 }],
  ['describe_table', { schema: 'shop', table: 'orders' }],
  ['query', { sql: 'SELECT id, status FROM shop.orders ORDER BY id LIMIT $1', params: [3], max_rows: 2 }],
  ['explain_query', { sql: 'SELECT count(*) FROM shop.orders' }],
  [
    'explain_query',
    {
      sql: 'SELECT * FROM shop.orders WHERE note = $1',
      hypothetical_indexes: ['CREATE INDEX ON shop.orders (note)'],
    },
  ],
  ['list_objects', { kind: 'sequence' }],
  ['describe_object', { kind: 'type', schema: 'shop', name: 'order_status' }],
  ['get_top_queries', {}],
  ['recommend_indexes', { sql: 'SELECT * FROM shop.orders WHERE note = $1' }],
  ['analyze_db_health', {}],
]

describe.each([
  { label: 'v2 client', generation: 'v2' as const },
  { label: 'v1 client (Ajv)', generation: 'v1' as const },
])('structured results match the listed output schemas ($label)', ({ generation }) => {
  it('calls every tool and gets structuredContent the client validated', async () => {
    const connection = await connect(scratch.url, { generation })
    const { tools } = await connection.client.listTools()
    expect(tools.filter((tool) => !tool.outputSchema).map((tool) => tool.name)).toEqual([])
    expect([...new Set(calls.map(([name]) => name))].sort()).toEqual(
      tools.map((tool) => String(tool.name)).sort(),
    )
    for (const [name, args] of calls) {
      const result = await connection.client.callTool({ name, arguments: args })
      const failure = result.isError ? (result.content as Array<{ text: string }>)[0]?.text : undefined
      expect({ name, failure }).toEqual({ name, failure: undefined })
      expect(result.structuredContent).toBeTypeOf('object')
    }
  })
})
