import { connectHttp } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Nginx, type RedisServer, type Replica, startCluster, stopAll } from '../src/harness.js'
import { openSession, post } from './wire.js'

// Redis going away and coming back (empty: the tests run it without persistence): requests get
// clear errors while it is away, never hang, the replicas stay up, and new sessions work after.

let redis: RedisServer
let replicas: Replica[]
let nginx: Nginx

beforeAll(async () => {
  ;({ redis, replicas, nginx } = await startCluster(3))
})
afterAll(stopAll)

describe('Redis restarted mid-run', () => {
  it('answers 503 while Redis is down, 404 for sessions it lost, and serves new sessions once it is back', async () => {
    const onElicit = () => ({ action: 'accept', content: { name: 'Ada', colour: 'teal' } })
    const before = await connectHttp(nginx.url, { onElicit })
    const session = await openSession(nginx.url)
    try {
      expect((await before.client.callTool({ name: 'whoami' })).isError).toBeFalsy()

      await redis.stop()
      // Every replica answers at once with a clear error (it would otherwise wait on Redis).
      for (const replica of replicas) {
        const response = await post(replica.url, session, { jsonrpc: '2.0', id: 1, method: 'ping' })
        expect(response.status).toBe(503)
        expect(response.headers.get('retry-after')).toBe('2')
        expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
          'Session store unavailable; try again shortly',
        )
      }
      await expect(before.client.callTool({ name: 'whoami' }, { timeout: 60_000 })).rejects.toThrow(
        /503|unavailable/i,
      )
      const refused = await fetch(nginx.url, {
        method: 'POST',
        headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: {},
            clientInfo: { name: 'x', version: '1' },
          },
        }),
      })
      expect(refused.status).toBe(503)
      await refused.text()

      await redis.start()
      // The old session was lost with Redis's memory: a clear 404, on whichever replica.
      let lost: Response | undefined
      for (let attempt = 0; attempt < 50; attempt++) {
        lost = await post(nginx.url, session, { jsonrpc: '2.0', id: 2, method: 'ping' })
        if (lost.status !== 503) break
        await lost.text()
        await new Promise((wake) => setTimeout(wake, 200))
      }
      expect(lost?.status).toBe(404)
      await lost?.text()

      // A new session works on every replica, including answers relayed over pub/sub.
      const after = await connectHttp(nginx.url, { onElicit })
      try {
        const pids = new Set<number>()
        for (let call = 0; call < 6; call++) {
          const who = await after.client.callTool({ name: 'whoami' })
          pids.add((who.structuredContent as { pid: number }).pid)
          const asked = await after.client.callTool({ name: 'ask_name' }, { timeout: 20_000 })
          expect(asked.content[0].text).toMatch(/^Ada likes teal/)
        }
        expect(pids.size).toBe(3)
      } finally {
        await after.close()
      }
      for (const replica of replicas) {
        expect(replica.child.exitCode).toBeNull()
        expect(replica.stderr()).toMatch(/WARN .*the session store is unavailable/)
      }
    } finally {
      await before.close().catch(() => {})
    }
  })
})
