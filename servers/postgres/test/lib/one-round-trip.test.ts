import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Database } from '../../src/lib/database.js'
import { classifyPgError } from '../../src/lib/errors.js'
import { adminQuery, createScratchDatabase, sharedPostgres } from '../harness/index.js'
import { rejection } from './rejection.js'

/**
 * A call sends BEGIN READ ONLY, its SET LOCAL timeouts, the statement and the session reset as one
 * extended-protocol batch (src/lib/statement.ts). These tests pin what that batching must keep:
 * each call's settings are its own, an error anywhere in the batch is reported as the statement's
 * and still leaves a clean session, and values and row caps behave as with separate round trips.
 * One connection in the pool, so every call runs on the same backend as the one before.
 */
const shared = sharedPostgres()
let scratch: Awaited<ReturnType<typeof createScratchDatabase>>
let database: Database

beforeAll(async () => {
  scratch = await createScratchDatabase(shared.superuserUrl, shared.url)
  await adminQuery(
    scratch.superuserUrl,
    `CREATE FUNCTION public.keel_lock_then_fail() RETURNS int LANGUAGE plpgsql AS $$
       BEGIN
         PERFORM pg_advisory_lock(4401);
         RAISE EXCEPTION 'keel: failed after taking a lock' USING ERRCODE = 'P0001';
       END $$;
     CREATE FUNCTION public.keel_lock() RETURNS int LANGUAGE plpgsql AS $$
       BEGIN
         PERFORM pg_advisory_lock(4402);
         RETURN 1;
       END $$;`,
  )
  database = new Database({ connectionString: scratch.url, poolSize: 1 })
})

afterAll(async () => {
  await database?.close()
  await scratch?.drop()
})

async function one<T = unknown>(sql: string, options: { timeoutMs?: number } = {}): Promise<T> {
  const result = await database.readQuery(sql, [], options)
  return result.rows[0]?.[0] as T
}

async function advisoryLocksHeld(): Promise<number> {
  const rows = await adminQuery<{ count: number }>(
    scratch.superuserUrl,
    "SELECT count(*)::int AS count FROM pg_locks WHERE locktype = 'advisory'",
  )
  return rows[0]?.count ?? -1
}

describe('one round trip per call', () => {
  it("applies each call's timeouts to that call only, on the same connection", async () => {
    const pid = await one<number>('SELECT pg_backend_pid()')
    expect(await one('SELECT current_setting($$statement_timeout$$)', { timeoutMs: 1_234 })).toBe('1234ms')
    expect(await one('SELECT current_setting($$lock_timeout$$)', { timeoutMs: 1_000 })).toBe('1s')
    expect(await one('SELECT current_setting($$statement_timeout$$)')).toBe('30s')
    expect(await one('SELECT current_setting($$lock_timeout$$)')).toBe('5s')
    expect(await one<number>('SELECT pg_backend_pid()')).toBe(pid)
  })

  it('runs every statement in a read-only, repeatable-read transaction', async () => {
    expect(await one('SELECT current_setting($$transaction_read_only$$)')).toBe('on')
    expect(await one('SELECT current_setting($$transaction_isolation$$)')).toBe('repeatable read')
  })

  it('reports a failing statement with its own error, and the next call on the connection runs clean', async () => {
    const pid = await one<number>('SELECT pg_backend_pid()')
    const error = await rejection(database.readQuery('SELECT 1 / 0'))
    expect(classifyPgError(error)).toMatchObject({ sqlstate: '22012', reason: 'data_exception' })
    expect(await one<number>('SELECT pg_backend_pid()')).toBe(pid)
    expect(await one('SELECT current_setting($$transaction_read_only$$)')).toBe('on')
    expect(await one('SELECT 41 + 1')).toBe(42)
  })

  it('reports a syntax error at its position, and the connection stays usable', async () => {
    const error = await rejection(database.readQuery('SELECT 1 FROM'))
    expect(classifyPgError(error)).toMatchObject({ sqlstate: '42601', reason: 'syntax_error', position: 14 })
    expect(await one('SELECT 2')).toBe(2)
  })

  it('resets the session after a statement that failed once it had left a trace (the reset in the batch is skipped)', async () => {
    const pid = await one<number>('SELECT pg_backend_pid()')
    const error = await rejection(database.readQuery('SELECT public.keel_lock_then_fail()'))
    expect(classifyPgError(error)).toMatchObject({ sqlstate: 'P0001' })
    expect(await advisoryLocksHeld()).toBe(0)
    expect(await one<number>('SELECT pg_backend_pid()')).toBe(pid)
  })

  it('resets the session in the same batch after a statement that succeeded and left a trace', async () => {
    const pid = await one<number>('SELECT pg_backend_pid()')
    expect(await one('SELECT public.keel_lock()')).toBe(1)
    expect(await advisoryLocksHeld()).toBe(0)
    expect(await one<number>('SELECT pg_backend_pid()')).toBe(pid)
  })

  it('stops at max rows with the rest left in the portal, and the connection is reused cleanly', async () => {
    const pid = await one<number>('SELECT pg_backend_pid()')
    const result = await database.readQuery('SELECT generate_series(1, 1000) AS n', [], { maxRows: 3 })
    expect(result).toMatchObject({ rows: [[1], [2], [3]], rowCount: 3, truncated: true })
    const open = await database.readQuery(
      'SELECT count(*)::int FROM pg_cursors WHERE statement <> current_query()',
    )
    expect(open.rows).toEqual([[0]])
    expect(await one<number>('SELECT pg_backend_pid()')).toBe(pid)
  })

  it('converts parameters as pg does (strings, numbers, booleans, null, bytes, arrays, objects as JSON)', async () => {
    const result = await database.readQuery(
      'SELECT $1::text, $2::int, $3::boolean, $4::text IS NULL, $5::bytea, $6::int[], $7::jsonb',
      ['x', 7, true, null, Buffer.from('ab'), [1, 2], { a: 1 }],
    )
    expect(result.rows).toEqual([['x', 7, true, true, Buffer.from('ab'), [1, 2], { a: 1 }]])
  })

  it('names the types of a result on first sight of them, in a transaction of their own', async () => {
    const result = await database.readQuery("SELECT '1 day'::interval AS span, '{}'::jsonb AS doc")
    expect(result.fields.map((field) => field.type)).toEqual(['interval', 'jsonb'])
    expect(await one('SELECT current_setting($$transaction_read_only$$)')).toBe('on')
  })
})
