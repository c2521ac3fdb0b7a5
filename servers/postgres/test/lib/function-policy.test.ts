import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Database } from '../../src/lib/database.js'
import { SqlRefusedError } from '../../src/lib/errors.js'
import {
  assertReferencesAllowed,
  KeptVerdicts,
  monitoringAllowKeys,
  volatileAllowList,
} from '../../src/lib/function-policy.js'
import { checkReadOnlySql, deniedFunctionReason } from '../../src/lib/sql-guard.js'
import { adminQuery, createScratchDatabase, sharedPostgres } from '../harness/index.js'

/**
 * Every function of the test cluster (catalog and installed extensions), by name, through the gate
 * as a superuser and as a plain role: refused exactly when the catalog says a privileged role is
 * needed for some overload, or when some overload is volatile and not on the allow list (or the
 * name is on the gate's own deny list); allowed otherwise. EXPLAIN is used so nothing runs.
 */
const shared = sharedPostgres()
const opened: Database[] = []
let scratch: Awaited<ReturnType<typeof createScratchDatabase>>

/** Extensions with functions worth walking, installed where the cluster ships them. */
const extensions = [
  'adminpack',
  'dblink',
  'pgcrypto',
  'uuid-ossp',
  'tablefunc',
  'pageinspect',
  'pg_buffercache',
  'pgstattuple',
  'file_fdw',
  'postgres_fdw',
  'hstore',
  'pg_trgm',
  'xml2',
  'lo',
  'amcheck',
  'pg_surgery',
  'pg_visibility',
  'pg_walinspect',
  'pg_prewarm',
  'pgrowlocks',
  'pg_freespacemap',
  'ltree',
  'citext',
  'fuzzystrmatch',
  'intarray',
  'unaccent',
  'tsm_system_rows',
  'old_snapshot',
  // Where the cluster has them: the monitoring allow-list (pg_stat_statements) and hypopg.
  'pg_stat_statements',
  'hypopg',
]
let installed: string[] = []

beforeAll(async () => {
  scratch = await createScratchDatabase(shared.superuserUrl, shared.url)
  const available = await adminQuery<{ name: string }>(
    scratch.superuserUrl,
    'SELECT name FROM pg_available_extensions WHERE name = ANY($1::text[])',
    [extensions],
  )
  installed = available.map((row) => row.name)
  for (const name of installed) await adminQuery(scratch.superuserUrl, `CREATE EXTENSION "${name}" CASCADE`)
})

afterAll(async () => {
  await Promise.all(opened.map((database) => database.close()))
  await scratch?.drop()
})

interface FunctionName {
  schema: string
  name: string
  privileged: boolean
  volatile: boolean
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`

async function everyFunction(): Promise<FunctionName[]> {
  return adminQuery<FunctionName>(
    scratch.superuserUrl,
    `WITH reached AS (
       SELECT p.proname AS called, p.oid FROM pg_proc p
       UNION ALL
       SELECT p.proname, f.fn FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid
        CROSS JOIN LATERAL unnest(ARRAY[a.aggtransfn, a.aggfinalfn, a.aggcombinefn, a.aggserialfn,
              a.aggdeserialfn, a.aggmtransfn, a.aggminvtransfn, a.aggmfinalfn]::oid[]) AS f(fn)
        WHERE f.fn <> 0
     )
     SELECT min(n.nspname) FILTER (WHERE p.proname = r.called) AS schema, r.called AS name,
            bool_or(NOT has_function_privilege('public', p.oid, 'EXECUTE')) AS privileged,
            bool_or(p.provolatile = 'v' AND NOT (n.nspname = 'pg_catalog' AND p.proname = ANY($1::text[]))
                    AND NOT coalesce((SELECT e.extname || ' ' || e.extversion || ' ' || p.proname || '(' || oidvectortypes(p.proargtypes) || ')' = ANY($2::text[])
                                        AND e.extnamespace = p.pronamespace
                                        FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
                                       WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                                         AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'), false)) AS volatile
       FROM reached r JOIN pg_proc p ON p.oid = r.oid JOIN pg_namespace n ON n.oid = p.pronamespace
      GROUP BY r.called ORDER BY r.called`,
    [volatileAllowList, monitoringAllowKeys],
  )
}

async function verdict(database: Database, sql: string): Promise<'refused' | 'allowed'> {
  try {
    await database.explain(sql)
    return 'allowed'
  } catch (error) {
    if (error instanceof SqlRefusedError) return 'refused'
    // Wrong argument count, a window function without OVER, …: PostgreSQL's answer, not the gate's.
    return 'allowed'
  }
}

describe.each([
  ['a superuser', () => shared.superuserUrl, () => scratch.superuserUrl],
  ['a plain role', () => shared.url, () => scratch.url],
])('the function policy, connected as %s', (_who, url, scratchUrl) => {
  it('refuses every function (catalog and extensions) PUBLIC may not run or that is volatile outside the allow list, and no other', async () => {
    const database = new Database({ connectionString: scratchUrl(), poolSize: 4 })
    opened.push(database)
    const functions = await everyFunction()
    expect(functions.length).toBeGreaterThan(2_000)
    const wrong: string[] = []
    let refusedCount = 0
    for (let index = 0; index < functions.length; index += 4) {
      await Promise.all(
        functions.slice(index, index + 4).map(async (fn) => {
          const expected =
            fn.privileged || fn.volatile || deniedFunctionReason(fn.name) !== undefined
              ? 'refused'
              : 'allowed'
          const actual = await verdict(database, `SELECT ${quote(fn.schema)}.${quote(fn.name)}()`)
          if (actual === 'refused') refusedCount++
          if (actual !== expected) wrong.push(`${fn.schema}.${fn.name}: expected ${expected}, got ${actual}`)
        }),
      )
    }
    expect(wrong).toEqual([])
    expect(refusedCount).toBeGreaterThan(200)
  })

  it.each([
    'SELECT x, row_number() OVER w, sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), lag(x) OVER w FROM generate_series(1, 5) AS x WINDOW w AS (ORDER BY x)',
    'WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5), s AS (SELECT sum(n) AS total FROM t) SELECT total FROM s',
    'SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc(0.9) WITHIN GROUP (ORDER BY x), mode() WITHIN GROUP (ORDER BY x % 3) FROM generate_series(1, 10) AS x',
    `SELECT jsonb_build_object('a', 1) -> 'a', '{"b": [1, 2]}'::jsonb #>> '{b,1}', jsonb_path_query_array('{"a": [1, 2, 3]}', '$.a[*] ? (@ > 1)'), json_agg(x) FROM generate_series(1, 3) AS x`,
    "SELECT to_tsvector('english', 'The quick brown foxes') @@ to_tsquery('english', 'fox'), ts_rank(to_tsvector('simple', 'a b a'), plainto_tsquery('simple', 'a')), ts_headline('english', 'The quick brown fox', to_tsquery('fox'))",
    "SELECT date_trunc('month', now()), random() < 2, gen_random_uuid() IS NOT NULL, clock_timestamp() > '2000-01-01', x::numeric(10, 2), 'abc' ~~ 'a%', 1 = ANY(ARRAY[1, 2]) FROM generate_series(1, 2) AS x",
    "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'shop'",
    'SELECT count(*) FROM pg_stat_activity',
    'SELECT c.full_name, count(o.id), rank() OVER (ORDER BY count(o.id) DESC) FROM shop.customers c LEFT JOIN shop.orders o ON o.customer_id = c.id GROUP BY c.full_name',
    "SELECT pg_size_pretty(pg_total_relation_size('shop.orders'))",
  ])('still runs analytics: %s', async (sql) => {
    const database = new Database({ connectionString: url() })
    opened.push(database)
    const result = await database.query(sql)
    expect(result.rowCount).toBeGreaterThan(0)
  })
})

/**
 * Where the policy's catalog queries run: on connections of their own, prepared there once, which
 * never run a caller's statement; and on the call's own connection, inside its transaction, where
 * the role's connection limit leaves no room for those.
 */
describe('the function policy’s own connections', () => {
  const backendsOf = (applicationName: string) =>
    adminQuery<{ pid: number; query: string }>(
      shared.superuserUrl,
      'SELECT pid, query FROM pg_catalog.pg_stat_activity WHERE application_name = $1',
      [applicationName],
    )

  it('judge on backends that never run a caller’s statement', async () => {
    const applicationName = `keel-policy-test-${process.pid}`
    const database = new Database({ connectionString: shared.url, poolSize: 4, applicationName })
    opened.push(database)
    const callers = new Set<number>()
    // Each names a function and an operator, so each is judged; 4 at a time, so the pool spreads.
    for (let round = 0; round < 10; round++) {
      const results = await Promise.all(
        Array.from({ length: 4 }, (_, index) =>
          database.query('SELECT pg_catalog.pg_backend_pid() AS pid, $1::int4 + 1 AS next', [
            round * 4 + index,
          ]),
        ),
      )
      for (const result of results) callers.add(Number(result.rows[0]?.[0]))
    }
    const backends = await backendsOf(applicationName)
    const judges = backends.filter((backend) => backend.query.startsWith('WITH now AS'))
    expect(judges.length).toBeGreaterThan(0)
    expect(judges.length).toBeLessThanOrEqual(2)
    for (const judge of judges) expect(callers.has(judge.pid)).toBe(false)
    // The calls ran on the pool's backends, which never ran the policy's queries.
    expect(callers.size).toBeGreaterThan(0)
    for (const backend of backends)
      if (callers.has(backend.pid)) expect(backend.query.startsWith('WITH now AS')).toBe(false)
    // Still judged there: a volatile function is refused, and so is one behind an operator.
    await expect(database.query('SELECT pg_catalog.pg_advisory_lock(1)')).rejects.toBeInstanceOf(
      SqlRefusedError,
    )
    await expect(
      database.query("SELECT 'x' = 'y', pg_catalog.nextval('no_such_sequence')"),
    ).rejects.toBeInstanceOf(SqlRefusedError)
  })

  it('judge on the call’s own connection when the role may open no more than the pool', async () => {
    const role = `keel_policy_limit_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
    await adminQuery(
      shared.superuserUrl,
      `CREATE ROLE ${role} LOGIN PASSWORD 'keel_policy_limit' CONNECTION LIMIT 2; GRANT pg_read_all_data TO ${role}`,
    )
    const url = new URL(shared.url)
    url.username = role
    url.password = 'keel_policy_limit'
    const database = new Database({ connectionString: url.toString(), poolSize: 2 })
    try {
      const allowed = await database.query(
        'SELECT count(*)::int4 AS n FROM pg_catalog.pg_class WHERE relkind = $1',
        ['r'],
      )
      expect(Number(allowed.rows[0]?.[0])).toBeGreaterThan(10)
      await expect(database.query('SELECT pg_catalog.pg_advisory_lock(1)')).rejects.toBeInstanceOf(
        SqlRefusedError,
      )
      // Both calls at once, each judged: the role's two connections are the pool's, none a judge's.
      const both = await Promise.all([
        database.query('SELECT pg_catalog.pg_backend_pid() AS pid'),
        database.query("SELECT pg_catalog.length('abc') AS n"),
      ])
      expect(both.map((result) => result.rowCount)).toEqual([1, 1])
      const sessions = await adminQuery<{ n: number }>(
        shared.superuserUrl,
        'SELECT count(*)::int4 AS n FROM pg_catalog.pg_stat_activity WHERE usename = $1',
        [role],
      )
      expect(sessions[0]?.n).toBeLessThanOrEqual(2)
    } finally {
      await database.close()
      await adminQuery(shared.superuserUrl, `DROP ROLE IF EXISTS ${role}`)
    }
  })
})

/**
 * What a refusal says: the function, and how the statement reached it (called by name, with its
 * position; or through an aggregate, an operator or a cast), where the policy judges on its own
 * connections and where it judges inside the call's transaction (`judgeApart` off by a pool the
 * size of the role's limit is tested above; here the same statements go through both ways by
 * two Database objects, one allowed the extra connections and one not).
 */
describe('the function policy’s refusals', () => {
  beforeAll(async () => {
    await adminQuery(
      scratch.superuserUrl,
      `CREATE FUNCTION public.keel_policy_step(s bigint, k bigint) RETURNS bigint LANGUAGE sql VOLATILE
         AS 'SELECT coalesce(s, 0) + k';
       CREATE AGGREGATE public.keel_policy_agg(bigint) (SFUNC = public.keel_policy_step, STYPE = bigint);
       CREATE FUNCTION public.keel_policy_twice(k bigint) RETURNS bigint LANGUAGE sql VOLATILE AS 'SELECT k * 2';
       CREATE OPERATOR public.%%% (RIGHTARG = bigint, FUNCTION = public.keel_policy_twice);
       CREATE TYPE public.keel_policy_pair AS (a bigint, b bigint);
       CREATE FUNCTION public.keel_policy_pair_of(k bigint) RETURNS public.keel_policy_pair LANGUAGE sql
         VOLATILE AS 'SELECT ROW(k, k)::public.keel_policy_pair';
       CREATE CAST (bigint AS public.keel_policy_pair) WITH FUNCTION public.keel_policy_pair_of(bigint);`,
    )
  })

  const refusal = async (database: Database, sql: string) => {
    const error = await database.query(sql).then(
      () => undefined,
      (thrown: unknown) => thrown,
    )
    expect(error).toBeInstanceOf(SqlRefusedError)
    return error as SqlRefusedError
  }

  it.each([
    ['on its own connections', 4],
    ['inside the call’s transaction', 1],
  ])('say how the statement reached the function, judged %s', async (_where, poolSize) => {
    const role = `keel_policy_msg_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
    // A role whose connection limit is the pool's leaves no room for the policy's own connections.
    await adminQuery(
      scratch.superuserUrl,
      `CREATE ROLE ${role} LOGIN PASSWORD 'keel_policy_msg' CONNECTION LIMIT ${poolSize === 1 ? 1 : -1};
       GRANT pg_read_all_data TO ${role}`,
    )
    const url = new URL(scratch.url)
    url.username = role
    url.password = 'keel_policy_msg'
    const database = new Database({ connectionString: url.toString(), poolSize })
    try {
      const called = await refusal(database, 'SELECT 1, public.keel_policy_twice(2)')
      expect(called.message).toContain('Function public.keel_policy_twice() is not allowed: it is volatile')
      expect(called.message).not.toContain('reached through')
      expect(called.position).toBe('SELECT 1, '.length + 1)
      const aggregate = await refusal(
        database,
        'SELECT public.keel_policy_agg(x) FROM generate_series(1, 3) AS x',
      )
      expect(aggregate.message).toContain(
        'Function public.keel_policy_step() (reached through the aggregate keel_policy_agg) is not allowed',
      )
      const operator = await refusal(database, 'SELECT %%% 2::bigint')
      expect(operator.message).toContain(
        'Function public.keel_policy_twice() (reached through the operator %%%) is not allowed',
      )
      const cast = await refusal(database, 'SELECT 2::bigint::public.keel_policy_pair')
      expect(cast.message).toContain(
        'Function public.keel_policy_pair_of() (reached through the cast to keel_policy_pair) is not allowed',
      )
      const privileged = await refusal(
        database,
        "SELECT 'a' = 'b', pg_catalog.pg_stat_have_stats('relation', 0, 0)",
      )
      expect(privileged.message).toContain(
        'Function pg_catalog.pg_stat_have_stats() is not allowed: PostgreSQL reserves it for privileged roles',
      )
      // Refused first where both kinds are reached: the privileged one.
      const both = await refusal(
        database,
        "SELECT public.keel_policy_twice(1), pg_catalog.pg_stat_have_stats('relation', 0, 0)",
      )
      expect(both.message).toContain('pg_catalog.pg_stat_have_stats()')
      // And what is allowed still runs, through the same path.
      const allowed = await database.query('SELECT sum(x) FROM generate_series(1, 3) AS x WHERE x >= 1')
      expect(allowed.rows).toEqual([['6']])
    } finally {
      await database.close()
      await adminQuery(scratch.superuserUrl, `DROP OWNED BY ${role}; DROP ROLE IF EXISTS ${role}`)
    }
  })
})

/**
 * What the policy sends for a statement: one statement judges the relations it names together with
 * the functions, operators and types it names; views add one round per level of nesting and one for
 * what they call. The verdicts are those of the separate queries (the walks above and the attack
 * suite hold them).
 */
describe('the function policy’s round trips', () => {
  it.each([
    [
      'a table, a function and an operator',
      "SELECT count(*) FROM public.keel_policy_rows WHERE status = 'paid'",
      1,
    ],
    ['a function only', 'SELECT pg_catalog.length($1)', 1],
    ['a table only', 'SELECT id FROM public.keel_policy_rows', 1],
    [
      'a view of a view that calls a function (views, then the table, then the function)',
      'SELECT * FROM public.keel_policy_outer',
      4,
    ],
  ])('%s', async (_what, sql, expected) => {
    await adminQuery(
      scratch.superuserUrl,
      `CREATE TABLE IF NOT EXISTS public.keel_policy_rows (id int, status text);
       CREATE OR REPLACE VIEW public.keel_policy_inner AS SELECT pg_catalog.upper(status) AS s FROM public.keel_policy_rows;
       CREATE OR REPLACE VIEW public.keel_policy_outer AS SELECT s FROM public.keel_policy_inner;`,
    )
    const verdict = await checkReadOnlySql(sql)
    if (!verdict.ok) throw new Error(verdict.message)
    const client = new pg.Client({ connectionString: scratch.url })
    await client.connect()
    try {
      const sent: string[] = []
      await assertReferencesAllowed(
        {
          query: ((text: string, values: unknown[]) => {
            sent.push(text)
            return client.query(text, values)
          }) as never,
        },
        verdict.references,
      )
      expect(sent).toHaveLength(expected)
    } finally {
      await client.end()
    }
  })
})

/**
 * Verdicts a connection of the policy keeps with the snapshot they were made under: allowed again
 * without the lookups only while no transaction has completed since; any change to the catalog
 * completes one, and the statement is judged again.
 */
describe('the function policy’s kept verdicts', () => {
  beforeAll(async () => {
    await adminQuery(
      scratch.superuserUrl,
      `CREATE TABLE public.keel_kept_rows (id int);
       CREATE FUNCTION public.keel_kept_fn(k int) RETURNS int LANGUAGE sql STABLE AS 'SELECT k';
       CREATE FUNCTION public.keel_kept_volatile(k int) RETURNS int LANGUAGE sql VOLATILE AS 'SELECT k';
       CREATE VIEW public.keel_kept_view AS SELECT id FROM public.keel_kept_rows;`,
    )
  })

  /** A client whose first query's answers are recorded: `relations` is null where the verdict was kept. */
  const recording = async () => {
    const client = new pg.Client({ connectionString: scratch.url })
    await client.connect()
    const firsts: Array<{ relations: unknown }> = []
    const queries = {
      query: (async (text: string, values: unknown[]) => {
        const result = await client.query(text, values)
        if (text.includes('txid_current_snapshot')) firsts.push(result.rows[0])
        return result
      }) as never,
    }
    return { client, queries, firsts }
  }

  const references = async (sql: string) => {
    const verdict = await checkReadOnlySql(sql)
    if (!verdict.ok) throw new Error(verdict.message)
    return verdict.references
  }

  it('allows again without the lookups while nothing completes, and judges again after a change', async () => {
    const { client, queries, firsts } = await recording()
    const kept = new KeptVerdicts()
    try {
      const refs = await references('SELECT public.keel_kept_fn(id) + 1 FROM public.keel_kept_rows')
      await assertReferencesAllowed(queries, refs, kept)
      await assertReferencesAllowed(queries, refs, kept)
      expect(firsts.map((row) => row.relations === null)).toEqual([false, true])
      // The function made volatile: a completed transaction, so judged again, and refused.
      await adminQuery(scratch.superuserUrl, 'ALTER FUNCTION public.keel_kept_fn(int) VOLATILE')
      await expect(assertReferencesAllowed(queries, refs, kept)).rejects.toBeInstanceOf(SqlRefusedError)
      await adminQuery(scratch.superuserUrl, 'ALTER FUNCTION public.keel_kept_fn(int) STABLE')
      await assertReferencesAllowed(queries, refs, kept)
      await assertReferencesAllowed(queries, refs, kept)
      expect(firsts.slice(-2).map((row) => row.relations === null)).toEqual([false, true])
      // EXECUTE revoked from PUBLIC.
      await adminQuery(
        scratch.superuserUrl,
        'REVOKE EXECUTE ON FUNCTION public.keel_kept_fn(int) FROM PUBLIC',
      )
      await expect(assertReferencesAllowed(queries, refs, kept)).rejects.toBeInstanceOf(SqlRefusedError)
      await adminQuery(scratch.superuserUrl, 'GRANT EXECUTE ON FUNCTION public.keel_kept_fn(int) TO PUBLIC')
      // A view redefined to call a volatile function.
      const view = await references('SELECT * FROM public.keel_kept_view')
      await assertReferencesAllowed(queries, view, kept)
      await assertReferencesAllowed(queries, view, kept)
      expect(firsts.at(-1)?.relations).toBeNull()
      await adminQuery(
        scratch.superuserUrl,
        'CREATE OR REPLACE VIEW public.keel_kept_view AS SELECT id, public.keel_kept_volatile(id) AS v FROM public.keel_kept_rows',
      )
      await expect(assertReferencesAllowed(queries, view, kept)).rejects.toBeInstanceOf(SqlRefusedError)
    } finally {
      await adminQuery(
        scratch.superuserUrl,
        `CREATE OR REPLACE VIEW public.keel_kept_view AS SELECT id, 0 AS v FROM public.keel_kept_rows;
         ALTER FUNCTION public.keel_kept_fn(int) STABLE;
         GRANT EXECUTE ON FUNCTION public.keel_kept_fn(int) TO PUBLIC`,
      )
      await client.end()
    }
  })

  it('judges every statement where another session writes between them, and keeps no refusal', async () => {
    const { client, queries, firsts } = await recording()
    const kept = new KeptVerdicts()
    try {
      const refs = await references('SELECT count(*) FROM public.keel_kept_rows WHERE id > 0')
      for (let round = 0; round < 3; round++) {
        await assertReferencesAllowed(queries, refs, kept)
        await adminQuery(scratch.superuserUrl, 'INSERT INTO public.keel_kept_rows VALUES (1)')
      }
      expect(firsts.map((row) => row.relations === null)).toEqual([false, false, false])
      const refused = await references('SELECT public.keel_kept_volatile(1)')
      for (let round = 0; round < 2; round++)
        await expect(assertReferencesAllowed(queries, refused, kept)).rejects.toBeInstanceOf(SqlRefusedError)
      expect(firsts.slice(-2).map((row) => row.relations === null)).toEqual([false, false])
    } finally {
      await client.end()
    }
  })

  it('refuses through a Database once a function it allowed is made volatile', async () => {
    const database = new Database({ connectionString: scratch.url, poolSize: 2 })
    opened.push(database)
    const sql = 'SELECT public.keel_kept_fn(2) AS n'
    // Several at once, so that both of the policy's connections judge it and keep it.
    for (let round = 0; round < 3; round++)
      await Promise.all(Array.from({ length: 4 }, () => database.query(sql)))
    await adminQuery(scratch.superuserUrl, 'ALTER FUNCTION public.keel_kept_fn(int) VOLATILE')
    try {
      const results = await Promise.allSettled(Array.from({ length: 4 }, () => database.query(sql)))
      for (const result of results) {
        expect(result.status).toBe('rejected')
        if (result.status === 'rejected') expect(result.reason).toBeInstanceOf(SqlRefusedError)
      }
    } finally {
      await adminQuery(scratch.superuserUrl, 'ALTER FUNCTION public.keel_kept_fn(int) STABLE')
    }
  })
})
