import { connectHttp, pythonMcp, runPythonClient } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Nginx, type Replica, startCluster, stopAll } from '../src/harness.js'

// 2026-07-28 change streams (`subscriptions/listen`) behind round-robin nginx and three replicas
// sharing Redis: a stream lands on one replica, which watches what it names and publishes the
// changes on the Redis event bus; every replica's streams get them from there.

let replicas: Replica[]
let nginx: Nginx

beforeAll(async () => {
  await pythonMcp()
  ;({ replicas, nginx } = await startCluster(3))
}, 300_000)
afterAll(stopAll)

const watchers = () =>
  replicas.filter((replica) => {
    const log = replica.stderr()
    return (
      (log.match(/(?<!stopped )watching ticks on/g) ?? []).length >
      (log.match(/stopped watching ticks on/g) ?? []).length
    )
  })

async function until(what: string, condition: () => boolean) {
  for (let attempt = 0; attempt < 200 && !condition(); attempt++)
    await new Promise((wake) => setTimeout(wake, 100))
  if (!condition()) throw new Error(`timed out waiting for ${what}`)
}

describe('subscriptions/listen through nginx', () => {
  it('delivers resource updates to the SDK v2 client and stops watching when the stream closes', async () => {
    const updates: string[] = []
    const connection = await connectHttp(nginx.url, {
      era: 'modern',
      onResourceUpdated: (params) => void updates.push(String(params.uri)),
    })
    try {
      const stream = await connection.client.listen({ resourceSubscriptions: ['replica://ticks'] })
      expect(stream.honored).toEqual({ resourceSubscriptions: ['replica://ticks'] })
      await until('three updates', () => updates.length >= 3)
      expect(new Set(updates)).toEqual(new Set(['replica://ticks']))
      expect(watchers()).toHaveLength(1)
      await stream.close()
      await until('the watch to stop', () => watchers().length === 0)
    } finally {
      await connection.close()
    }
  })

  it('delivers resource updates to the Python MCP SDK (2026-07-28) on successive streams, each watch ending with its stream', async () => {
    const listen = { op: 'listen', uris: ['replica://ticks'], count: 2, timeout: 30 }
    const run = await runPythonClient({ target: { url: nginx.url }, mode: 'auto', steps: [listen, listen] })
    expect(run.protocolVersion).toBe('2026-07-28')
    for (const result of run.results) {
      expect(result).toMatchObject({
        ok: {
          honored: { resourceSubscriptions: ['replica://ticks'] },
          events: [{ uri: 'replica://ticks' }, {}],
        },
      })
    }
    await until('every watch to stop', () => watchers().length === 0)
  })
})
