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
  // Decided by what the catalog says about each function, not by its name.
  'functions, operators and views PostgreSQL reserves for privileged roles': [
    "SELECT pg_read_file_old('/etc/passwd', 0, 4000)",
    "SELECT pg_catalog.pg_read_file_old('/etc/passwd', 0, 4000)",
    "SELECT * FROM pg_catalog.pg_read_file_old('/etc/passwd', 0, 4000) AS f(content)",
    'SELECT length(x) FROM (SELECT pg_read_file_old($$/etc/passwd$$, 0, 4000) AS x) AS s',
    "SELECT @@@ '/etc/hostname'",
    'SELECT * FROM pg_hba_file_rules',
    'SELECT * FROM pg_catalog.pg_file_settings',
    'SELECT * FROM pg_ident_file_mappings',
    'SELECT rolname, rolpassword FROM pg_authid',
    'SELECT * FROM pg_shadow',
    'SELECT * FROM public.keel_file_view',
    'SELECT * FROM public.keel_hba_view',
    'SELECT * FROM public.keel_view_of_view',
    "SELECT pg_stat_reset_shared('bgwriter')",
    'SELECT pg_current_logfile()',
    'SELECT pg_rotate_logfile_old()',
  ],
  'volatile functions outside the allow list': [
    "SELECT currval('shop.invoice_number_seq')",
    'SELECT lastval()',
    'SELECT pg_advisory_unlock_all()',
    'SELECT txid_status(1)',
    'SELECT public.keel_grab(4211)',
    'SELECT * FROM public.keel_grab_view',
    'SELECT public.keel_lock_agg(4216)',
    'SELECT public.keel_lock_agg(x) FROM generate_series(4217, 4218) AS x',
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
  // The monitoring allow-list lets pg_stat_statements be read; nothing else of either extension.
  'extension functions outside the monitoring allow-list': [
    'SELECT pg_stat_statements_reset()',
    'SELECT pg_stat_statements_reset(0, 0, 0)',
    "SELECT * FROM hypopg_create_index('CREATE INDEX ON shop.orders (note)')",
    'SELECT hypopg_reset()',
    'SELECT * FROM hypopg_list_indexes',
    'SELECT hypopg_drop_index(1)',
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

/** Sent to explain_query as hypothetical indexes: each must be refused, nothing created. */
const hypotheticalIndexAttacks = [
  'DROP TABLE shop.orders',
  'CREATE INDEX ON shop.orders (note); DROP TABLE shop.orders',
  'CREATE TABLE public.evil (id int)',
  "CREATE INDEX ON shop.orders ((pg_read_file('/etc/passwd')))",
  'CREATE INDEX ON shop.orders ((public.keel_grab(4219)))',
  'CREATE INDEX ON shop.orders (note) WHERE pg_advisory_lock(4220) IS NOT NULL',
  'CREATE INDEX ON pg_authid (rolname)',
  'CREATE INDEX ON shop.orders (note) TABLESPACE pg_global',
]

/** Sent to recommend_indexes as the query to advise on. */
const adviceAttacks = [
  'DELETE FROM shop.orders',
  'SELECT 1; COMMIT; DROP TABLE shop.orders',
  "SELECT pg_read_file('/etc/passwd')",
  'WITH gone AS (DELETE FROM shop.order_items RETURNING *) SELECT count(*) FROM gone',
  'SELECT public.keel_wipe_items()',
]

type Scratch = Awaited<ReturnType<typeof createScratchDatabase>>
const scratches: Partial<Record<'standard' | 'legacy', { scratch: Scratch; before: DatabaseChecksum }>> = {}
const superuserName = decodeURIComponent(new URL(shared.superuserUrl).username)
const appName = decodeURIComponent(new URL(shared.url).username)

/**
 * A scratch copy of the sample schema, with objects a model could reach but the parser gate
 * cannot see into. `legacy`: the database and both roles default to
 * standard_conforming_strings = off, where a backslash escapes a quote inside '…'.
 */
async function createAttackDatabase(legacy: boolean): Promise<Scratch> {
  const scratch = await createScratchDatabase(shared.superuserUrl, shared.url)
  await seedSampleSchema(scratch.superuserUrl, { readerRole: shared.readerRole })
  // The extensions the DBA tools use, installed as a DBA would: their functions are in reach.
  await adminQuery(scratch.superuserUrl, 'CREATE EXTENSION pg_stat_statements; CREATE EXTENSION hypopg')
  await adminQuery(
    scratch.superuserUrl,
    `CREATE FUNCTION public.keel_wipe_items() RETURNS bigint LANGUAGE plpgsql AS $$
       BEGIN DELETE FROM shop.order_items; RETURN 1; END $$;
     CREATE PROCEDURE public.keel_commit_and_drop() LANGUAGE plpgsql AS $$
       BEGIN COMMIT; DROP TABLE shop.orders; END $$;
     CREATE FUNCTION public.keel_grab(k bigint) RETURNS bigint LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_advisory_lock(k); RETURN k; END $$;
     CREATE VIEW public.keel_grab_view AS SELECT public.keel_grab(4212) AS k;
     -- Declared STABLE (a lie PostgreSQL does not check): the gate lets them through, and only
     -- the session reset after the call stands between their lock and the next caller.
     CREATE FUNCTION public.keel_grab_stable(k bigint) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
       BEGIN PERFORM pg_advisory_lock(k); RETURN k; END $$;
     CREATE VIEW public.keel_grab_stable_view AS SELECT public.keel_grab_stable(4214) AS k;
     CREATE VIEW public.keel_file_view AS SELECT pg_read_file_old('/etc/hostname', 0, 100) AS content;
     CREATE VIEW public.keel_hba_view AS SELECT * FROM pg_hba_file_rules;
     CREATE VIEW public.keel_view_of_view AS SELECT * FROM public.keel_file_view;
     CREATE OPERATOR public.@@@ (RIGHTARG = text, FUNCTION = pg_catalog.pg_read_file);
     CREATE FUNCTION public.keel_lock_step(s bigint, k bigint) RETURNS bigint LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_advisory_lock(k); RETURN coalesce(s, 0) + 1; END $$;
     CREATE AGGREGATE public.keel_lock_agg(bigint) (SFUNC = public.keel_lock_step, STYPE = bigint);`,
  )
  if (legacy) {
    const quoted = `"${scratch.name}"`
    await adminQuery(
      shared.superuserUrl,
      `ALTER DATABASE ${quoted} SET standard_conforming_strings = off;
       ALTER ROLE "${superuserName}" IN DATABASE ${quoted} SET standard_conforming_strings = off;
       ALTER ROLE "${appName}" IN DATABASE ${quoted} SET standard_conforming_strings = off;`,
    )
  }
  return scratch
}

beforeAll(async () => {
  const standard = await createAttackDatabase(false)
  const legacy = await createAttackDatabase(true)
  // Checksums after both exist: role settings per database are cluster-wide catalog rows.
  scratches.standard = { scratch: standard, before: await databaseChecksum(standard.superuserUrl) }
  scratches.legacy = { scratch: legacy, before: await databaseChecksum(legacy.superuserUrl) }
})

afterAll(async () => {
  await closeAll()
  await scratches.standard?.scratch.drop()
  await scratches.legacy?.scratch.drop()
})

const combinations = (['standard', 'legacy'] as const).flatMap((database) => [
  [`a superuser (${database} strings)`, database, 'superuserUrl'] as const,
  [`a non-superuser that can read everything (${database} strings)`, database, 'url'] as const,
])

describe.each(combinations)('attacks through the MCP tools, connected as %s', (_who, database, which) => {
  const scratch = {
    get superuserUrl() {
      return scratches[database]?.scratch.superuserUrl ?? ''
    },
  }
  const before = {
    get parts() {
      return scratches[database]?.before.parts
    },
  }
  const url = () => scratches[database]?.scratch[which] ?? ''
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

  it.each(hypotheticalIndexAttacks)('explain_query refuses the hypothetical index %j', async (definition) => {
    const result = await client.callTool({
      name: 'explain_query',
      arguments: { sql: 'SELECT * FROM shop.orders WHERE note = $1', hypothetical_indexes: [definition] },
    })
    expect(result.isError, textOf(result)).toBe(true)
    expect(['invalid_argument', 'permission_denied']).toContain(errorKind(result))
  })

  it('explain_query refuses a write to plan with a hypothetical index', async () => {
    const result = await client.callTool({
      name: 'explain_query',
      arguments: {
        sql: 'DELETE FROM shop.orders',
        hypothetical_indexes: ['CREATE INDEX ON shop.orders (note)'],
      },
    })
    expect(errorKind(result)).toBe('permission_denied')
  })

  it.each(adviceAttacks)('recommend_indexes refuses %j', async (sql) => {
    const result = await client.callTool({ name: 'recommend_indexes', arguments: { sql } })
    expect(result.isError, textOf(result)).toBe(true)
    expect(['invalid_argument', 'permission_denied']).toContain(errorKind(result))
  })

  it('reads pg_stat_statements through the monitoring allow-list, and the DBA tools run', async () => {
    const read = await client.callTool({
      name: 'query',
      arguments: { sql: 'SELECT count(*) >= 0 FROM pg_stat_statements' },
    })
    expect(read.structuredContent?.rows, textOf(read)).toEqual([[true]])
    for (const name of ['get_top_queries', 'analyze_db_health', 'recommend_indexes']) {
      const result = await client.callTool({ name, arguments: {} })
      expect(result.isError, textOf(result)).toBeFalsy()
    }
  })

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

  it.each([
    "SELECT 'x\\' , ' , pg_read_file($$/etc/hostname$$) --'",
    "SELECT 'x\\' , ' , pg_advisory_lock(4215) --'",
    "SELECT 'x\\' , ' , pg_terminate_backend(pg_backend_pid()) --'",
  ])('reads %s as the parser gate does: two string literals, whatever the database defaults', async (sql) => {
    const result = await client.callTool({ name: 'query', arguments: { sql } })
    expect(result.isError, textOf(result)).toBeFalsy()
    const second = sql.slice(sql.indexOf(" ' , ") + 2, -1)
    expect(result.structuredContent.rows).toEqual([['x\\', second]])
  })

  it('runs with standard_conforming_strings on, which the caller cannot change', async () => {
    const result = await client.callTool({
      name: 'query',
      arguments: { sql: "SELECT current_setting('standard_conforming_strings')" },
    })
    expect(result.structuredContent.rows).toEqual([['on']])
  })

  it.each(['SELECT public.keel_grab_stable(4213)', 'SELECT * FROM public.keel_grab_stable_view'])(
    'leaves no advisory lock behind after %s, which takes one the gate cannot see',
    async (sql) => {
      const result = await client.callTool({ name: 'query', arguments: { sql } })
      expect(result.isError, textOf(result)).toBeFalsy()
      const held = await adminQuery<{ count: number }>(
        scratch.superuserUrl,
        `SELECT count(*)::int AS count FROM pg_locks WHERE locktype = 'advisory' AND objid IN (4211, 4212, 4213, 4214, 4215, 4216, 4217, 4218, 4219, 4220)`,
      )
      expect(held[0]?.count).toBe(0)
    },
  )

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
