import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type PostgresInstance,
  postgresUrl,
  seedSampleSchema,
  sharedPostgres,
  startPostgres,
  waitFor,
} from './harness/index.js'
import {
  activeBackends,
  closeAll,
  connect,
  errorKind,
  SLOW_QUERY,
  textOf,
  withApplicationName,
} from './helpers.js'

const shared = sharedPostgres()
afterAll(closeAll)

describe('SQL errors the model can act on', () => {
  it('points at a syntax error with line and caret', async () => {
    const { client } = await connect(shared.url)
    const result = await client.callTool({
      name: 'query',
      arguments: { sql: 'SELECT id, email\n  FROM shop.customers\n WHERE id = = 1' },
    })
    expect(result.isError).toBe(true)
    expect(textOf(result)).toBe(
      [
        'invalid_argument: Syntax error: syntax error at or near "=".',
        'LINE 3:  WHERE id = = 1',
        `${' '.repeat(20)}^`,
      ].join('\n'),
    )
  })

  it('answers an unknown table with not_found and a hint to list_tables', async () => {
    const { client } = await connect(shared.url)
    const result = await client.callTool({ name: 'query', arguments: { sql: 'SELECT * FROM shop.nope' } })
    expect(textOf(result)).toBe(
      [
        'not_found: relation "shop.nope" does not exist',
        'LINE 1: SELECT * FROM shop.nope',
        '                      ^',
        'Hint: Call list_tables to see the tables that exist.',
      ].join('\n'),
    )
  })

  it('answers an unknown column with not_found and a hint to describe_table', async () => {
    const { client } = await connect(shared.url)
    const result = await client.callTool({
      name: 'query',
      arguments: { sql: 'SELECT nope FROM shop.orders' },
    })
    expect(errorKind(result)).toBe('not_found')
    expect(textOf(result)).toContain('Hint: Call describe_table to see the columns of the table.')
  })

  it('reports data errors as invalid_argument', async () => {
    const { client } = await connect(shared.url)
    const result = await client.callTool({ name: 'query', arguments: { sql: 'SELECT 1 / 0' } })
    expect(textOf(result)).toBe('invalid_argument: division by zero')
  })
})

describe('time limits and cancellation', () => {
  it('a statement that exceeds --statement-timeout is cancelled on the server, and the next call works', async () => {
    const applicationName = 'keel-mcp-test-timeout'
    const { client } = await connect(withApplicationName(shared.url, applicationName), {
      argv: ['--statement-timeout', '300', '--pool-size', '1'],
    })
    const result = await client.callTool({ name: 'query', arguments: { sql: SLOW_QUERY } })
    expect(errorKind(result)).toBe('timeout')
    expect(textOf(result)).toContain('canceling statement due to statement timeout')
    expect(textOf(result)).toContain('Hint: Narrow the query')
    // The statement is gone from the server. Another backend of this pool may be busy for a moment
    // opening a fresh session (the discarded connection's replacement) or running the warm-up's own
    // gated query, whose function-policy lookup has a CROSS JOIN of its own: not the query.
    const running = await activeBackends(shared.superuserUrl, applicationName)
    expect(running.filter((row) => row.query.includes(SLOW_QUERY))).toEqual([])
    const next = await client.callTool({ name: 'query', arguments: { sql: 'SELECT 1 AS ok' } })
    expect(next.structuredContent.rows).toEqual([[1]])
  })

  it('an MCP cancel stops the statement on the server, and the pool stays healthy', async () => {
    const applicationName = 'keel-mcp-test-cancel'
    const { client } = await connect(withApplicationName(shared.url, applicationName), {
      argv: ['--pool-size', '2'],
    })
    // Several rounds, each cancelled the moment the statement shows up: a cancel that lands before
    // PostgreSQL has the Execute message is ignored by the server, and must be sent again.
    for (let round = 0; round < 5; round++) {
      const controller = new AbortController()
      const running = client.callTool(
        { name: 'query', arguments: { sql: SLOW_QUERY } },
        { signal: controller.signal },
      )
      running.catch(() => undefined)
      const [backend] = await waitFor(async () => {
        const rows = await activeBackends(shared.superuserUrl, applicationName)
        const slow = rows.filter((row) => row.query.includes(SLOW_QUERY))
        return slow.length > 0 ? slow : undefined
      })
      controller.abort(new Error('the user pressed stop'))
      await expect(running).rejects.toThrow()
      // Gone from the server, not just abandoned by the client.
      await waitFor(async () => {
        const rows = await activeBackends(shared.superuserUrl, applicationName)
        return rows.some((row) => row.pid === backend?.pid) ? undefined : true
      }, 5_000)
    }
    const results = await Promise.all(
      [1, 2, 3].map((n) =>
        client.callTool({ name: 'query', arguments: { sql: 'SELECT $1::int', params: [n] } }),
      ),
    )
    expect(results.map((result) => result.structuredContent.rows[0][0])).toEqual([1, 2, 3])
  })

  it('the tool time limit cancels the statement on the server too', async () => {
    const applicationName = 'keel-mcp-test-tool-timeout'
    const { client } = await connect(withApplicationName(shared.url, applicationName), {
      argv: ['--tool-timeout', '300'],
    })
    const result = await client.callTool({ name: 'query', arguments: { sql: SLOW_QUERY } })
    expect(errorKind(result)).toBe('timeout')
    await waitFor(async () =>
      (await activeBackends(shared.superuserUrl, applicationName)).length === 0 ? true : undefined,
    )
  })
})

describe('PostgreSQL restart mid-session', () => {
  // A cluster of its own: restarting the shared one would break the other test files.
  let cluster: PostgresInstance
  beforeAll(async () => {
    cluster = await startPostgres({ restartable: true })
    await seedSampleSchema(cluster.superuserUrl)
  })
  afterAll(async () => {
    await closeAll()
    await cluster?.stop()
  })

  it('serves the next call after a restart', async () => {
    const { client } = await connect(cluster.url, { argv: ['--pool-size', '3'] })
    const count = { name: 'query', arguments: { sql: 'SELECT count(*) FROM shop.customers' } }
    await Promise.all([1, 2, 3].map(() => client.callTool(count)))
    await cluster.restart()
    expect((await client.callTool(count)).structuredContent.rows).toEqual([['5']])
    const tables = await client.callTool({ name: 'list_tables', arguments: { schema: 'shop' } })
    expect(tables.structuredContent.total).toBe(5)
  })
})

describe('connection failures', () => {
  it('a refused connection is unavailable, and nothing of the URL is echoed', async () => {
    const url = 'postgres://alice:s3cret-pw@127.0.0.1:1/app'
    const { client } = await connect(url)
    for (const name of ['query', 'list_tables']) {
      const result = await client.callTool({ name, arguments: name === 'query' ? { sql: 'SELECT 1' } : {} })
      expect(textOf(result)).toBe(
        'unavailable: Cannot reach PostgreSQL: the connection was refused.\nHint: Check that the database is running and reachable; then retry.',
      )
    }
  })

  it('a wrong password is unauthenticated, without user, password or URL in the answer', async () => {
    const { hostname, port, pathname } = new URL(shared.url)
    const user = shared.passwordRole?.user ?? 'keel_no_such_role'
    const password = 'definitely-wrong-password'
    const url = postgresUrl({
      user,
      password,
      host: hostname,
      port: Number(port),
      database: pathname.slice(1),
    })
    const { client } = await connect(url)
    const result = await client.callTool({ name: 'query', arguments: { sql: 'SELECT 1' } })
    expect(errorKind(result)).toBe('unauthenticated')
    expect(textOf(result)).toBe(
      'unauthenticated: PostgreSQL rejected the credentials of the configured connection.\nHint: Check the user, password and pg_hba.conf rules for the connection.',
    )
  })

  it('TLS required by --ssl-mode against a server without TLS is unavailable', async () => {
    const { client } = await connect(shared.url, { argv: ['--ssl-mode', 'require'] })
    const result = await client.callTool({ name: 'query', arguments: { sql: 'SELECT 1' } })
    expect(errorKind(result)).toBe('unavailable')
  })
})
