import { afterAll, describe, expect, it } from 'vitest'
import { Database, parserWarmUps } from '../src/lib/database.js'
import { checkReadOnlySql, forgetVerdicts, verdictKept } from '../src/lib/sql-guard.js'
import { adminQuery, sharedPostgres, waitFor } from './harness/index.js'
import { closeAll, connect, withApplicationName } from './helpers.js'

/**
 * The first call costs what a warm one does: the server connects after the client's initialize,
 * before any call, and sizes its pool by what the database has to spare.
 */
const shared = sharedPostgres()
const opened: Database[] = []

afterAll(async () => {
  await closeAll()
  await Promise.all(opened.map((database) => database.close()))
})

const backends = (applicationName: string) =>
  adminQuery<{ count: number }>(
    shared.superuserUrl,
    'SELECT count(*)::int AS count FROM pg_stat_activity WHERE application_name = $1',
    [applicationName],
  ).then((rows) => rows[0]?.count ?? 0)

describe('warm-up after initialize', () => {
  it('opens a connection after initialize, before any call, on every database', async () => {
    const first = 'keel-mcp-test-warm-default'
    const second = 'keel-mcp-test-warm-second'
    expect(await backends(first)).toBe(0)
    await connect(withApplicationName(shared.url, first), {
      argv: ['--database', `second=${withApplicationName(shared.url, second)}`],
    })
    await waitFor(async () =>
      (await backends(first)) > 0 && (await backends(second)) > 0 ? true : undefined,
    )
  })
})

describe('the warm-up judges statements of the shapes models write', () => {
  it('through the parser gate, which accepts each, and prepares the function policy on both its connections', async () => {
    const applicationName = 'keel-mcp-test-warm-shapes'
    const database = new Database({ connectionString: withApplicationName(shared.url, applicationName) })
    opened.push(database)
    // Other files in this worker may have judged them already: start from no kept verdict.
    forgetVerdicts()
    await database.warmUp()
    // Judged by the gate during the warm-up: each verdict is kept, and each accepts the statement.
    for (const sql of parserWarmUps) {
      expect(verdictKept(sql), sql).toBe(true)
      expect((await checkReadOnlySql(sql)).ok, sql).toBe(true)
    }
    // Both of the policy's connections are open, and each has run every query the policy may
    // send (so each is prepared there): the last of them is the one a refusal's message asks.
    const backendsNow = await adminQuery<{ query: string }>(
      shared.superuserUrl,
      'SELECT query FROM pg_stat_activity WHERE application_name = $1',
      [applicationName],
    )
    const policy = backendsNow.filter((row) => row.query.startsWith('SELECT via FROM ('))
    expect(policy).toHaveLength(2)
  })
})

describe('the pool size', () => {
  it('is capped at half the connections the server has free', async () => {
    const database = new Database({ connectionString: shared.url, poolSize: 100 })
    opened.push(database)
    await database.warmUp()
    const [row] = await adminQuery<{ free: number }>(
      shared.superuserUrl,
      `SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int
              - (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend') AS free`,
    )
    expect(database.poolSize).toBeLessThan(100)
    // The policy's two connections opened after the pool was sized: free then was two more.
    expect(database.poolSize).toBeLessThanOrEqual(Math.ceil(((row?.free ?? 0) + 2 + 2) / 2))
    expect(database.poolSize).toBeGreaterThanOrEqual(2)
  })

  it('keeps a configured size that fits, and defaults to 10', async () => {
    const small = new Database({ connectionString: shared.url, poolSize: 3 })
    const standard = new Database({ connectionString: shared.url })
    opened.push(small, standard)
    await Promise.all([small.warmUp(), standard.warmUp()])
    expect(small.poolSize).toBe(3)
    expect(standard.poolSize).toBe(10)
  })
})
