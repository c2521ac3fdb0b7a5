import { existsSync } from 'node:fs'
import type { TestClient } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  adminQuery,
  createScratchDatabase,
  type DatabaseChecksum,
  databaseChecksum,
  seedSampleSchema,
  sharedPostgres,
} from './harness/index.js'
import { closeAll, connect, errorKind, textOf } from './helpers.js'

/**
 * The attack suite, through the MCP tools as a model would send it. Every attempt must be refused
 * (or, for the few that run, be harmless), and the database must be byte-for-byte the same
 * afterwards: catalog, roles, settings files, large objects, sequences and every row. It runs
 * twice: as a non-superuser and as a superuser, the worst case (COPY … PROGRAM, lo_import,
 * pg_read_file and ALTER SYSTEM would all work for a superuser inside a read-only transaction).
 */
const shared = sharedPostgres()

/** The published exploit against @modelcontextprotocol/server-postgres 0.6.2 and its variants. */
const referenceExploits = [
  'SELECT 1; COMMIT; DROP TABLE shop.orders',
  'SELECT 1; COMMIT; DROP TABLE shop.orders;',
  'COMMIT; DROP TABLE shop.orders',
  'ROLLBACK; DELETE FROM shop.orders',
  'END; DROP TABLE shop.orders',
  'SELECT 1 /* ; */; COMMIT; DROP TABLE shop.orders',
  'sElEcT 1;\nCoMmIt;\nDrOp TaBlE shop.orders',
]

const attacks: Record<string, string[]> = {
  'transaction control': [
    'BEGIN',
    'COMMIT',
    'ABORT',
    'SAVEPOINT s',
    'RELEASE SAVEPOINT s',
    "PREPARE TRANSACTION 'keel'",
    "COMMIT PREPARED 'keel'",
    'SET TRANSACTION READ WRITE',
    'START TRANSACTION READ WRITE',
  ],
  'session state and roles': [
    'SET default_transaction_read_only = off',
    'SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE',
    'RESET ALL',
    'SET ROLE postgres',
    'RESET ROLE',
    'SET SESSION AUTHORIZATION postgres',
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "SELECT set_config('role', 'postgres', false)",
    'DISCARD ALL',
  ],
  'server files, programs and other connections': [
    "COPY (SELECT 1) TO PROGRAM 'touch /tmp/keel-pwned'",
    "COPY shop.customers TO '/tmp/keel-pwned.csv'",
    "COPY shop.customers FROM '/etc/passwd'",
    "SELECT pg_read_file('/etc/passwd')",
    'SELECT "pg_catalog"."PG_READ_FILE"(\'PG_VERSION\')',
    "SELECT pg_read_binary_file('PG_VERSION')",
    "SELECT * FROM pg_ls_dir('.')",
    "SELECT pg_stat_file('PG_VERSION')",
    "SELECT lo_import('/etc/passwd')",
    "SELECT lo_export(1, '/tmp/keel-pwned')",
    'SELECT (SELECT lo_unlink(1))',
    "SELECT dblink_exec('dbname=postgres', 'DROP TABLE x')",
    "SELECT query_to_xml('DELETE FROM shop.orders RETURNING 1', true, false, '')",
    "DO $$ BEGIN EXECUTE 'DROP TABLE shop.orders'; END $$",
    'CALL public.keel_commit_and_drop()',
    "LOAD 'plpgsql'",
  ],
  'locks, notifications and maintenance': [
    'LOCK TABLE shop.orders IN ACCESS EXCLUSIVE MODE',
    'SELECT pg_advisory_lock(1)',
    'SELECT 1 WHERE EXISTS (SELECT pg_try_advisory_lock(2))',
    'LISTEN keel',
    "NOTIFY keel, 'x'",
    "SELECT pg_notify('keel', 'x')",
    'UNLISTEN *',
    'VACUUM shop.orders',
    'ANALYZE shop.orders',
    'CLUSTER shop.orders USING orders_pkey',
    'REINDEX TABLE shop.orders',
    'CHECKPOINT',
    'SELECT pg_terminate_backend(pg_backend_pid())',
    'SELECT pg_cancel_backend(1)',
    'SELECT pg_reload_conf()',
    'SELECT pg_sleep(1)',
  ],
  'DDL, DML and writes hidden in queries': [
    'DROP TABLE shop.orders',
    'TRUNCATE shop.orders CASCADE',
    'CREATE TABLE public.evil (id int)',
    'ALTER TABLE shop.orders ADD COLUMN evil int',
    "COMMENT ON TABLE shop.orders IS 'pwned'",
    'GRANT ALL ON shop.orders TO PUBLIC',
    "CREATE ROLE keel_evil SUPERUSER LOGIN PASSWORD 'x'",
    "ALTER ROLE postgres PASSWORD 'pwned'",
    "ALTER SYSTEM SET statement_timeout = '1h'",
    'CREATE EXTENSION IF NOT EXISTS dblink',
    "INSERT INTO shop.customers (email, full_name) VALUES ('evil@example.com', 'Evil')",
    'UPDATE shop.products SET price = 0',
    'DELETE FROM shop.order_items',
    'MERGE INTO shop.products p USING (VALUES (1)) AS v (id) ON p.id = v.id WHEN MATCHED THEN DELETE',
    'WITH gone AS (DELETE FROM shop.order_items RETURNING *) SELECT count(*) FROM gone',
    'WITH cheap AS (UPDATE shop.products SET price = 0 RETURNING 1) SELECT 1',
    'SELECT * INTO public.copy_of_customers FROM shop.customers',
    'CREATE TABLE public.copy_of_customers AS SELECT * FROM shop.customers',
    'REFRESH MATERIALIZED VIEW analytics.daily_revenue',
    "SELECT nextval('shop.invoice_number_seq')",
    "SELECT setval('shop.invoice_number_seq', 1)",
    'PREPARE wipe AS DELETE FROM shop.orders',
    'EXECUTE wipe',
    'DECLARE c CURSOR WITH HOLD FOR SELECT 1',
    '/* a comment first */ delete from shop.orders',
  ],
  'row locks': [
    'SELECT * FROM shop.orders FOR UPDATE',
    'SELECT * FROM shop.orders FOR SHARE',
    'SELECT * FROM shop.orders FOR NO KEY UPDATE SKIP LOCKED',
    'SELECT * FROM (SELECT * FROM shop.orders FOR KEY SHARE) AS o',
  ],
  'EXPLAIN ANALYZE of writes': [
    'EXPLAIN ANALYZE DELETE FROM shop.orders',
    "EXPLAIN (ANALYZE) INSERT INTO shop.customers (email, full_name) VALUES ('e', 'E')",
    'EXPLAIN ANALYZE WITH gone AS (DELETE FROM shop.orders RETURNING 1) SELECT * FROM gone',
    'EXPLAIN (ANALYZE, FORMAT JSON) UPDATE shop.products SET price = 0',
  ],
  // The gate does not know user-defined functions: the read-only transaction stops the write.
  'writes inside user-defined functions': [
    'SELECT public.keel_wipe_items()',
    'SELECT count(*) FROM public.keel_wipe_items()',
  ],
}

/** Sent to explain_query (the tool adds EXPLAIN itself), with and without analyze. */
const explainAttacks = [
  'DELETE FROM shop.orders',
  'SELECT 1; COMMIT; DROP TABLE shop.orders',
  'WITH gone AS (DELETE FROM shop.order_items RETURNING *) SELECT count(*) FROM gone',
  "SELECT pg_read_file('/etc/passwd')",
  'SELECT 1) ; DROP TABLE shop.orders; --',
]

let scratch: Awaited<ReturnType<typeof createScratchDatabase>>
let before: DatabaseChecksum

beforeAll(async () => {
  scratch = await createScratchDatabase(shared.superuserUrl, shared.url)
  await seedSampleSchema(scratch.superuserUrl, { readerRole: shared.readerRole })
  // Objects a model could reach but the parser gate cannot see into.
  await adminQuery(
    scratch.superuserUrl,
    `CREATE FUNCTION public.keel_wipe_items() RETURNS bigint LANGUAGE plpgsql AS $$
       BEGIN DELETE FROM shop.order_items; RETURN 1; END $$;
     CREATE PROCEDURE public.keel_commit_and_drop() LANGUAGE plpgsql AS $$
       BEGIN COMMIT; DROP TABLE shop.orders; END $$;`,
  )
  before = await databaseChecksum(scratch.superuserUrl)
})

afterAll(async () => {
  await closeAll()
  await scratch?.drop()
})

describe.each([
  ['a superuser', () => scratch.superuserUrl],
  ['a non-superuser that can read everything', () => scratch.url],
])('attacks through the MCP tools, connected as %s', (_who, url) => {
  let client: TestClient
  beforeAll(async () => {
    client = (await connect(url(), { argv: ['--pool-size', '2'] })).client
  })

  it.each(referenceExploits)('refuses the reference exploit %j', async (sql) => {
    const result = await client.callTool({ name: 'query', arguments: { sql } })
    expect(result.isError).toBe(true)
    expect(['invalid_argument', 'permission_denied']).toContain(errorKind(result))
  })

  for (const [group, statements] of Object.entries(attacks)) {
    it.each(statements)(`refuses ${group}: %j`, async (sql) => {
      const result = await client.callTool({ name: 'query', arguments: { sql } })
      expect(result.isError, textOf(result)).toBe(true)
      expect(errorKind(result)).toBe('permission_denied')
    })
  }

  it.each(explainAttacks.flatMap((sql) => [false, true].map((analyze) => [sql, analyze] as const)))(
    'explain_query refuses %j (analyze: %s)',
    async (sql, analyze) => {
      const result = await client.callTool({ name: 'explain_query', arguments: { sql, analyze } })
      expect(result.isError, textOf(result)).toBe(true)
      expect(['invalid_argument', 'permission_denied']).toContain(errorKind(result))
    },
  )

  it('refuses to explain or analyze a call of a volatile user-defined function (it could write)', async () => {
    const sql = 'SELECT public.keel_wipe_items()'
    for (const analyze of [false, true]) {
      const result = await client.callTool({ name: 'explain_query', arguments: { sql, analyze } })
      expect(errorKind(result)).toBe('permission_denied')
      expect(textOf(result)).toContain('public.keel_wipe_items() is not allowed: it is volatile')
    }
  })

  it('binds parameters as values: SQL in a parameter is data', async () => {
    const payload = "'; DROP TABLE shop.orders; --"
    const result = await client.callTool({
      name: 'query',
      arguments: {
        sql: 'SELECT $1::text AS value, count(*) FROM shop.orders WHERE note = $1',
        params: [payload],
      },
    })
    expect(result.structuredContent.rows).toEqual([[payload, '0']])
  })

  it('runs every statement in a read-only transaction', async () => {
    const result = await client.callTool({
      name: 'query',
      arguments: {
        sql: "SELECT current_setting('transaction_read_only'), current_setting('default_transaction_read_only')",
      },
    })
    expect(result.structuredContent.rows).toEqual([['on', 'on']])
  })

  it('still serves reads after every attack', async () => {
    const result = await client.callTool({
      name: 'query',
      arguments: { sql: 'SELECT count(*) FROM shop.orders' },
    })
    expect(result.structuredContent.rows).toEqual([['8']])
  })

  it('leaves the database byte-for-byte unchanged', async () => {
    expect((await databaseChecksum(scratch.superuserUrl)).parts).toEqual(before.parts)
    expect(existsSync('/tmp/keel-pwned')).toBe(false)
    expect(existsSync('/tmp/keel-pwned.csv')).toBe(false)
  })
})
