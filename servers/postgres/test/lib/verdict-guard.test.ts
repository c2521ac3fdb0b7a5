import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { Database } from '../../src/lib/database.js'
import { SqlRefusedError } from '../../src/lib/errors.js'
import { adminQuery, type PostgresInstance, startPostgres } from '../harness/index.js'

/**
 * A call whose references the function policy allowed before skips the policy and opens its
 * transaction with the verdict's guard, which fails unless no transaction has completed in the
 * cluster since the verdict was made (database.ts, `#execute`; function-policy.ts, `KeptVerdicts`).
 *
 * A cluster of its own, with autovacuum off: any transaction completed anywhere in the cluster
 * (another test file's, an autovacuum's ANALYZE) changes the snapshot, and these tests count when
 * the policy is asked.
 */
let cluster: PostgresInstance
const opened: Database[] = []

beforeAll(async () => {
  cluster = await startPostgres({ restartable: true })
  await adminQuery(cluster.superuserUrl, 'ALTER SYSTEM SET autovacuum = off')
  await adminQuery(cluster.superuserUrl, 'SELECT pg_reload_conf()')
  await adminQuery(
    cluster.superuserUrl,
    `CREATE TABLE public.keel_guard_rows (id int);
     INSERT INTO public.keel_guard_rows SELECT generate_series(1, 10);
     CREATE TABLE public.keel_guard_writes (id int);
     CREATE FUNCTION public.keel_guard_fn(k int) RETURNS int LANGUAGE sql STABLE AS 'SELECT k';
     CREATE FUNCTION public.keel_guard_volatile(k int) RETURNS int LANGUAGE sql VOLATILE AS 'SELECT k';
     CREATE VIEW public.keel_guard_view AS SELECT id FROM public.keel_guard_rows;
     GRANT SELECT ON ALL TABLES IN SCHEMA public TO PUBLIC`,
  )
})

afterEach(() => {
  vi.restoreAllMocks()
})

afterAll(async () => {
  await Promise.all(opened.splice(0).map((database) => database.close()))
  await cluster?.stop()
})

/**
 * Counts, from here on, what the Database's connections are sent: the policy's first query (on
 * its own connections, a prepared statement), and the ROLLBACK that follows a guard that failed.
 * Observed through pg's Client, which still sends everything.
 */
function counting() {
  const counts = { policy: 0, staleGuards: 0 }
  const query = pg.Client.prototype.query
  vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    const [first] = args
    if (typeof first === 'object' && first !== null) {
      const { name, text } = first as { name?: unknown; text?: unknown }
      if (typeof name === 'string' && name.startsWith('keel_policy_') && String(text).includes('WITH now AS'))
        counts.policy++
    } else if (first === 'ROLLBACK') counts.staleGuards++
    return (query as (...rest: unknown[]) => unknown).apply(this, args) as never
  })
  return counts
}

const sql = 'SELECT public.keel_guard_fn(id) + 1 AS n FROM public.keel_guard_rows WHERE id > 0'

/** A Database that has allowed `statement` often enough, on a quiet cluster, to rely on its guard. */
async function trusting(statement = sql): Promise<Database> {
  const database = new Database({ connectionString: cluster.url, poolSize: 2 })
  opened.push(database)
  for (let call = 0; call < 8; call++) await database.query(statement)
  return database
}

describe('the guard of a kept verdict', () => {
  it('skips the policy while nothing completes, for any statement that names the same objects', async () => {
    const database = await trusting()
    const counts = counting()
    for (let call = 0; call < 5; call++) {
      const result = await database.query(sql)
      expect(result.rows.map((row) => Number(row[0]))).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    }
    // Another text naming the same table, function and operators (`+`, `>`): the same verdict.
    const other = await database.query(
      'SELECT public.keel_guard_fn(id) + 1 AS n FROM public.keel_guard_rows WHERE id > 8',
    )
    expect(other.rows.map((row) => Number(row[0]))).toEqual([10, 11])
    expect(counts).toEqual({ policy: 0, staleGuards: 0 })
    // An operator it did not name (`*`): judged.
    await database.query('SELECT public.keel_guard_fn(id) * 2 FROM public.keel_guard_rows')
    expect(counts).toEqual({ policy: 1, staleGuards: 0 })
  })

  it.each([
    {
      change: 'its function made volatile',
      sql,
      alter: 'ALTER FUNCTION public.keel_guard_fn(int) VOLATILE',
      restore: 'ALTER FUNCTION public.keel_guard_fn(int) STABLE',
      refused: 'keel_guard_fn',
    },
    {
      change: 'EXECUTE revoked from PUBLIC',
      sql,
      alter: 'REVOKE EXECUTE ON FUNCTION public.keel_guard_fn(int) FROM PUBLIC',
      restore: 'GRANT EXECUTE ON FUNCTION public.keel_guard_fn(int) TO PUBLIC',
      refused: 'keel_guard_fn',
    },
    {
      change: 'its view calls a volatile function',
      sql: 'SELECT count(*) FROM public.keel_guard_view',
      alter:
        'CREATE OR REPLACE VIEW public.keel_guard_view AS SELECT id, public.keel_guard_volatile(id) AS v FROM public.keel_guard_rows',
      restore:
        'CREATE OR REPLACE VIEW public.keel_guard_view AS SELECT id, 0 AS v FROM public.keel_guard_rows',
      refused: 'keel_guard_volatile',
    },
  ])('fails once $change, and the policy refuses the statement', async (attack) => {
    const database = await trusting(attack.sql)
    const counts = counting()
    await database.query(attack.sql)
    expect(counts.policy).toBe(0)
    await adminQuery(cluster.superuserUrl, attack.alter)
    try {
      const refused = await database.query(attack.sql).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(SqlRefusedError)
      expect((refused as Error).message).toContain(attack.refused)
      expect(counts).toEqual({ policy: 1, staleGuards: 1 })
      // Refusals are not kept, and a stale verdict is not relied on again.
      await expect(database.query(attack.sql)).rejects.toBeInstanceOf(SqlRefusedError)
      expect(counts).toEqual({ policy: 2, staleGuards: 1 })
    } finally {
      await adminQuery(cluster.superuserUrl, attack.restore)
    }
  })

  it('fails for every call in flight once a function it allowed is made volatile', async () => {
    const database = await trusting()
    const counts = counting()
    const inFlight = (statement: string) =>
      Promise.allSettled(Array.from({ length: 8 }, () => database.query(statement)))
    // 8 at a time on the pool's connections, each guarded: no policy query.
    for (const result of await inFlight(sql)) expect(result.status).toBe('fulfilled')
    expect(counts.policy).toBe(0)
    await adminQuery(cluster.superuserUrl, 'ALTER FUNCTION public.keel_guard_fn(int) VOLATILE')
    try {
      const results = await inFlight(sql)
      for (const result of results) {
        expect(result.status).toBe('rejected')
        if (result.status === 'rejected') expect(result.reason).toBeInstanceOf(SqlRefusedError)
      }
      // Each call that tried the guard found it stale, and every call was judged.
      expect(counts.staleGuards).toBeGreaterThan(0)
      expect(counts.staleGuards).toBeLessThanOrEqual(8)
      expect(counts.policy).toBe(8)
    } finally {
      await adminQuery(cluster.superuserUrl, 'ALTER FUNCTION public.keel_guard_fn(int) STABLE')
    }
  })

  it('is tried no more where another session commits between calls, and again once it stops', async () => {
    const database = await trusting()
    const writer = new pg.Client({ connectionString: cluster.superuserUrl })
    await writer.connect()
    try {
      const counts = counting()
      for (let call = 0; call < 30; call++) {
        await writer.query('INSERT INTO public.keel_guard_writes VALUES (1)')
        const result = await database.query(sql)
        expect(result.rowCount).toBe(10)
      }
      // Every call judged by the policy; the guard failed a few times before it was given up.
      expect(counts.policy).toBe(30)
      expect(counts.staleGuards).toBeGreaterThan(0)
      expect(counts.staleGuards).toBeLessThanOrEqual(6)
      // Quiet again: judged until kept verdicts have been current a few times, then guarded.
      for (let call = 0; call < 12; call++) await database.query(sql)
      const before = counts.policy
      for (let call = 0; call < 3; call++) await database.query(sql)
      expect(counts.policy).toBe(before)
    } finally {
      await writer.end()
    }
  })

  it('is not relied on across a restart of the server: its start time is part of the snapshot', async () => {
    const database = await trusting()
    const counts = counting()
    await database.query(sql)
    expect(counts.policy).toBe(0)
    await cluster.restart()
    // The pool's connections died with the server; the call retries on a fresh one, whose
    // snapshot is the restarted server's.
    const result = await database.query(sql)
    expect(result.rowCount).toBe(10)
    expect(counts.staleGuards).toBe(1)
  })
})
