import { afterAll, describe, expect, it } from 'vitest'
import { Database } from '../../src/lib/database.js'
import { classifyPgError, ResultTooLargeError } from '../../src/lib/errors.js'
import { adminQuery, sharedPostgres, waitFor } from '../harness/index.js'
import { rejection } from './rejection.js'

/**
 * The row cap is not a memory cap: a byte budget is enforced while rows arrive. Past it the call
 * fails with a tool error saying how to narrow the query, the statement stops on the server and
 * the pool serves the next call. (The process's peak memory is measured on the built bin in
 * test/memory.test.ts.)
 */
const shared = sharedPostgres()
const opened: Database[] = []
afterAll(async () => {
  await Promise.all(opened.map((database) => database.close()))
})

// The 600 MB value and the 20 rows of 300 MB take seconds of server time each; they run once per
// role against the built bin in test/memory.test.ts.
const oversizedQueries: ReadonlyArray<readonly [name: string, sql: string, maxRows: number]> = [
  [
    '100,000 rows of 20 kB with max_rows 100000',
    "SELECT repeat('x', 20000) FROM generate_series(1, 100000)",
    100_000,
  ],
  ['one 40 MB value', "SELECT repeat('x', 40000000)", 200],
]

describe.each([
  ['a superuser', () => shared.superuserUrl],
  ['a plain role', () => shared.url],
])('the byte budget of one call, connected as %s', (_who, url) => {
  it.each(oversizedQueries)(
    'stops %s with an error that says how to narrow the query',
    async (name, sql, maxRows) => {
      const applicationName = `keel-budget-${name.length}-${Math.random().toString(36).slice(2, 8)}`
      const target = new URL(url())
      target.searchParams.set('application_name', applicationName)
      const database = new Database({ connectionString: target.toString(), poolSize: 2 })
      opened.push(database)
      const error = await rejection(database.query(sql, [], { maxRows }))
      expect(error).toBeInstanceOf(ResultTooLargeError)
      const classified = classifyPgError(error)
      expect(classified.kind).toBe('invalid_argument')
      expect(classified.message).toContain('32 MiB')
      expect(classified.hint).toMatch(/LIMIT/)
      await waitFor(
        async () => {
          const active = await adminQuery(
            shared.superuserUrl,
            `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'`,
            [applicationName],
          )
          return active.length === 0 ? true : undefined
        },
        10_000,
        'the statement to stop on the server',
      )
      expect((await database.query('SELECT 1')).rows).toEqual([[1]])
    },
  )

  it('lets a result just under the budget through', async () => {
    const database = new Database({ connectionString: url(), maxResultBytes: 4 * 1024 * 1024 })
    opened.push(database)
    const result = await database.query("SELECT repeat('x', 1000) FROM generate_series(1, 3000)", [], {
      maxRows: 3000,
    })
    expect(result.rowCount).toBe(3000)
    const error = await rejection(
      database.query("SELECT repeat('x', 1000) FROM generate_series(1, 5000)", [], { maxRows: 5000 }),
    )
    expect(error).toBeInstanceOf(ResultTooLargeError)
    expect(classifyPgError(error).message).toContain('4 MiB')
  })
})
