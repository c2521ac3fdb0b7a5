import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Database } from '../../src/lib/database.js'
import { SqlRefusedError } from '../../src/lib/errors.js'
import {
  createScratchDatabase,
  type DatabaseChecksum,
  databaseChecksum,
  seedSampleSchema,
  sharedPostgres,
} from '../harness/index.js'

/**
 * The worst case: the server is connected as a superuser. Whatever is thrown at it, through the
 * gated entry point or straight at the executor, the database must stay byte-for-byte the same.
 */
const shared = sharedPostgres()
let scratch: Awaited<ReturnType<typeof createScratchDatabase>>
let database: Database
let before: DatabaseChecksum

beforeAll(async () => {
  scratch = await createScratchDatabase(shared.superuserUrl, shared.url)
  await seedSampleSchema(scratch.superuserUrl, { readerRole: shared.readerRole })
  database = new Database({ connectionString: scratch.superuserUrl, poolSize: 2 })
  before = await databaseChecksum(scratch.superuserUrl)
})

afterAll(async () => {
  await database?.close()
  await scratch?.drop()
})

/** Refused by the parser gate: some of these would succeed inside a read-only transaction. */
const gated = [
  'SELECT 1; COMMIT; DROP TABLE shop.orders',
  'COMMIT; DROP TABLE shop.orders',
  'ROLLBACK; DELETE FROM shop.orders',
  "COPY (SELECT 1) TO PROGRAM 'touch /tmp/keel-pwned'",
  "COPY shop.customers TO '/tmp/keel-pwned.csv'",
  "SELECT lo_import('/etc/passwd')",
  "SELECT pg_read_file('PG_VERSION')",
  'SELECT pg_advisory_lock(42)',
  "SELECT setval('shop.invoice_number_seq', 1)",
  "SELECT nextval('shop.invoice_number_seq')",
  "SELECT set_config('default_transaction_read_only', 'off', false)",
  "SELECT query_to_xml('DELETE FROM shop.orders RETURNING 1', true, false, '')",
  'WITH gone AS (DELETE FROM shop.order_items RETURNING *) SELECT count(*) FROM gone',
  'SELECT * INTO public.copy_of_customers FROM shop.customers',
  'SELECT * FROM shop.orders FOR UPDATE',
  'EXPLAIN ANALYZE DELETE FROM shop.orders',
  "DO $$ BEGIN EXECUTE 'DROP TABLE shop.orders'; END $$",
  'SET SESSION AUTHORIZATION DEFAULT',
  "ALTER SYSTEM SET statement_timeout = '1h'",
  'CREATE EXTENSION IF NOT EXISTS dblink',
  "PREPARE TRANSACTION 'keel'",
  'VACUUM FULL shop.orders',
  'TRUNCATE shop.orders CASCADE',
  "CREATE ROLE keel_evil SUPERUSER LOGIN PASSWORD 'x'",
]

/** Sent straight to the executor (no gate): the read-only transaction or the protocol stops them. */
const executorOnly = [
  'SELECT 1; COMMIT; DROP TABLE shop.orders',
  'CREATE TABLE public.evil (id int)',
  'DROP TABLE shop.order_items',
  "INSERT INTO shop.customers (email, full_name) VALUES ('evil@example.com', 'Evil')",
  'UPDATE shop.products SET price = 0',
  'DELETE FROM shop.order_items',
  'TRUNCATE shop.orders CASCADE',
  "SELECT nextval('shop.invoice_number_seq')",
  "SELECT setval('shop.invoice_number_seq', 1)",
  'WITH gone AS (DELETE FROM shop.order_items RETURNING *) SELECT count(*) FROM gone',
  'SELECT * INTO public.copy_of_customers FROM shop.customers',
  'SELECT * FROM shop.orders FOR UPDATE',
  "CREATE ROLE keel_evil SUPERUSER LOGIN PASSWORD 'x'",
  `ALTER ROLE ${shared.readerRole} SET search_path = 'evil'`,
  "COMMENT ON TABLE shop.orders IS 'pwned'",
  'REFRESH MATERIALIZED VIEW analytics.daily_revenue',
]

/**
 * Accepted by (some versions of) PostgreSQL inside a read-only transaction: the rollback undoes
 * them, but within the statement they act (read a server file, switch role, assign an xid).
 * PostgreSQL 15 runs lo_import() read-only; 18 refuses it. This is why the gate exists.
 */
const rolledBackOnly = [
  "SELECT lo_import('/etc/passwd')",
  "SELECT lo_from_bytea(0, 'x')",
  `SELECT pg_catalog.set_config('role', '${shared.readerRole}', false)`,
  'SELECT txid_current()',
]

describe('read-only guarantee (connected as superuser)', () => {
  it.each(gated)('the gate refuses %s', async (sql) => {
    await expect(database.query(sql)).rejects.toBeInstanceOf(SqlRefusedError)
  })

  it.each(executorOnly)('the database refuses %s without the gate', async (sql) => {
    await expect(database.readQuery(sql)).rejects.toMatchObject({
      code: expect.stringMatching(/^(25006|42601|0A000)$/),
    })
  })

  it.each(rolledBackOnly)(
    'without the gate %s runs (rolled back) or fails; the gate refuses it',
    async (sql) => {
      const outcome = await database.readQuery(sql).then(
        (result) => `rows:${result.rowCount}`,
        (error: { code?: string }) => `error:${error.code}`,
      )
      expect(['rows:1', 'error:25006']).toContain(outcome)
      await expect(database.query(sql)).rejects.toBeInstanceOf(SqlRefusedError)
    },
  )

  it('leaves the database byte-for-byte unchanged', async () => {
    // Plus a batch of legitimate reads, explains and catalog calls in between.
    await database.query('SELECT * FROM shop.orders o JOIN shop.order_items i ON i.order_id = o.id')
    await database.explain('SELECT count(*) FROM shop.orders', { analyze: true })
    await database.describeTable('shop', 'orders')
    await database.listTables()
    const after = await databaseChecksum(scratch.superuserUrl)
    expect(after.parts).toEqual(before.parts)
    expect(after.digest).toBe(before.digest)
  })
})
