import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestIssuer } from '../../../packages/core/test/oauth-issuer.js'
import { type Nginx, type Replica, stopAll } from '../src/harness.js'
import { oauthClient, startOAuthCluster } from './oauth-cluster.js'

// A replica dies under an OAuth session: the replica that takes over the session's resource
// subscription restores the session as its owner's, so updates keep coming and the owner's calls
// keep working on every replica left. (A cluster of its own: a replica is killed.)

let issuer: TestIssuer
let replicas: Replica[]
let nginx: Nginx

beforeAll(async () => {
  ;({ issuer, replicas, nginx } = await startOAuthCluster())
})
afterAll(async () => {
  await stopAll()
  await issuer?.close()
})

const running = (replica: Replica) => replica.child.exitCode === null && replica.child.signalCode === null

/** Replicas whose log says they watch the ticks resource now. */
const watching = () =>
  replicas.filter((replica) => {
    const log = replica.stderr()
    return (
      running(replica) &&
      (log.match(/(?<!stopped )watching ticks on/g) ?? []).length >
        (log.match(/stopped watching ticks on/g) ?? []).length
    )
  })

/** Waits (bounded: 40 s) until `condition` holds. */
async function until(what: string, condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 400 && !condition(); attempt++)
    await new Promise((wake) => setTimeout(wake, 100))
  if (!condition()) throw new Error(`timed out waiting for ${what}`)
}

describe('an OAuth session when the replica watching its subscription dies', () => {
  it('has the subscription taken over for its owner, and the owner keeps the session on every replica left', async () => {
    const { mcp, transport } = oauthClient(issuer, nginx.url, 'writer')
    let updates = 0
    mcp.setNotificationHandler('notifications/resources/updated', (notification) => {
      if (notification.params.uri === 'replica://ticks') updates++
    })
    await mcp.connect(transport)
    try {
      await mcp.subscribeResource({ uri: 'replica://ticks' })
      await until('updates', () => updates >= 3)
      // Subscribing again reaches another replica (round robin): it watches, the first one stops.
      await mcp.subscribeResource({ uri: 'replica://ticks' })
      await until('one watcher', () => watching().length === 1)
      const [watcher] = watching() as [Replica]
      await watcher.kill()
      const before = updates
      await until('updates after the watcher died', () => updates >= before + 3)
      await until('a new watcher', () => watching().length === 1)
      expect(watching()[0]).not.toBe(watcher)
      expect(replicas.map((replica) => replica.stderr()).join('\n')).toMatch(
        /took over a subscription from a replica that is gone/,
      )
      // The replica that took over restored the session as the owner's: the owner's calls work
      // on both replicas left (whichever of them restored it first).
      const left = replicas.filter(running)
      const pids = new Set<number>()
      for (let call = 0; call < 6; call++) {
        const who = (await mcp.callTool({ name: 'whoami' })).structuredContent as {
          pid: number
          subject: string
        }
        expect(who.subject).toBe('writer')
        pids.add(who.pid)
      }
      expect(pids).toEqual(new Set(left.map((replica) => replica.pid)))
    } finally {
      await mcp.close()
    }
  })
})
