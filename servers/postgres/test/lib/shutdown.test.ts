import pg from 'pg'
import { afterAll, expect, it } from 'vitest'
import { cancelBackend } from '../../src/lib/cancellation.js'
import { sharedPostgres, waitFor } from '../harness/index.js'
import { activeBackends, SLOW_QUERY, withApplicationName } from '../helpers.js'

/**
 * A cancel wants a second pool connection; at shutdown the pool can be ended right after that
 * request was queued, and an ending pool never serves a request queued before its end. The cancel
 * must then fall back to the protocol's cancel instead of waiting forever (as it did: the server's
 * dispose hung until its deadline).
 */
const shared = sharedPostgres()
const applicationName = 'keel-mcp-test-shutdown'
const pool = new pg.Pool({ connectionString: withApplicationName(shared.url, applicationName), max: 3 })
afterAll(() => pool.end().catch(() => undefined))

it('cancels through the protocol when the pool ends while the cancel waits for a connection', async () => {
  const [target, idle] = await Promise.all([pool.connect(), pool.connect()])
  idle.release() // an idle connection: a request for one is queued and served on the next tick
  const running = target.query(SLOW_QUERY)
  running.catch(() => undefined)
  await waitFor(async () =>
    (await activeBackends(shared.superuserUrl, applicationName)).length ? true : undefined,
  )
  // The pool ends right after the cancel's request for a connection is queued, as at shutdown.
  const ending = Object.create(pool) as pg.Pool
  ending.connect = (() => {
    const request = pool.connect()
    void pool.end()
    return request
  }) as pg.Pool['connect']
  await cancelBackend(target, { getPool: async () => ending, poolSize: 3, broken: new WeakSet() })
  await expect(running).rejects.toThrow(/cancel/)
  target.release(true)
})
