import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Database } from '../../src/lib/database.js'
import { SqlRefusedError } from '../../src/lib/errors.js'
import { adminQuery, createScratchDatabase, sharedPostgres } from '../harness/index.js'
import { closeAll, connect } from '../helpers.js'

/**
 * No session-level effect of a call survives it, whatever the SQL went through. The statements run
 * through readQuery, the executor without the parser gate, and through volatile functions the gate
 * never sees into: the guarantee must come from the reset after the call, not from the gate.
 * One connection in the pool, so the next call runs on the same backend.
 *
 * A call that succeeded ends with the reset of what outlives a rollback and the ROLLBACK
 * (session.ts, callEndStatements): each effect below that a rollback does not undo is one that
 * piece of the reset exists for (advisory locks, prepared statements, hypopg), and each
 * statement that ends or changes the transaction is one the proof before the ROLLBACK must catch.
 */
const shared = sharedPostgres()
let scratch: Awaited<ReturnType<typeof createScratchDatabase>>
const opened: Database[] = []

beforeAll(async () => {
  if (!shared.extensions.includes('hypopg')) {
    throw new Error('These tests need hypopg on the test cluster (Debian: postgresql-15-hypopg).')
  }
  scratch = await createScratchDatabase(shared.superuserUrl, shared.url)
  // hypopg keeps its hypothetical indexes in backend memory, where a rollback does not reach.
  await adminQuery(
    scratch.superuserUrl,
    `CREATE EXTENSION hypopg; CREATE TABLE public.keel_plain (x int);
     CREATE SEQUENCE public.keel_sequence; GRANT USAGE ON SEQUENCE public.keel_sequence TO PUBLIC`,
  )
  // Functions a caller's statement reaches through the parser gate and the function policy:
  // declared STABLE (PostgreSQL does not check that), executable by PUBLIC. A STABLE PL/pgSQL body
  // may still take session locks, set session settings and create hypothetical indexes.
  await adminQuery(
    scratch.superuserUrl,
    `CREATE FUNCTION public.keel_stable_lock() RETURNS int LANGUAGE plpgsql STABLE AS $$
       BEGIN PERFORM pg_advisory_lock(4321); RETURN 1; END $$;
     CREATE FUNCTION public.keel_stable_setting() RETURNS int LANGUAGE plpgsql STABLE AS $$
       BEGIN PERFORM set_config('work_mem', '3MB', false); PERFORM set_config('default_transaction_read_only', 'off', false);
       RETURN 1; END $$;
     CREATE FUNCTION public.keel_stable_hypothetical() RETURNS int LANGUAGE plpgsql STABLE AS $$
       BEGIN PERFORM public.hypopg_create_index('CREATE INDEX ON public.keel_plain (x)'); RETURN 1; END $$;
     CREATE FUNCTION public.keel_stable_state() RETURNS text LANGUAGE sql STABLE AS $$
       SELECT concat_ws(' ', pg_backend_pid(),
         (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()),
         current_setting('work_mem'), current_setting('default_transaction_read_only'),
         (SELECT count(*) FROM public.hypopg_list_indexes)) $$;
     CREATE FUNCTION public.keel_prepare() RETURNS int LANGUAGE plpgsql AS $$
       BEGIN EXECUTE 'PREPARE keel_prepared_inside AS SELECT 1'; RETURN 1; END $$;
     CREATE FUNCTION public.keel_hold_cursor() RETURNS int LANGUAGE plpgsql AS $$
       BEGIN EXECUTE 'DECLARE keel_held CURSOR WITH HOLD FOR SELECT 1'; RETURN 1; END $$;`,
  )
  await adminQuery(
    scratch.superuserUrl,
    `CREATE FUNCTION public.keel_leave_traces() RETURNS int LANGUAGE plpgsql AS $$
       BEGIN
         PERFORM pg_advisory_lock(4311);
         PERFORM pg_advisory_lock_shared(4312);
         EXECUTE 'PREPARE keel_left_behind AS SELECT 1';
         EXECUTE 'LISTEN keel_channel';
         PERFORM public.hypopg_create_index('CREATE INDEX ON public.keel_plain (x)');
         RETURN 1;
       END $$;
     CREATE VIEW public.keel_trace_view AS SELECT public.keel_leave_traces() AS traces;`,
  )
})

afterAll(async () => {
  await closeAll()
  await Promise.all(opened.map((database) => database.close()))
  await scratch?.drop()
})

interface SessionState {
  pid: number
  advisory: number
  prepared: number
  listening: number
  cursors: number
  work_mem: string
  application_name: string
  read_only: string
  strings: string
  hypothetical: number
  user: string
  session_user: string
  temporary: number
  statement_timeout: string
  lock_timeout: string
  idle_timeout: string
}

const stateQuery = `SELECT pg_backend_pid() AS pid,
  (SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS advisory,
  (SELECT count(*)::int FROM pg_prepared_statements) AS prepared,
  (SELECT count(*)::int FROM pg_listening_channels()) AS listening,
  (SELECT count(*)::int FROM pg_cursors WHERE statement <> current_query()) AS cursors,
  current_setting('work_mem') AS work_mem,
  current_setting('application_name') AS application_name,
  current_setting('default_transaction_read_only') AS read_only,
  current_setting('standard_conforming_strings') AS strings,
  (SELECT count(*)::int FROM public.hypopg_list_indexes) AS hypothetical,
  current_user AS user, session_user AS session_user,
  (SELECT count(*)::int FROM pg_class WHERE relpersistence = 't') AS temporary,
  current_setting('statement_timeout') AS statement_timeout, current_setting('lock_timeout') AS lock_timeout,
  current_setting('idle_in_transaction_session_timeout') AS idle_timeout`

async function state(database: Database): Promise<SessionState> {
  const result = await database.readQuery(stateQuery)
  const [row] = result.rows
  return Object.fromEntries(result.fields.map((field, index) => [field.name, row?.[index]])) as never
}

const effects = [
  'SELECT pg_advisory_lock(4301)',
  'SELECT pg_advisory_lock_shared(4302)',
  'SELECT pg_try_advisory_lock(4303)',
  'PREPARE keel_prepared AS SELECT 1',
  'LISTEN keel_channel',
  'DECLARE keel_cursor CURSOR WITH HOLD FOR SELECT 1',
  "SELECT set_config('work_mem', '1MB', false)",
  "SELECT set_config('application_name', 'hijacked', false)",
  "SET work_mem = '2MB'",
  "SELECT set_config('statement_timeout', '0', false)",
  'SET lock_timeout = 0',
  'SET SESSION idle_in_transaction_session_timeout = 0',
  'SET default_transaction_read_only = off',
  'SET standard_conforming_strings = off',
  'SELECT public.keel_leave_traces()',
  'SELECT * FROM public.keel_trace_view',
  "SELECT public.hypopg_create_index('CREATE INDEX ON public.keel_plain (x)')",
  // Created, then the transaction fails: the index must go all the same.
  "SELECT count(public.hypopg_create_index('CREATE INDEX ON public.keel_plain (x)')) / 0",
  'SELECT public.keel_prepare()',
  'SELECT public.keel_hold_cursor()',
  "SELECT set_config('role', 'pg_monitor', false)",
  'SET SESSION AUTHORIZATION pg_monitor',
  'SAVEPOINT keel_savepoint',
  // Refused by a read-only transaction: nothing to reset (currval needs nextval; temporary tables
  // need CREATE).
  "SELECT nextval('public.keel_sequence')",
  'CREATE TEMPORARY TABLE keel_temporary (x int)',
]

/**
 * Statements that end or change the call's transaction: the call is refused and the session reset
 * in full. (The parser gate refuses every one of them; readQuery does not run it.)
 */
const escapes = [
  'COMMIT',
  'ROLLBACK',
  'COMMIT AND CHAIN',
  'ROLLBACK AND CHAIN',
  'SET TRANSACTION READ WRITE',
  "SELECT set_config('keel.call', '', true)",
]

/** Through the `query` entry point: the parser gate and the function policy let these through. */
const gatedEffects = [
  'SELECT public.keel_stable_lock()',
  'SELECT public.keel_stable_setting()',
  'SELECT public.keel_stable_hypothetical()',
]

describe.each([
  ['a superuser', () => scratch.superuserUrl],
  ['a plain role', () => scratch.url],
])('the session after a call, connected as %s', (_who, url) => {
  let database: Database
  let clean: SessionState
  beforeAll(async () => {
    database = new Database({ connectionString: url(), poolSize: 1 })
    opened.push(database)
    clean = await state(database)
    expect(clean).toMatchObject({
      advisory: 0,
      prepared: 0,
      listening: 0,
      cursors: 0,
      read_only: 'on',
      strings: 'on',
      hypothetical: 0,
      // The default limits, set for the session: a call with them sends no SET LOCAL of its own.
      statement_timeout: '30s',
      lock_timeout: '5s',
      idle_timeout: '1min',
    })
  })

  it.each(effects)('keeps nothing of %s', async (sql) => {
    // Some of these fail inside the read-only transaction; what they did before failing must go too.
    await database.readQuery(sql).catch(() => undefined)
    const after = await state(database)
    expect(after).toEqual({ ...clean, pid: after.pid })
    const held = await adminQuery<{ count: number }>(
      scratch.superuserUrl,
      "SELECT count(*)::int AS count FROM pg_locks WHERE locktype = 'advisory'",
    )
    expect(held[0]?.count).toBe(0)
  })

  it.each(escapes)(
    'refuses %s, which ends or changes its transaction, and keeps nothing of it',
    async (sql) => {
      const refused = await database.readQuery(sql).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(refused).toBeInstanceOf(SqlRefusedError)
      expect((refused as SqlRefusedError).code).toBe('not_read_only')
      const after = await state(database)
      expect(after).toEqual(clean)
    },
  )

  it.each(gatedEffects)('keeps nothing of %s sent through the gate', async (sql) => {
    const result = await database.query(sql)
    expect(result.rows).toEqual([[1]])
    const after = await state(database)
    expect(after).toEqual(clean)
  })

  it('runs a call with other limits under them, and the next call under the defaults again', async () => {
    const limited = await database.readQuery(
      "SELECT current_setting('statement_timeout'), current_setting('lock_timeout'), current_setting('idle_in_transaction_session_timeout')",
      [],
      { timeoutMs: 1234 },
    )
    // The lock timeout is capped by the statement timeout (limits.ts).
    expect(limited.rows).toEqual([['1234ms', '1234ms', '1min']])
    expect(await state(database)).toEqual(clean)
  })

  it('ran every effect on the same backend it then checked (the connection was reset, not replaced)', async () => {
    await database.readQuery('SELECT pg_advisory_lock(4304)')
    expect((await state(database)).pid).toBe(clean.pid)
  })
})

describe('the session after a call of the query tool, with one pooled connection', () => {
  it.each(gatedEffects)('keeps nothing of %s', async (sql) => {
    const { client } = await connect(scratch.url, { argv: ['--pool-size', '1'] })
    const stateOf = async () => {
      const result = await client.callTool({
        name: 'query',
        arguments: { sql: 'SELECT public.keel_stable_state()' },
      })
      expect(result.isError).toBeFalsy()
      return String((result.structuredContent as { rows: unknown[][] }).rows[0]?.[0])
    }
    const before = await stateOf()
    expect(before).toMatch(/^\d+ 0 4MB on 0$/)
    const result = await client.callTool({ name: 'query', arguments: { sql } })
    expect(result.isError).toBeFalsy()
    expect(await stateOf()).toBe(before)
  })
})
