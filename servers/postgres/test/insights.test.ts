import type { TestClient } from '@keel-mcp/core/testing'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Database } from '../src/lib/database.js'
import { explainWithHypotheticalIndexes } from '../src/lib/hypothetical.js'
import { adminQuery, createScratchDatabase, sharedPostgres, waitFor } from './harness/index.js'
import { closeAll, connect, errorKind, textOf } from './helpers.js'

/**
 * The DBA tools on a real cluster with pg_stat_statements (preloaded) and hypopg: a workload of
 * lookups by an unindexed column, then top queries, index advice, hypothetical plans and health
 * findings planted on purpose (an invalid index, an unused duplicate, a sequence at 90 %).
 */
const shared = sharedPostgres()
let scratch: Awaited<ReturnType<typeof createScratchDatabase>>
let client: TestClient
const opened: Database[] = []

const lookup = 'SELECT id, region FROM public.accounts WHERE email = $1'

beforeAll(async () => {
  for (const name of ['pg_stat_statements', 'hypopg']) {
    if (!shared.extensions.includes(name)) {
      throw new Error(
        `These tests need ${name} on the test cluster (pg_stat_statements preloaded; Debian: postgresql-15-hypopg).`,
      )
    }
  }
  scratch = await createScratchDatabase(shared.superuserUrl, shared.url)
  await adminQuery(
    scratch.superuserUrl,
    `CREATE EXTENSION pg_stat_statements;
     CREATE EXTENSION hypopg;
     CREATE TABLE public.accounts (id bigserial PRIMARY KEY, email text NOT NULL, region int NOT NULL, note text);
     INSERT INTO public.accounts (email, region, note)
       SELECT 'user' || g || '@example.com', g % 50, 'note ' || g FROM generate_series(1, 40000) AS g;
     CREATE INDEX accounts_region_idx ON public.accounts (region);
     CREATE INDEX accounts_region_copy_idx ON public.accounts (region);
     CREATE SEQUENCE public.ticket_seq MAXVALUE 1000;
     SELECT setval('public.ticket_seq', 900);
     CREATE FUNCTION public.region_label(r int) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT 'region ' || r $$;
     ALTER TABLE public.accounts ADD CONSTRAINT accounts_region_known CHECK (region >= 0) NOT VALID;
     CREATE TABLE public.logins (account_id bigint NOT NULL, at timestamptz NOT NULL);
     INSERT INTO public.logins SELECT 1 + g % 40000, '2024-01-01'::timestamptz + g * interval '1 minute'
       FROM generate_series(1, 40000) AS g;
     ANALYZE public.logins;
     CREATE TYPE public.tier AS ENUM ('free', 'paid');
     CREATE FUNCTION public.touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
     CREATE TRIGGER accounts_touch BEFORE UPDATE ON public.accounts FOR EACH ROW EXECUTE FUNCTION public.touch();
     ANALYZE public.accounts;`,
  )
  // Dead rows autovacuum will not clean (off for this table), and an index left at twenty times
  // the size its remaining rows need.
  await adminQuery(
    scratch.superuserUrl,
    `CREATE TABLE public.churn (id int, label text) WITH (autovacuum_enabled = off);
     INSERT INTO public.churn SELECT g, 'label number ' || g FROM generate_series(1, 60000) AS g;
     CREATE INDEX churn_label_idx ON public.churn (label);
     DELETE FROM public.churn WHERE id > 3000;`,
  )
  await adminQuery(scratch.superuserUrl, 'VACUUM public.churn')
  await adminQuery(scratch.superuserUrl, 'ANALYZE public.churn')
  await adminQuery(
    scratch.superuserUrl,
    `INSERT INTO public.churn SELECT g, 'x' FROM generate_series(1, 2000) AS g; DELETE FROM public.churn WHERE label = 'x'`,
  )
  // Table statistics reach pg_stat_user_tables shortly after the commit.
  await waitFor(async () => {
    const [row] = await adminQuery<{ dead: number }>(
      scratch.superuserUrl,
      "SELECT n_dead_tup::int AS dead FROM pg_stat_user_tables WHERE relname = 'churn'",
    )
    return (row?.dead ?? 0) >= 2000 ? true : undefined
  })
  // Cluster-wide, dropped in afterAll: a slot nobody consumes.
  await adminQuery(
    scratch.superuserUrl,
    "SELECT pg_create_physical_replication_slot('keel_insights_idle_slot')",
  )
  // A failed CREATE UNIQUE INDEX CONCURRENTLY leaves an INVALID index behind, as in production.
  await adminQuery(
    scratch.superuserUrl,
    'CREATE UNIQUE INDEX CONCURRENTLY accounts_region_unique ON public.accounts (region)',
  ).catch(() => undefined)
  // The workload: lookups by email, which no index serves.
  const app = new pg.Client({ connectionString: scratch.url })
  await app.connect()
  try {
    for (let i = 1; i <= 40; i++) await app.query(lookup, [`user${i * 7}@example.com`])
  } finally {
    await app.end()
  }
  client = (await connect(scratch.url)).client
})

afterAll(async () => {
  await adminQuery(
    shared.superuserUrl,
    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'keel_insights_idle_slot'",
  ).catch(() => undefined)
  await closeAll()
  await Promise.all(opened.map((database) => database.close()))
  await scratch?.drop()
})

async function call(name: string, args: Record<string, unknown>) {
  return client.callTool({ name, arguments: args })
}

describe('get_top_queries', () => {
  it('lists the lookup workload from pg_stat_statements with its numbers', async () => {
    const result = await call('get_top_queries', { order_by: 'calls', limit: 5 })
    expect(result.isError, textOf(result)).toBeFalsy()
    const top = result.structuredContent.queries.find((entry: { query: string }) =>
      entry.query.includes('WHERE email = $1'),
    )
    expect(top).toMatchObject({ calls: 40, rows: 40 })
    expect(top.meanTimeMs).toBeGreaterThan(0)
    expect(top.sharedHitRatio).toBeGreaterThan(0)
    expect(textOf(result)).toContain('40 calls')
  })

  it('says how to install pg_stat_statements where it is missing', async () => {
    const other = (await connect(shared.url)).client
    const result = await other.callTool({ name: 'get_top_queries', arguments: {} })
    expect(errorKind(result)).toBe('unavailable')
    expect(textOf(result)).toContain('not installed')
    expect(textOf(result)).toContain('CREATE EXTENSION pg_stat_statements')
  })
})

describe('recommend_indexes', () => {
  it('proposes the index on the looked-up column for the workload, costed with hypopg', async () => {
    const result = await call('recommend_indexes', {})
    expect(result.isError, textOf(result)).toBeFalsy()
    const [first] = result.structuredContent.recommendations
    expect(first).toMatchObject({
      definition: 'CREATE INDEX CONCURRENTLY ON public.accounts (email)',
      columns: ['email'],
    })
    expect(first.costAfter).toBeLessThan(first.costBefore / 10)
    expect(first.estimatedBytes).toBeGreaterThan(0)
    expect(textOf(result)).toContain('never creates indexes')
  })

  it('proposes it for one query, and nothing was created', async () => {
    const result = await call('recommend_indexes', { sql: lookup, params: ['user1@example.com'] })
    expect(result.structuredContent.recommendations[0].columns).toEqual(['email'])
    const indexes = await adminQuery<{ count: number }>(
      scratch.superuserUrl,
      "SELECT count(*)::int AS count FROM pg_indexes WHERE tablename = 'accounts' AND indexdef LIKE '%(email)%'",
    )
    expect(indexes[0]?.count).toBe(0)
  })
})

describe('recommend_indexes from joins and orderings', () => {
  it.each([
    [
      'the join column of the inner table',
      'SELECT count(*) FROM public.accounts a JOIN public.logins l ON l.account_id = a.id WHERE a.id = $1',
      'CREATE INDEX CONCURRENTLY ON public.logins (account_id)',
    ],
    [
      'the column of ORDER BY … LIMIT',
      'SELECT id, note FROM public.accounts ORDER BY note LIMIT 10',
      'CREATE INDEX CONCURRENTLY ON public.accounts (note)',
    ],
  ])('proposes %s', async (_label, sql, definition) => {
    const result = await call('recommend_indexes', { sql })
    expect(result.isError, textOf(result)).toBeFalsy()
    expect(
      result.structuredContent.recommendations.map((entry: { definition: string }) => entry.definition),
    ).toContain(definition)
  })
})

describe('explain_query with hypothetical indexes', () => {
  it('shows the lower cost and that the plan uses the index', async () => {
    const result = await call('explain_query', {
      sql: lookup,
      params: ['user5@example.com'],
      hypothetical_indexes: [
        'CREATE INDEX ON public.accounts (email)',
        'CREATE INDEX ON public.accounts (note)',
      ],
    })
    expect(result.isError, textOf(result)).toBeFalsy()
    const data = result.structuredContent
    expect(data.costAfter).toBeLessThan(data.costBefore / 10)
    expect(data.hypotheticalIndexes.map((index: { used: boolean }) => index.used)).toEqual([true, false])
    expect(textOf(result)).toMatch(/Estimated cost [\d.]+ → [\d.]+/)
    expect(textOf(result)).toContain('Used: CREATE INDEX ON public.accounts (email)')
  })

  it.each([
    ['DROP TABLE public.accounts'],
    ['CREATE INDEX ON public.accounts (email); DROP TABLE public.accounts'],
    ["CREATE INDEX ON public.accounts ((pg_read_file('/etc/passwd')))"],
    ["CREATE INDEX ON public.accounts ((nextval('public.ticket_seq')))"],
    ['CREATE TABLE public.evil (id int)'],
  ])('refuses %j as a hypothetical index', async (definition) => {
    const result = await call('explain_query', { sql: lookup, hypothetical_indexes: [definition] })
    expect(result.isError).toBe(true)
    expect(['permission_denied', 'invalid_argument']).toContain(errorKind(result))
  })

  it('leaves no hypothetical index behind on the backend, after success and after failure', async () => {
    const database = new Database({ connectionString: scratch.url, poolSize: 1 })
    opened.push(database)
    const state = async () =>
      (
        await database.readQuery(
          'SELECT pg_backend_pid(), (SELECT count(*)::int FROM public.hypopg_list_indexes)',
        )
      ).rows[0]
    const [pid] = (await state()) as [number, number]
    const run = <T>(work: (c: pg.PoolClient) => Promise<T>) => database.transaction({}, work)
    await explainWithHypotheticalIndexes(run, lookup, ['CREATE INDEX ON public.accounts (email)'], [])
    expect(await state()).toEqual([pid, 0])
    // The first index exists when the second fails: the reset after the call drops it too.
    await expect(
      explainWithHypotheticalIndexes(
        run,
        lookup,
        ['CREATE INDEX ON public.accounts (email)', 'CREATE INDEX ON public.accounts (no_such_column)'],
        [],
      ),
    ).rejects.toThrow()
    expect(await state()).toEqual([pid, 0])
  })
})

describe('analyze_db_health', () => {
  it('reports the invalid index, the unused duplicate and the sequence at 90 % with what to do', async () => {
    const result = await call('analyze_db_health', {})
    expect(result.isError, textOf(result)).toBeFalsy()
    const findings = result.structuredContent.findings as Array<Record<string, string>>
    const of = (check: string) => findings.filter((finding) => finding.check === check)
    expect(of('invalid_indexes')).toContainEqual(
      expect.objectContaining({
        object: 'public.accounts_region_unique',
        action: expect.stringContaining('REINDEX INDEX CONCURRENTLY public.accounts_region_unique'),
      }),
    )
    expect(of('duplicate_indexes')).toEqual([
      expect.objectContaining({
        object: 'public.accounts_region_copy_idx',
        message: expect.stringContaining('duplicates public.accounts_region_idx'),
      }),
    ])
    expect(of('unused_indexes').map((finding) => finding.object)).toContain('public.accounts_region_copy_idx')
    expect(of('sequences')).toEqual([
      expect.objectContaining({
        object: 'public.ticket_seq',
        severity: 'critical',
        message: expect.stringContaining('900 of 1000: 90.0 % used'),
      }),
    ])
    expect(of('constraints')).toEqual([
      expect.objectContaining({
        object: 'public.accounts.accounts_region_known',
        action: 'ALTER TABLE public.accounts VALIDATE CONSTRAINT accounts_region_known;',
      }),
    ])
    expect(of('replication')).toContainEqual(
      expect.objectContaining({ object: 'keel_insights_idle_slot', severity: 'warning' }),
    )
    expect(of('bloated_indexes')).toContainEqual(
      expect.objectContaining({
        object: 'public.churn_label_idx',
        action: 'REINDEX INDEX CONCURRENTLY public.churn_label_idx;',
      }),
    )
    expect(of('vacuum')).toContainEqual(
      expect.objectContaining({
        object: 'public.churn',
        message: expect.stringMatching(
          /^Table public\.churn has \d+ dead rows \(3000 live; autovacuum starts at \d+\)/,
        ),
      }),
    )
    for (const check of ['wraparound', 'connections', 'cache_hit_ratio']) expect(of(check)).toHaveLength(1)
    expect(Object.keys(result.structuredContent.checks)).toHaveLength(11)
  })
})

describe('the monitoring allow-list through the query tool', () => {
  it('reads pg_stat_statements', async () => {
    const result = await call('query', { sql: 'SELECT count(*) > 0 FROM pg_stat_statements' })
    expect(result.isError, textOf(result)).toBeFalsy()
    expect(result.structuredContent.rows).toEqual([[true]])
  })

  it.each([
    'SELECT pg_stat_statements_reset()',
    "SELECT * FROM hypopg_create_index('CREATE INDEX ON public.accounts (email)')",
    'SELECT * FROM hypopg_list_indexes',
    'SELECT hypopg_reset()',
  ])('still refuses %s', async (sql) => {
    const result = await call('query', { sql })
    expect(errorKind(result)).toBe('permission_denied')
  })

  it('refuses pg_stat_statements once an overload of the name exists that is not on the list', async () => {
    await adminQuery(
      scratch.superuserUrl,
      `CREATE SCHEMA forged;
       CREATE FUNCTION forged.pg_stat_statements(showtext int) RETURNS int LANGUAGE sql VOLATILE AS 'SELECT 1';`,
    )
    try {
      const result = await call('query', { sql: 'SELECT count(*) FROM pg_stat_statements' })
      expect(errorKind(result)).toBe('permission_denied')
      expect(textOf(result)).toContain('forged.pg_stat_statements()')
    } finally {
      await adminQuery(scratch.superuserUrl, 'DROP SCHEMA forged CASCADE')
    }
  })
})

describe('list_objects and describe_object', () => {
  it('lists sequences with the share used, extensions, functions with signature and volatility', async () => {
    const sequences = await call('list_objects', { kind: 'sequence', schema: 'public' })
    expect(textOf(sequences)).toContain('public.ticket_seq: bigint, at 900 of 1000 (90.00 % used)')
    const extensions = await call('list_objects', { kind: 'extension' })
    expect(extensions.structuredContent.objects.map((object: { name: string }) => object.name)).toEqual(
      expect.arrayContaining(['hypopg', 'pg_stat_statements', 'plpgsql']),
    )
    const functions = await call('list_objects', { kind: 'function', schema: 'public' })
    expect(textOf(functions)).toContain('region_label(r integer) → text, immutable, sql')
    // Extension members are listed under their extension, not one by one.
    expect(textOf(functions)).not.toContain('hypopg_create_index')
    const triggers = await call('list_objects', { kind: 'trigger' })
    expect(textOf(triggers)).toContain(
      'public.accounts_touch: on public.accounts: BEFORE UPDATE ON public.accounts FOR EACH ROW EXECUTE FUNCTION touch()',
    )
    const types = await call('list_objects', { kind: 'type', schema: 'public' })
    expect(textOf(types)).toContain("public.tier: enum ('free', 'paid')")
    const tables = await call('list_objects', { kind: 'table', schema: 'public' })
    expect(textOf(tables)).toContain('public.accounts')
  })

  it('describes a sequence, a function and an extension', async () => {
    const sequence = await call('describe_object', { kind: 'sequence', name: 'ticket_seq' })
    expect(sequence.structuredContent.entries[0]).toMatchObject({
      last_value: '900',
      max: '1000',
      percent_used: 90,
    })
    const fn = await call('describe_object', { kind: 'function', name: 'region_label' })
    expect(fn.structuredContent.entries[0]).toMatchObject({
      signature: 'region_label(r integer)',
      volatility: 'immutable',
      language: 'sql',
    })
    const extension = await call('describe_object', { kind: 'extension', name: 'hypopg' })
    expect(extension.structuredContent.entries[0]).toMatchObject({ version: expect.any(String) })
    const missing = await call('describe_object', { kind: 'type', name: 'no_such_type' })
    expect(errorKind(missing)).toBe('not_found')
  })
})
