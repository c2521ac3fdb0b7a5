import { afterAll, describe, expect, it } from 'vitest'
import { Database, type DatabaseOptions, tlsOptions } from '../../src/lib/database.js'
import {
  classifyPgError,
  DatabaseConfigError,
  QueryCancelledError,
  SqlRefusedError,
} from '../../src/lib/errors.js'
import { adminQuery, sharedPostgres, waitFor } from '../harness/index.js'
import { rejection } from './rejection.js'

const shared = sharedPostgres()
const opened: Database[] = []

/** A Database on the shared cluster, closed after the file. */
function open(options: DatabaseOptions = {}): Database {
  const database = new Database({ connectionString: shared.url, ...options })
  opened.push(database)
  return database
}

afterAll(async () => {
  await Promise.all(opened.map((database) => database.close()))
})

/** Backends of one application_name that are running a statement right now. */
const activeBackends = (applicationName: string) =>
  adminQuery<{ pid: number; query: string }>(
    shared.superuserUrl,
    `SELECT pid, query FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'`,
    [applicationName],
  )

describe('Database#query', () => {
  const database = open()

  it('returns fields with type names, rows as arrays, and the row count', async () => {
    const result = await database.query(
      'SELECT id, email, created_at FROM shop.customers WHERE id <= $1 ORDER BY id',
      [2],
    )
    expect(result.fields).toEqual([
      { name: 'id', dataTypeID: 23, type: 'integer' },
      { name: 'email', dataTypeID: 25, type: 'text' },
      { name: 'created_at', dataTypeID: 1184, type: 'timestamp with time zone' },
    ])
    expect(result.rows.map((row) => row[1])).toEqual(['ada@example.com', 'alan@example.com'])
    expect(result.rowCount).toBe(2)
    expect(result.truncated).toBe(false)
  })

  it('keeps values exact: int8 and numeric as strings, timestamps as PostgreSQL text', async () => {
    const { rows, fields } = await database.query(
      `SELECT 9007199254740993::int8 AS big, 1.10::numeric(10, 2) AS price,
              '2023-12-14 23:59:59.123456+00'::timestamptz AS at, '2024-01-02 03:04:05.5'::timestamp AS local,
              '2024-02-29'::date AS day, '1 day 02:00'::interval AS span, '{"a": [1, 2]}'::jsonb AS doc,
              '\\xdeadbeef'::bytea AS bytes, ARRAY['a', 'b'] AS tags, ARRAY['2024-01-01'::date] AS days,
              'paid'::shop.order_status AS status`,
    )
    expect(rows[0]).toEqual([
      '9007199254740993',
      '1.10',
      '2023-12-14 23:59:59.123456+00',
      '2024-01-02 03:04:05.5',
      '2024-02-29',
      '1 day 02:00:00',
      { a: [1, 2] },
      Buffer.from([0xde, 0xad, 0xbe, 0xef]),
      ['a', 'b'],
      ['2024-01-01'],
      'paid',
    ])
    expect(fields.map((field) => field.type)).toEqual([
      'bigint',
      'numeric',
      'timestamp with time zone',
      'timestamp without time zone',
      'date',
      'interval',
      'jsonb',
      'bytea',
      'text[]',
      'date[]',
      'shop.order_status',
    ])
  })

  it('keeps duplicate column names as separate values', async () => {
    const { rows, fields } = await database.query('SELECT 1 AS a, 2 AS a')
    expect(fields.map((field) => field.name)).toEqual(['a', 'a'])
    expect(rows).toEqual([[1, 2]])
  })

  it('runs SHOW, VALUES, TABLE and EXPLAIN through the cursor', async () => {
    expect((await database.query('SHOW default_transaction_read_only')).rows).toEqual([['on']])
    expect((await database.query("VALUES (1, 'x')")).rows).toEqual([[1, 'x']])
    expect((await database.query('TABLE public."Mixed Case"')).rowCount).toBe(2)
    expect((await database.query('EXPLAIN SELECT * FROM shop.orders')).rowCount).toBeGreaterThan(0)
  })

  it('refuses the published exploit before anything reaches the database', async () => {
    const error = await rejection(database.query('SELECT 1; COMMIT; DROP TABLE shop.orders'))
    expect(error).toBeInstanceOf(SqlRefusedError)
    expect(classifyPgError(error)).toMatchObject({ kind: 'invalid_argument', reason: 'multiple_statements' })
    expect((await database.query('SELECT count(*) FROM shop.orders')).rows).toEqual([['8']])
  })

  it('refuses writes with permission_denied', async () => {
    const error = await rejection(database.query('DELETE FROM shop.orders'))
    expect(classifyPgError(error)).toMatchObject({ kind: 'permission_denied', reason: 'not_read_only' })
  })

  it('classifies errors from the server', async () => {
    const missingTable = classifyPgError(await rejection(database.query('SELECT * FROM shop.nope')))
    expect(missingTable).toMatchObject({ kind: 'not_found', reason: 'undefined_table', sqlstate: '42P01' })
    expect(missingTable.position).toBe(15)
    expect(classifyPgError(await rejection(database.query('SELECT nope FROM shop.orders')))).toMatchObject({
      kind: 'not_found',
      reason: 'undefined_column',
    })
    expect(classifyPgError(await rejection(database.query('SELECT 1 / 0')))).toMatchObject({
      kind: 'invalid_argument',
      reason: 'data_exception',
    })
    expect(classifyPgError(await rejection(database.query('SELECT $1::int')))).toMatchObject({
      kind: 'invalid_argument',
      reason: 'undefined_parameter',
    })
  })
})

describe('Database#readQuery: the database enforces read-only even without the parser gate', () => {
  const database = open({ connectionString: shared.superuserUrl, poolSize: 1 })

  it.each([
    ['CREATE TABLE', 'CREATE TABLE public.evil (id int)'],
    ['INSERT', "INSERT INTO shop.customers (email, full_name) VALUES ('x@example.com', 'X')"],
    ['UPDATE', 'UPDATE shop.products SET price = 0'],
    ['DELETE', 'DELETE FROM shop.order_items'],
    ['DROP', 'DROP TABLE shop.order_items'],
    ['nextval', "SELECT nextval('shop.invoice_number_seq')"],
    ['data-modifying CTE', 'WITH x AS (DELETE FROM shop.orders RETURNING 1) SELECT count(*) FROM x'],
  ])('%s fails with 25006 read_only_sql_transaction', async (_label, sql) => {
    const error = await rejection(database.readQuery(sql))
    expect((error as { code?: string }).code).toBe('25006')
    expect(classifyPgError(error)).toMatchObject({
      kind: 'permission_denied',
      reason: 'read_only_transaction',
    })
  })

  it('refuses several statements in one call (extended query protocol)', async () => {
    const error = await rejection(database.readQuery('SELECT 1; COMMIT; DROP TABLE shop.orders'))
    expect((error as { code?: string }).code).toBe('42601')
    expect((await database.readQuery('SELECT count(*) FROM shop.orders')).rows).toEqual([['8']])
  })

  it('starts every connection with read-only defaults and the application name', async () => {
    const { rows } = await database.readQuery(
      `SELECT current_setting('default_transaction_read_only'), current_setting('transaction_read_only'),
              current_setting('application_name'), current_setting('statement_timeout'),
              current_setting('transaction_isolation')`,
      [],
      { timeoutMs: 1_500 },
    )
    expect(rows).toEqual([['on', 'on', 'keel-mcp-postgres', '1500ms', 'repeatable read']])
  })

  it('always rolls back: a session setting changed inside a call is gone in the next call', async () => {
    await database.readQuery("SELECT set_config('search_path', 'analytics', false)")
    await database.readQuery("SELECT set_config('default_transaction_read_only', 'off', false)")
    const { rows } = await database.readQuery(
      "SELECT current_setting('search_path'), current_setting('default_transaction_read_only')",
    )
    expect(rows).toEqual([['"$user", public', 'on']])
  })
})

describe('row cap', () => {
  const database = open()

  it('fetches only maxRows + 1 rows from a million-row table and flags truncation', async () => {
    const before = process.memoryUsage().heapUsed
    const result = await database.query('SELECT * FROM bulk.measurements', [], { maxRows: 100 })
    expect(result.rowCount).toBe(100)
    expect(result.rows).toHaveLength(100)
    expect(result.truncated).toBe(true)
    // The whole table would be ~100 MB in JS objects.
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(30 * 1024 * 1024)
  })

  it('is not truncated when the result has exactly maxRows rows', async () => {
    const exact = await database.query('SELECT g FROM generate_series(1, 5) AS g', [], { maxRows: 5 })
    expect(exact).toMatchObject({ rowCount: 5, truncated: false })
    const over = await database.query('SELECT g FROM generate_series(1, 6) AS g', [], { maxRows: 5 })
    expect(over).toMatchObject({ rowCount: 5, truncated: true })
  })

  it('uses the configured default row cap', async () => {
    const capped = open({ limits: { maxRows: 3 } })
    expect(await capped.query('SELECT * FROM shop.customers')).toMatchObject({ rowCount: 3, truncated: true })
  })
})

describe('timeouts and cancellation', () => {
  it('cancels a statement at its timeout, and the same connection works for the next call', async () => {
    const database = open({ poolSize: 1, applicationName: 'keel-test-timeout' })
    const { rows: before } = await database.readQuery('SELECT pg_backend_pid()')
    const error = await rejection(database.readQuery('SELECT pg_sleep(30)', [], { timeoutMs: 300 }))
    // The server's statement_timeout fired (not the client's backstop, not the 30 s sleep's end).
    expect(classifyPgError(error)).toMatchObject({ kind: 'timeout', reason: 'statement_timeout' })
    const { rows: after } = await database.readQuery('SELECT pg_backend_pid()')
    expect(after).toEqual(before)
  })

  it('bounds a heavy query the parser gate accepts', async () => {
    const database = open()
    const error = await rejection(
      database.query('SELECT count(*) FROM bulk.measurements a CROSS JOIN bulk.measurements b', [], {
        timeoutMs: 300,
      }),
    )
    expect(classifyPgError(error).kind).toBe('timeout')
  })

  it('cancels the backend when the signal aborts mid-query, then serves the next call', async () => {
    const applicationName = 'keel-test-abort'
    const database = open({ poolSize: 2, applicationName })
    const controller = new AbortController()
    const running = database.readQuery('SELECT pg_sleep(60)', [], { signal: controller.signal })
    const [backend] = await waitFor(async () => {
      const rows = await activeBackends(applicationName)
      return rows.some((row) => row.query.includes('pg_sleep(60)')) ? rows : undefined
    })
    controller.abort(new Error('user pressed stop'))
    const error = await rejection(running)
    expect(error).toBeInstanceOf(QueryCancelledError)
    expect(classifyPgError(error)).toMatchObject({ kind: 'cancelled' })
    // The statement is gone from the server, not just abandoned by the client.
    await waitFor(async () => {
      const rows = await activeBackends(applicationName)
      return rows.some((row) => row.pid === backend?.pid && row.query.includes('pg_sleep')) ? undefined : true
    }, 5_000)
    expect((await database.readQuery('SELECT 1')).rows).toEqual([[1]])
  })

  it('cancels even when every pool connection is busy (protocol-level cancel)', async () => {
    const applicationName = 'keel-test-abort-full-pool'
    const database = open({ poolSize: 1, applicationName })
    const controller = new AbortController()
    const running = database.readQuery('SELECT pg_sleep(60)', [], { signal: controller.signal })
    await waitFor(async () => ((await activeBackends(applicationName)).length > 0 ? true : undefined))
    controller.abort()
    expect(await rejection(running)).toBeInstanceOf(QueryCancelledError)
    await waitFor(
      async () => ((await activeBackends(applicationName)).length === 0 ? true : undefined),
      5_000,
    )
    expect((await database.readQuery('SELECT 2')).rows).toEqual([[2]])
  })

  it('rejects at once when the signal is already aborted', async () => {
    const database = open()
    const error = await rejection(database.query('SELECT 1', [], { signal: AbortSignal.abort() }))
    expect(error).toBeInstanceOf(QueryCancelledError)
  })

  it('serves many concurrent calls through a small pool', async () => {
    const database = open({ poolSize: 2 })
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, index) => database.query('SELECT $1::int AS n', [index])),
    )
    expect(results.map((result) => result.rows[0]?.[0])).toEqual(
      Array.from({ length: 12 }, (_, index) => index),
    )
  })
})

describe('Database#explain', () => {
  const database = open()

  it('returns the JSON plan without running the query', async () => {
    const { plan, analyzed } = await database.explain('SELECT * FROM shop.orders WHERE customer_id = 1')
    expect(analyzed).toBe(false)
    expect(plan).toHaveProperty('Plan')
    expect(plan).not.toHaveProperty('Execution Time')
  })

  it('runs the query with analyze and reports execution time', async () => {
    const { plan, analyzed } = await database.explain('SELECT count(*) FROM shop.order_items', {
      analyze: true,
    })
    expect(analyzed).toBe(true)
    expect(plan).toHaveProperty('Execution Time')
    expect((plan.Plan as Record<string, unknown>)['Actual Rows']).toBe(1)
  })

  it('accepts a trailing semicolon and a trailing comment', async () => {
    const { plan } = await database.explain('SELECT * FROM shop.orders; -- the orders')
    expect(plan).toHaveProperty('Plan')
  })

  it.each([
    ['a DELETE', 'DELETE FROM shop.orders'],
    ['a data-modifying CTE', 'WITH x AS (DELETE FROM shop.orders RETURNING 1) SELECT * FROM x'],
    ['an explicit EXPLAIN', 'EXPLAIN SELECT 1'],
    ['SHOW', 'SHOW work_mem'],
    ['two statements', 'SELECT 1; SELECT 2'],
  ])('refuses %s, with or without analyze', async (_label, sql) => {
    expect(await rejection(database.explain(sql, { analyze: true }))).toBeInstanceOf(SqlRefusedError)
    expect(await rejection(database.explain(sql))).toBeInstanceOf(SqlRefusedError)
  })
})

describe('Database#health', () => {
  it('reports the database, the user and a read-only session', async () => {
    const health = await open().health()
    expect(health).toMatchObject({ user: shared.appRole, readOnly: true, inRecovery: false })
    expect(health.serverVersionNum).toBeGreaterThanOrEqual(130_000)
    expect(health.latencyMs).toBeGreaterThanOrEqual(0)
  })
})

describe('configuration', () => {
  it.each([['bad name;'], ['"quoted"'], ['a b'], [''], ['x'.repeat(64)]])('rejects the role %j', (role) => {
    expect(() => new Database({ role })).toThrow(DatabaseConfigError)
  })

  it.each<[string, DatabaseOptions]>([
    ['zero pool size', { poolSize: 0 }],
    ['negative idle connections', { idleConnections: -1 }],
    ['fractional idle connections', { idleConnections: 0.5 }],
    ['zero timeout (would disable statement_timeout)', { limits: { timeoutMs: 0 } }],
    ['fractional row cap', { limits: { maxRows: 1.5 } }],
    ['empty schema name', { schemas: [''] }],
  ])('rejects %s', (_label, options) => {
    expect(() => new Database(options)).toThrow(DatabaseConfigError)
  })

  it('rejects a per-call timeout of zero', async () => {
    const error = await rejection(open().query('SELECT 1', [], { timeoutMs: 0 }))
    expect(error).toBeInstanceOf(DatabaseConfigError)
  })

  it('fails calls after close()', async () => {
    const database = new Database({ connectionString: shared.url })
    await database.query('SELECT 1')
    await database.close()
    await expect(database.query('SELECT 1')).rejects.toThrow(/closed/)
    await database.close()
  })

  it('opens no connection until the first call', async () => {
    const applicationName = 'keel-test-lazy'
    const database = open({ applicationName })
    const count = async () =>
      (
        await adminQuery<{ count: string }>(
          shared.superuserUrl,
          'SELECT count(*) FROM pg_stat_activity WHERE application_name = $1',
          [applicationName],
        )
      )[0]?.count
    expect(await count()).toBe('0')
    await database.query('SELECT 1')
    expect(await count()).toBe('1')
  })
})

describe('idle connections', () => {
  /** This Database's connections (its calls' and its function policy's), by backend pid. */
  const backends = async (applicationName: string) =>
    (
      await adminQuery<{ pid: number }>(
        shared.superuserUrl,
        'SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid',
        [applicationName],
      )
    ).map((row) => row.pid)
  // Names a function and takes a while: judged by the function policy on its own connections, and
  // four at once hold four of the calls' connections.
  /** A call that keeps its connection busy for a while; its first column names the backend. */
  const busy = (index: number) =>
    `SELECT pg_catalog.pg_backend_pid() AS pid, count(*) + ${index} FROM generate_series(1, 400000)`
  /**
   * Four busy calls at once, each naming the backend that ran it: four different ones show the pool
   * opened four connections. (Counted afterwards in pg_stat_activity, the first to finish could
   * already be closed by an idle timeout of 150 ms on a loaded machine.)
   */
  const fourAtOnce = async (database: Database) => {
    const results = await Promise.all([0, 1, 2, 3].map((index) => database.query(busy(index))))
    return new Set(results.map((result) => result.rows[0]?.[0])).size
  }

  it('keeps one call connection and one of the policy open past the idle timeout, and the next call uses them', async () => {
    const applicationName = 'keel-test-keep-idle'
    const database = open({ applicationName, poolSize: 4, idleTimeoutMs: 150 })
    expect(await fourAtOnce(database)).toBe(4)
    const kept = await waitFor(async () => {
      const pids = await backends(applicationName)
      return pids.length === 2 ? pids : undefined
    })
    // Well past the idle timeout: still the same two.
    await new Promise((resolve) => setTimeout(resolve, 600))
    expect(await backends(applicationName)).toEqual(kept)
    // The next call, and a judged one, connect nowhere.
    const result = await database.query('SELECT pg_catalog.pg_backend_pid() AS pid')
    expect(kept).toContain(result.rows[0]?.[0])
    await database.query(busy(4))
    expect(await backends(applicationName)).toEqual(kept)
  })

  it('closes them all after the idle timeout when told to keep none', async () => {
    const applicationName = 'keel-test-keep-none'
    const database = open({ applicationName, poolSize: 4, idleTimeoutMs: 150, idleConnections: 0 })
    expect(await fourAtOnce(database)).toBe(4)
    await waitFor(async () => ((await backends(applicationName)).length === 0 ? true : undefined))
  })

  it('keeps no more than the pool may hold', async () => {
    const applicationName = 'keel-test-keep-capped'
    const database = open({ applicationName, poolSize: 2, idleTimeoutMs: 150, idleConnections: 5 })
    await Promise.all([0, 1, 2, 3].map((index) => database.query(busy(index))))
    // Two call connections (the pool's size) and one of the policy's.
    await waitFor(async () => ((await backends(applicationName)).length === 3 ? true : undefined))
    await new Promise((resolve) => setTimeout(resolve, 600))
    expect((await backends(applicationName)).length).toBe(3)
  })
})

describe('TLS', () => {
  it('maps sslmodes to node TLS options like libpq', () => {
    const ca = '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----'
    expect(tlsOptions({ mode: 'disable' })).toBe(false)
    expect(tlsOptions({ mode: 'require' })).toEqual({ rejectUnauthorized: false })
    const verifyCa = tlsOptions({ mode: 'verify-ca', ca })
    expect(verifyCa).toMatchObject({ rejectUnauthorized: true, ca })
    // verify-ca checks the chain, not the host name.
    if (verifyCa === false) throw new Error('expected TLS options for verify-ca')
    expect(verifyCa.checkServerIdentity).toBeTypeOf('function')
    expect(verifyCa.checkServerIdentity?.('db.example.com', {} as never)).toBeUndefined()
    expect(tlsOptions({ mode: 'verify-full', ca, cert: 'c', key: 'k' })).toEqual({
      rejectUnauthorized: true,
      ca,
      cert: 'c',
      key: 'k',
    })
  })

  it('fails as unavailable when TLS is required and the server does not offer it', async () => {
    const database = open({ ssl: { mode: 'require' } })
    const classified = classifyPgError(await rejection(database.query('SELECT 1')))
    expect(classified).toMatchObject({ kind: 'unavailable', reason: 'connection_failed' })
  })
})
