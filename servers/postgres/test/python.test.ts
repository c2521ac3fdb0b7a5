import { fileURLToPath } from 'node:url'
import {
  type PythonRun,
  type PythonTarget,
  pythonMcp,
  runPythonClient,
  spawnHttp,
} from '@keel-mcp/core/testing'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { sharedPostgres } from './harness/index.js'

// The Python MCP SDK drives the built bin against a real PostgreSQL, over stdio and Streamable
// HTTP, in its default 2026-07-28 mode (`server/discover`) and with the `initialize` handshake.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const shared = sharedPostgres()
const database = new URL(shared.url).pathname.slice(1)

const servers: Array<{ close(): Promise<unknown> }> = []
beforeAll(async () => {
  await pythonMcp()
}, 300_000)
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

const targets: Array<[string, () => Promise<PythonTarget>]> = [
  ['stdio', async () => ({ command: process.execPath, args: [BIN], env: { DATABASE_URL: shared.url } })],
  [
    'Streamable HTTP',
    async () => {
      const server = await spawnHttp(process.execPath, [BIN], { env: { DATABASE_URL: shared.url } })
      servers.push(server)
      return { url: server.url }
    },
  ],
]

function ok(run: PythonRun, index: number): any {
  const result = run.results[index]
  if (!result || !('ok' in result))
    throw new Error(
      `step ${index}: ${JSON.stringify(result)}; ${run.connectError ?? ''} ${run.stderr.slice(-1500)}`,
    )
  return result.ok
}

const text = (result: any): string =>
  result.content.map((block: { text?: string }) => block.text ?? '').join('\n')

describe.each(targets)('the Python MCP SDK over %s', (_transport, target) => {
  it.each([
    ['auto', '2026-07-28'],
    ['legacy', '2025-11-25'],
  ] as const)(
    'in %s mode explores the schema, queries with parameters and is refused a write (%s)',
    async (mode, version) => {
      const run = await runPythonClient({
        target: await target(),
        mode,
        steps: [
          { op: 'list_tools' },
          { op: 'call_tool', name: 'list_tables', arguments: { schema: 'shop' } },
          { op: 'call_tool', name: 'describe_table', arguments: { schema: 'shop', table: 'customers' } },
          {
            op: 'call_tool',
            name: 'query',
            arguments: { sql: 'SELECT email FROM shop.customers WHERE id = $1', params: [3] },
          },
          { op: 'call_tool', name: 'query', arguments: { sql: 'SELECT 1; COMMIT; DROP TABLE shop.orders' } },
          { op: 'call_tool', name: 'query', arguments: { sql: 'SELECT 1', max_rows: 0 } },
          { op: 'read_resource', uri: `postgres://${database}/shop/products` },
        ],
      })
      expect(run.connectError).toBeUndefined()
      expect(run.protocolVersion).toBe(version)
      expect(ok(run, 0).tools.map((tool: { name: string }) => tool.name)).toEqual([
        'list_schemas',
        'list_tables',
        'describe_table',
        'list_objects',
        'describe_object',
        'query',
        'explain_query',
        'get_top_queries',
        'recommend_indexes',
        'analyze_db_health',
      ])
      expect(text(ok(run, 1))).toContain('customers')
      expect(ok(run, 2).structuredContent.primaryKey.columns).toEqual(['id'])
      expect(ok(run, 3).structuredContent.rows).toEqual([['grace@example.com']])
      expect(ok(run, 4).isError).toBe(true)
      expect(ok(run, 5).isError).toBe(true)
      expect(text(ok(run, 5))).toMatch(/^invalid_argument: Invalid arguments for tool query: max_rows: /)
      expect(JSON.parse(ok(run, 6).contents[0].text).name).toBe('products')
      // The connection string never reaches the client.
      expect(JSON.stringify(run.results)).not.toContain(shared.url)
    },
  )
})
