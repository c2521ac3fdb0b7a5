import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type RawStdio, spawnRaw, type TestClient } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Database } from '../src/lib/database.js'
import { SqlRefusedError } from '../src/lib/errors.js'
import { readOnlyVolatileBuiltins } from '../src/lib/function-gate.js'
import { deniedFunctionReason } from '../src/lib/sql-guard.js'
import { adminQuery, createScratchDatabase, seedSampleSchema, sharedPostgres } from './harness/index.js'
import { closeAll, connect, errorKind, textOf, withApplicationName } from './helpers.js'

/**
 * The second attack pass: what the name-based gate missed. Functions are judged by the catalog
 * (PUBLIC execute privilege, volatility), whatever their name; nothing a call does to its session
 * survives it; every connection parses strings as the gate does; and no result can exhaust the
 * server's memory.
 */
const shared = sharedPostgres()
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))

let scratch: Awaited<ReturnType<typeof createScratchDatabase>>

beforeAll(async () => {
  scratch = await createScratchDatabase(shared.superuserUrl, shared.url)
  await seedSampleSchema(scratch.superuserUrl, { readerRole: shared.readerRole })
  // Objects the parser gate cannot see into: they lie about their volatility (STABLE), so only the
  // session reset stands between them and the next call.
  await adminQuery(
    scratch.superuserUrl,
    `CREATE FUNCTION public.grab(k bigint) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
       BEGIN PERFORM pg_advisory_lock(k); RETURN k; END $$;
     CREATE VIEW public.grabbed AS SELECT public.grab(4212) AS k;
     CREATE FUNCTION public.leak_prepared() RETURNS int LANGUAGE plpgsql AS $$
       BEGIN EXECUTE 'PREPARE keel_leak AS SELECT 1'; RETURN 1; END $$;
     CREATE FUNCTION public.leak_setting() RETURNS text LANGUAGE sql STABLE AS
       $$ SELECT set_config('work_mem', '1234kB', false) $$;
     CREATE FUNCTION public.volatile_thing() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;`,
  )
})

afterAll(async () => {
  await closeAll()
  await scratch?.drop()
})

const who = [
  ['a superuser', () => scratch.superuserUrl],
  ['a plain role', () => scratch.url],
] as const

describe.each(who)('functions judged by the catalog, connected as %s', (_who, url) => {
  let client: TestClient
  beforeAll(async () => {
    client = (await connect(url(), { argv: ['--pool-size', '2'] })).client
  })

  it.each([
    ["SELECT pg_read_file_old('/etc/passwd', 0, 4000)", 'pg_read_file_old'],
    ["SELECT pg_catalog.pg_read_file_old('PG_VERSION', 0, 10)", 'pg_read_file_old'],
    ['SELECT * FROM pg_hba_file_rules', 'pg_hba_file_rules'],
    ['SELECT * FROM pg_catalog.pg_file_settings', 'pg_show_all_file_settings'],
    ['SELECT count(*) FROM (SELECT * FROM pg_hba_file_rules) AS r', 'pg_hba_file_rules'],
    ['SELECT pg_ls_waldir()', 'pg_ls_waldir'],
    ['SELECT public.volatile_thing()', 'volatile_thing'],
    ["SELECT currval('shop.invoice_number_seq')", 'currval'],
    ['SELECT * FROM shop.orders WHERE public.volatile_thing() = 1', 'volatile_thing'],
  ])('refuses %j, naming %s', async (sql, name) => {
    const result = await client.callTool({ name: 'query', arguments: { sql } })
    expect(result.isError, textOf(result)).toBe(true)
    expect(errorKind(result)).toBe('permission_denied')
    expect(textOf(result)).toContain(name)
  })

  it('refuses analyzing a volatile call but shows its plain plan', async () => {
    const sql = 'SELECT public.volatile_thing()'
    const plan = await client.callTool({ name: 'explain_query', arguments: { sql } })
    expect(plan.isError, textOf(plan)).toBeFalsy()
    const analyzed = await client.callTool({ name: 'explain_query', arguments: { sql, analyze: true } })
    expect(errorKind(analyzed)).toBe('permission_denied')
  })

  it.each([
    'SELECT id, price, rank() OVER (ORDER BY price DESC) FROM shop.products',
    'WITH big AS (SELECT * FROM shop.products WHERE price > 10) SELECT count(*) FROM big',
    'SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY unit_price * quantity) FROM shop.order_items',
    "SELECT jsonb_build_object('n', count(*)) -> 'n' FROM shop.orders",
    "SELECT to_tsvector('english', 'keel servers') @@ plainto_tsquery('english', 'server')",
    'SELECT random() < 2, clock_timestamp() IS NOT NULL, gen_random_uuid() IS NOT NULL',
    "SELECT pg_size_pretty(pg_total_relation_size('shop.orders'))",
    'SELECT count(*) >= 1 FROM pg_stat_activity',
    "SELECT now() - interval '1 day' < now(), date_trunc('month', now()) <= now()",
    "SELECT coalesce(NULL, 'x') || 'y', length('abc') + 1, 2 * 3 % 4",
  ])('still runs analytics: %j', async (sql) => {
    const result = await client.callTool({ name: 'query', arguments: { sql } })
    expect(result.isError, textOf(result)).toBeFalsy()
  })
})

/**
 * Every function in pg_proc (catalog and installed extensions), called by its qualified name: the
 * gate refuses exactly those the rules refuse, and lets through those they allow.
 */
describe.each(who)('every function of pg_proc, connected as %s', (_who, url) => {
  let db: Database
  beforeAll(() => {
    db = new Database({ connectionString: url(), poolSize: 2 })
  })
  afterAll(async () => {
    await db.close()
  })

  it('refuses each function not executable by PUBLIC or volatile (outside the read-only list), and no other', async () => {
    const functions = await adminQuery<{
      schema: string
      name: string
      public_execute: boolean
      volatile: boolean
    }>(
      url(),
      `SELECT n.nspname AS schema, p.proname AS name,
              has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute,
              p.provolatile = 'v' AS volatile
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace`,
    )
    expect(functions.length).toBeGreaterThan(2500)
    // A name is refused when any overload of it is (the gate cannot know which one a call picks).
    const refusedByRule = new Map<string, boolean>()
    for (const fn of functions) {
      const key = `${fn.schema}.${fn.name}`
      const allowedVolatile = fn.schema === 'pg_catalog' && readOnlyVolatileBuiltins.has(fn.name)
      const refused = !fn.public_execute || (fn.volatile && !allowedVolatile)
      refusedByRule.set(key, (refusedByRule.get(key) ?? false) || refused)
    }
    const wrong: string[] = []
    for (const [key, refused] of refusedByRule) {
      const [schema, name] = key.split('.') as [string, string]
      const sql = `SELECT "${schema}"."${name.replaceAll('"', '""')}"()`
      let gateRefused = false
      try {
        await db.check(sql)
      } catch (error) {
        if (!(error instanceof SqlRefusedError)) throw error
        gateRefused = true
      }
      // The parser's name list still refuses some functions the catalog allows (pg_cancel_backend…).
      const expected = refused || deniedFunctionReason(name) !== undefined
      if (gateRefused !== expected) wrong.push(`${key}: gate ${gateRefused ? 'refused' : 'allowed'}`)
    }
    expect(wrong).toEqual([])
  }, 240_000)
})

describe.each(who)('no effect of a call survives it, connected as %s', (_who, url) => {
  const application = `keel-survival-${Math.random().toString(36).slice(2, 8)}`
  let client: TestClient
  beforeAll(async () => {
    // leak_prepared is VOLATILE (PostgreSQL refuses PREPARE in a STABLE function): allowed here on
    // purpose, to show the reset holds whatever the gate lets through.
    const argv = ['--pool-size', '1', '--allow-functions', 'public.leak_prepared']
    client = (await connect(withApplicationName(url(), application), { argv })).client
  })

  const advisoryLocks = () =>
    adminQuery<{ n: string }>(
      shared.superuserUrl,
      `SELECT count(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND a.application_name = $1`,
      [application],
    )

  it.each([
    'SELECT public.grab(4211)',
    'SELECT * FROM public.grabbed',
    'SELECT k FROM public.grabbed WHERE k > 0',
  ])('leaves no advisory lock after %j', async (sql) => {
    const result = await client.callTool({ name: 'query', arguments: { sql } })
    expect(result.isError, textOf(result)).toBeFalsy()
    expect(await advisoryLocks()).toEqual([{ n: '0' }])
  })

  it('leaves no prepared statement and no setting behind', async () => {
    for (const sql of ['SELECT public.leak_prepared()', 'SELECT public.leak_setting()']) {
      const result = await client.callTool({ name: 'query', arguments: { sql } })
      expect(result.isError, textOf(result)).toBeFalsy()
    }
    // One pooled connection: the next calls run on the same session.
    const prepared = await client.callTool({
      name: 'query',
      arguments: { sql: 'SELECT count(*) FROM pg_prepared_statements' },
    })
    expect(prepared.structuredContent.rows).toEqual([['0']])
    const setting = await client.callTool({
      name: 'query',
      arguments: { sql: "SELECT current_setting('work_mem')" },
    })
    expect(setting.structuredContent.rows[0][0]).not.toBe('1234kB')
  })
})

describe('a database and role configured the legacy way (standard_conforming_strings = off)', () => {
  let legacy: Awaited<ReturnType<typeof createScratchDatabase>>
  const attack = "SELECT 'x\\' , ' , pg_read_file($$/etc/hostname$$) --'"
  beforeAll(async () => {
    legacy = await createScratchDatabase(shared.superuserUrl, shared.url)
    const name = new URL(legacy.url).pathname.slice(1)
    await adminQuery(shared.superuserUrl, `ALTER DATABASE "${name}" SET standard_conforming_strings = off`)
    await adminQuery(shared.superuserUrl, `ALTER DATABASE "${name}" SET escape_string_warning = off`)
    const role = decodeURIComponent(new URL(legacy.url).username)
    await adminQuery(
      shared.superuserUrl,
      `ALTER ROLE "${role}" IN DATABASE "${name}" SET standard_conforming_strings = off`,
    )
  })
  afterAll(async () => {
    await legacy?.drop()
  })

  it('really is legacy for a plain connection', async () => {
    const rows = await adminQuery<{ s: string }>(
      legacy.superuserUrl,
      "SELECT current_setting('standard_conforming_strings') AS s",
    )
    expect(rows).toEqual([{ s: 'off' }])
  })

  it.each([
    ['a superuser', () => legacy.superuserUrl],
    ['a plain role', () => legacy.url],
  ])('reads the attack as two string literals, as the gate does, connected as %s', async (_who, url) => {
    const { client } = await connect(url())
    const result = await client.callTool({ name: 'query', arguments: { sql: attack } })
    expect(result.isError, textOf(result)).toBeFalsy()
    const hostname = readFileSync('/etc/hostname', 'utf8').trim()
    expect(result.structuredContent.rows).toEqual([['x\\', ' , pg_read_file($$/etc/hostname$$) --']])
    expect(JSON.stringify(result.structuredContent)).not.toContain(`${hostname}\\n`)
    const setting = await client.callTool({
      name: 'query',
      arguments: { sql: "SELECT current_setting('standard_conforming_strings')" },
    })
    expect(setting.structuredContent.rows).toEqual([['on']])
  })
})

/** Peak memory of a process, in bytes (VmHWM). */
function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024
}

describe('no result exhausts the server (the built bin, a byte budget on the wire)', () => {
  let raw: RawStdio
  let idle = 0
  beforeAll(async () => {
    raw = spawnRaw(process.execPath, [BIN, '--pool-size', '2'], { env: { DATABASE_URL: shared.url } })
    await raw.initialize()
    // Warm the pool and the parser, then take the baseline.
    await raw.request('tools/call', { name: 'query', arguments: { sql: 'SELECT 1' } })
    idle = peakRss(raw.child.pid ?? 0)
  })
  afterAll(async () => {
    await raw?.end()
  })

  it.each([
    ["SELECT repeat('x', 600000000)", {}],
    ["SELECT repeat('x', 300000000) FROM generate_series(1, 20)", {}],
    ["SELECT repeat('x', 20000) FROM generate_series(1, 100000)", { max_rows: 100000 }],
  ])(
    'stops %j with a too_large error and stays within 256 MiB of idle',
    async (sql, extra) => {
      // PostgreSQL itself needs seconds to build values this large: wait for the answer longer.
      const id = `big-${Math.random()}`
      const call = { name: 'query', arguments: { sql, ...extra } }
      raw.sendJson({ jsonrpc: '2.0', id, method: 'tools/call', params: call })
      const result = (await raw.next((message) => message?.id === id, 110_000)).result
      expect(result.isError, JSON.stringify(result).slice(0, 300)).toBe(true)
      expect(result.content[0].text).toMatch(/^too_large: /)
      expect(result.content[0].text).toContain('Hint:')
      expect(peakRss(raw.child.pid ?? 0) - idle).toBeLessThan(256 * 1024 * 1024)
      const after = await raw.request('tools/call', { name: 'query', arguments: { sql: 'SELECT 2 AS n' } })
      expect(after.result.isError).toBeFalsy()
    },
    120_000,
  )
})
