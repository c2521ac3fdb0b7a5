import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  type Connection,
  connectHttp,
  connectStdio,
  type RawStdio,
  readAuditLines,
  runProcess,
  spawnHttp,
  spawnRaw,
} from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { postgresUrl, sharedPostgres, waitFor } from './harness/index.js'
import { activeBackends, SLOW_QUERY, withApplicationName } from './helpers.js'

/** The built bin (`pnpm run build` first): core, SDK and zod inlined; pg, pg-cursor and libpg-query external. */
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const shared = sharedPostgres()
const database = new URL(shared.url).pathname.slice(1)
const password = decodeURIComponent(new URL(shared.url).password)

const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
})

function rawServer(
  args: string[] = [],
  env: Record<string, string> = { DATABASE_URL: shared.url },
): RawStdio {
  const raw = spawnRaw(process.execPath, [BIN, ...args], { env })
  open.push({ close: async () => void (await raw.end()) })
  return raw
}

/** Every stdout line must be a JSON-RPC message: stdout belongs to the protocol. */
function expectOnlyJsonRpc(lines: string[]) {
  expect(lines.length).toBeGreaterThan(0)
  for (const line of lines) expect(JSON.parse(line).jsonrpc).toBe('2.0')
}

/** Neither the connection string nor its password may appear anywhere. */
function expectNoSecrets(text: string) {
  expect(text).not.toContain(shared.url)
  expect(text).not.toContain(password)
  expect(text).not.toContain(encodeURIComponent(password))
}

describe.each(['v2', 'v1'] as const)('the built bin over stdio with the %s client', (generation) => {
  it('lists tools, queries through the parser gate, describes and reads a resource', async () => {
    let stderr = ''
    const connection: Connection = await connectStdio({
      command: process.execPath,
      args: [BIN, '--log-level', 'debug'],
      env: { DATABASE_URL: shared.url },
      generation,
      onStderr: (chunk) => {
        stderr += chunk
      },
    })
    open.push(connection)
    const { client } = connection
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([
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
    const rows = await client.callTool({
      name: 'query',
      arguments: { sql: 'SELECT email FROM shop.customers WHERE id = $1', params: [3] },
    })
    expect(rows.structuredContent.rows).toEqual([['grace@example.com']])
    const refused = await client.callTool({
      name: 'query',
      arguments: { sql: 'SELECT 1; COMMIT; DROP TABLE shop.orders' },
    })
    expect(refused.isError).toBe(true)
    const described = await client.callTool({ name: 'describe_table', arguments: { table: 'customers' } })
    expect(described.structuredContent.primaryKey.columns).toEqual(['id'])
    const resource = await client.readResource({ uri: `postgres://${database}/shop/products` })
    expect(JSON.parse(resource.contents[0].text).name).toBe('products')
    await connection.close()
    expect(stderr).toContain('tool call')
    expectNoSecrets(stderr)
  })
})

describe.each(['v2', 'v1'] as const)('the built bin over HTTP with the %s client', (generation) => {
  it('serves the tools over Streamable HTTP', async () => {
    const server = await spawnHttp(process.execPath, [BIN], { env: { DATABASE_URL: shared.url } })
    open.push(server)
    const connection = await connectHttp(server.url, { generation })
    open.unshift(connection)
    const result = await connection.client.callTool({
      name: 'query',
      arguments: { sql: 'SELECT count(*) AS n FROM shop.orders' },
    })
    expect(result.structuredContent.rows).toEqual([['8']])
    expectNoSecrets(server.stdout() + server.stderr())
  })
})

describe('the audit log', () => {
  it('records the objects a call named, never its SQL, parameters or the connection string', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-postgres-audit-'))
    open.push({ close: () => rm(dir, { recursive: true, force: true }) })
    const file = join(dir, 'audit.jsonl')
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN, '--audit-log', file],
      env: { DATABASE_URL: shared.url },
    })
    const { client } = connection
    const rows = await client.callTool({
      name: 'query',
      arguments: {
        sql: "SELECT id FROM shop.customers WHERE email = 'grace@example.com' OR id = $1",
        params: [918273645],
      },
    })
    expect(rows.isError).toBeFalsy()
    const described = await client.callTool({
      name: 'describe_table',
      arguments: { schema: 'shop', table: 'customers' },
    })
    expect(described.isError).toBeFalsy()
    // Lines still gathered are written when the process exits.
    await connection.close()
    const lines = await readAuditLines(file, 2)
    const text = await readFile(file, 'utf8')
    expect(lines.map((line) => [line.tool, line.outcome, line.arguments])).toEqual([
      ['query', 'ok', undefined],
      ['describe_table', 'ok', { schema: 'shop', table: 'customers' }],
    ])
    expect(text).not.toContain('grace@example.com')
    expect(text).not.toContain('918273645')
    expectNoSecrets(text)
  })
})

describe('the process', () => {
  it('starts and lists tools without reaching the database, then reports it unavailable', async () => {
    const raw = rawServer([], { DATABASE_URL: 'postgres://nobody:pw-123456@127.0.0.1:1/nothing' })
    await raw.initialize()
    const tools = await raw.request('tools/list', {})
    expect(tools.result.tools).toHaveLength(10)
    const call = await raw.request('tools/call', { name: 'query', arguments: { sql: 'SELECT 1' } })
    expect(call.result.isError).toBe(true)
    expect(call.result.content[0].text).toMatch(/^unavailable: Cannot reach PostgreSQL/)
    expect(raw.lines.join('\n') + raw.stderr.join('')).not.toContain('pw-123456')
  })

  it('exits with 0 within a second when stdin closes, with connections open', async () => {
    const raw = spawnRaw(process.execPath, [BIN], { env: { DATABASE_URL: shared.url } })
    await raw.initialize()
    const call = await raw.request('tools/call', { name: 'list_schemas', arguments: {} })
    expect(call.result.isError).toBeFalsy()
    const { code, ms } = await raw.end()
    expect(code).toBe(0)
    expect(ms).toBeLessThan(1000)
  })

  it('exits within a second when stdin closes mid-query, and the statement stops on the server', async () => {
    const applicationName = 'keel-mcp-e2e-exit'
    const raw = spawnRaw(process.execPath, [BIN], {
      env: { DATABASE_URL: withApplicationName(shared.url, applicationName) },
    })
    await raw.initialize()
    raw.sendJson({
      jsonrpc: '2.0',
      id: 'slow',
      method: 'tools/call',
      params: { name: 'query', arguments: { sql: SLOW_QUERY } },
    })
    await waitFor(async () =>
      (await activeBackends(shared.superuserUrl, applicationName)).length > 0 ? true : undefined,
    )
    const { code, ms } = await raw.end()
    expect(code).toBe(0)
    expect(ms).toBeLessThan(1000)
    await waitFor(async () =>
      (await activeBackends(shared.superuserUrl, applicationName)).length === 0 ? true : undefined,
    )
  })

  it('stops a running statement on the server when the client cancels the call', async () => {
    const applicationName = 'keel-mcp-e2e-cancel'
    const raw = rawServer([], { DATABASE_URL: withApplicationName(shared.url, applicationName) })
    await raw.initialize()
    raw.sendJson({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'query', arguments: { sql: SLOW_QUERY } },
    })
    await waitFor(async () =>
      (await activeBackends(shared.superuserUrl, applicationName)).length > 0 ? true : undefined,
    )
    raw.sendJson({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 7, reason: 'test' },
    })
    await waitFor(async () =>
      (await activeBackends(shared.superuserUrl, applicationName)).length === 0 ? true : undefined,
    )
    const next = await raw.request('tools/call', { name: 'query', arguments: { sql: 'SELECT 42' } })
    expect(next.result.structuredContent.rows).toEqual([[42]])
  })

  it('writes only JSON-RPC to stdout and never the connection string anywhere, even at debug level', async () => {
    // The URL on argv (warned about), failures that carry connection details, and debug logging.
    const raw = rawServer([shared.url, '--log-level', 'debug'], {})
    await raw.initialize()
    for (const [id, sql] of [
      [1, 'SELECT current_user'],
      [2, 'SELECT * FROM nope'],
      [3, 'SELECT 1; COMMIT; DROP TABLE shop.orders'],
      [4, "SELECT current_setting('application_name')"],
    ] as const) {
      await raw.request('tools/call', { name: 'query', arguments: { sql } }, id)
    }
    await raw.request('resources/list', {}, 5)
    const wrong = postgresUrl({
      user: shared.passwordRole?.user ?? shared.appRole,
      password: 'wrong-password-123',
      host: new URL(shared.url).hostname,
      port: Number(new URL(shared.url).port),
      database,
    })
    const failing = rawServer(['--log-level', 'debug'], { DATABASE_URL: wrong })
    await failing.initialize()
    const denied = await failing.request('tools/call', { name: 'query', arguments: { sql: 'SELECT 1' } })
    expect(denied.result.content[0].text).toMatch(/^unauthenticated:/)
    await raw.end()
    await failing.end()
    expectOnlyJsonRpc(raw.lines)
    expectOnlyJsonRpc(failing.lines)
    const everything = [...raw.lines, ...raw.stderr, ...failing.lines, ...failing.stderr].join('\n')
    expectNoSecrets(everything)
    expect(everything).not.toContain('wrong-password-123')
    expect(raw.stderr.join('')).toContain('visible in process lists; prefer DATABASE_URL')
  })
})

describe('the command line', () => {
  const runBin = (args: string[], env: Record<string, string> = {}) =>
    runProcess(process.execPath, [BIN, ...args], { env })

  it('prints help with the server options and exits 0', async () => {
    const { code, stdout } = await runBin(['--help'])
    expect(code).toBe(0)
    expect(stdout).toContain('Usage: mcp-server-postgres [database-url...] [options]')
    for (const flag of [
      '--ssl-mode',
      '--ssl-ca',
      '--pool-size',
      '--max-rows',
      '--statement-timeout',
      '--role',
      '--schemas',
    ])
      expect(stdout).toContain(flag)
    expect(stdout).toContain('DATABASE_URL')
  })

  it('prints the version from package.json', async () => {
    const { code, stdout } = await runBin(['--version'])
    expect(code).toBe(0)
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
  })

  it('refuses bad config with one line on stderr that does not echo the URL', async () => {
    const { code, stdout, stderr } = await runBin([], { DATABASE_URL: 'mysql://root:hunter22@db/x' })
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr.trim()).toBe(
      'mcp-server-postgres: Invalid env DATABASE_URL: must be a postgres:// or postgresql:// URL',
    )
  })

  it.each([
    [
      '--toolsets',
      'schema',
      /^mcp-server-postgres: Invalid --toolsets: unknown toolset "schema"; this server has no toolsets/,
    ],
    [
      '--tools',
      'run_query',
      /^mcp-server-postgres: Invalid --tools: unknown tool "run_query"; known: .*query/,
    ],
    [
      '--exclude-tools',
      'explain',
      /^mcp-server-postgres: Invalid --exclude-tools: unknown tool "explain"; known: /,
    ],
  ])('refuses %s %s at start with exit 2, naming what exists', async (flag, value, message) => {
    const { code, stdout, stderr } = await runBin([flag, value], {
      DATABASE_URL: 'postgres://keel@127.0.0.1:1/none',
    })
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toMatch(message)
  })
})
