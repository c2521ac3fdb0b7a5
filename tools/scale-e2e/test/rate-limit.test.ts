import { connectHttp } from '@keel-mcp/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { startCluster, startReplicas, stopAll } from '../src/harness.js'

// Per-client rate limits under load: one client hammering its budget is held to it, while another
// client, under its own budget, is served normally — on one process (buckets in memory) and on
// three replicas behind round-robin nginx (buckets in Redis: one budget per client, not one per
// replica). A budget of 3 calls with a refill of 1 a minute makes the count exact on any machine.

afterAll(stopAll)

const LIMIT = ['--rate-limit', '1/m', '--rate-limit-burst', '3']

async function hammer(url: string, calls: number) {
  const connection = await connectHttp(url)
  let served = 0
  const refusals: string[] = []
  try {
    // Concurrent, as a runaway agent would send them.
    const outcomes = await Promise.allSettled(
      Array.from({ length: calls }, () => connection.client.callTool({ name: 'whoami' })),
    )
    for (const outcome of outcomes) {
      if (outcome.status === 'fulfilled' && !outcome.value.isError) served++
      else if (outcome.status === 'rejected') refusals.push(String((outcome.reason as Error)?.message))
    }
    return { served, refusals, connection }
  } catch (error) {
    await connection.close()
    throw error
  }
}

describe.each([
  ['one process', 1],
  ['three replicas sharing Redis behind nginx', 3],
] as const)('rate limits on %s', (_label, count) => {
  it('holds a hammering client to its budget and serves another client under its own', async () => {
    const url =
      count === 1
        ? (await startReplicas(1, { args: LIMIT }))[0]?.url
        : (await startCluster(3, { args: LIMIT })).nginx.url
    if (!url) throw new Error('no server started')
    const greedy = await hammer(url, 12)
    try {
      expect(greedy.served).toBe(3)
      expect(greedy.refusals).toHaveLength(9)
      for (const refusal of greedy.refusals) expect(refusal).toMatch(/429|Too many calls/)
      // Another client (its own session) still has its whole budget.
      const polite = await connectHttp(url)
      try {
        for (let call = 0; call < 3; call++) {
          const result = await polite.client.callTool({ name: 'whoami' })
          expect(result.isError ?? false).toBe(false)
        }
      } finally {
        await polite.close()
      }
      // Listing tools is no tool call: never charged.
      const { tools } = await greedy.connection.client.listTools()
      expect(tools.length).toBeGreaterThan(0)
    } finally {
      await greedy.connection.close()
    }
  }, 120_000)
})

describe('the answer over HTTP', () => {
  it('is 429 with Retry-After and a JSON-RPC error naming the wait', async () => {
    const [replica] = await startReplicas(1, { args: ['--rate-limit', '1/m', '--rate-limit-burst', '1'] })
    if (!replica) throw new Error('no replica')
    // The first call, from a 2026-07-28 client (no session: its budget is its address's).
    const modern = await connectHttp(replica.url, { era: 'modern' })
    try {
      expect((await modern.client.callTool({ name: 'whoami' })).isError ?? false).toBe(false)
    } finally {
      await modern.close()
    }
    const post = (id: number) =>
      fetch(replica.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami' } }),
      })
    const second = await post(2)
    expect(second.status).toBe(429)
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(await second.json()).toMatchObject({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32000, message: expect.stringMatching(/rate limit allows more in \d+ s/) },
    })
  }, 60_000)
})
