import { connectHttp } from '@keel-mcp/core/testing'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Nginx, type Replica, startCluster, stopAll } from '../src/harness.js'
import { openSession, post, replicaIdOf, resume, type SseEvent, sseEvents } from './wire.js'

// Resumability across replicas: events are stored in Redis, so a stream resumed with
// Last-Event-ID continues on any replica, even when the replica serving it is killed mid-stream.

let replicas: Replica[]
let nginx: Nginx

// Each test kills a replica: each gets a cluster of its own.
beforeEach(async () => {
  ;({ replicas, nginx } = await startCluster(3))
})
afterEach(stopAll)

interface Seen {
  progress: number[]
  results: string[]
  lastEventId: string | undefined
}

/**
 * Reads SSE events from `events`, recording progress values and results, until `stop` says so
 * (the stream stays open) or the stream ends or breaks.
 */
async function read(
  events: AsyncIterator<SseEvent>,
  seen: Seen,
  stop: (seen: Seen) => boolean,
): Promise<'stopped' | 'ended' | 'broken'> {
  for (;;) {
    let next: IteratorResult<SseEvent>
    try {
      next = await events.next()
    } catch {
      return 'broken'
    }
    if (next.done) return 'ended'
    const event = next.value
    if (event.id) seen.lastEventId = event.id
    if (!event.data) continue
    const message = JSON.parse(event.data)
    if (message.method === 'notifications/progress') seen.progress.push(message.params.progress)
    if (message.result) seen.results.push(message.result.content[0].text)
    if (stop(seen)) return 'stopped'
  }
}

const eventsOf = (response: Response) => sseEvents(response)[Symbol.asyncIterator]()

describe('resuming a stream on another replica', () => {
  it('loses and repeats nothing when the client drops the stream and the replica serving the resumed stream is killed', async () => {
    const ids = new Map(replicas.map((replica) => [replicaIdOf(replica), replica]))
    const session = await openSession(nginx.url)
    const seen: Seen = { progress: [], results: [], lastEventId: undefined }

    // 1. The call runs on replica X; the client drops its stream after 5 progress notifications.
    const dropped = new AbortController()
    const call = await post(
      nginx.url,
      session,
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'count', arguments: { to: 40, step_ms: 50 }, _meta: { progressToken: 'p' } },
      },
      dropped.signal,
    )
    const executor = call.headers.get('x-keel-replica')
    expect(executor && ids.has(executor)).toBe(true)
    expect(await read(eventsOf(call), seen, (s) => s.progress.length >= 5)).toBe('stopped')
    dropped.abort()
    expect(seen.lastEventId).toBeDefined()

    // 2. The client resumes; it lands on a replica Y that is not running the call.
    let second: Response | undefined
    for (let attempt = 0; attempt < 6 && !second; attempt++) {
      const probe = new AbortController()
      const response = await resume(nginx.url, session, seen.lastEventId!, probe.signal)
      expect(response.status).toBe(200)
      if (response.headers.get('x-keel-replica') !== executor) second = response
      else probe.abort()
    }
    expect(second).toBeDefined()
    const streamer = ids.get(second!.headers.get('x-keel-replica')!)!
    const secondEvents = eventsOf(second!)
    expect(await read(secondEvents, seen, (s) => s.progress.length >= 15)).toBe('stopped')

    // 3. Y is killed while its stream is open; the client reads what arrived until the stream
    // breaks, then resumes from its last event id on a replica that is still up.
    await streamer.kill()
    expect(await read(secondEvents, seen, () => false)).not.toBe('stopped')
    const third = await resume(nginx.url, session, seen.lastEventId!)
    expect(third.status).toBe(200)
    expect(third.headers.get('x-keel-replica')).not.toBe(replicaIdOf(streamer))
    expect(await read(eventsOf(third), seen, () => false)).toBe('ended')

    expect(seen.progress).toEqual(Array.from({ length: 40 }, (_, index) => index + 1))
    expect(seen.results).toEqual([`counted to 40 on ${ids.get(executor!)!.pid}`])
  })
})

describe('the replica running a call dies', () => {
  it('ends the resumed stream with a clear error for that request, after every event it sent', async () => {
    const ids = new Map(replicas.map((replica) => [replicaIdOf(replica), replica]))
    const session = await openSession(nginx.url)
    const seen: Seen = { progress: [], results: [], lastEventId: undefined }
    const call = await post(nginx.url, session, {
      jsonrpc: '2.0',
      id: 'call-1',
      method: 'tools/call',
      params: { name: 'count', arguments: { to: 200, step_ms: 50 }, _meta: { progressToken: 'p' } },
    })
    const runner = ids.get(call.headers.get('x-keel-replica') ?? '')
    expect(runner).toBeDefined()
    const events = eventsOf(call)
    expect(await read(events, seen, (s) => s.progress.length >= 5)).toBe('stopped')
    await runner!.kill()
    expect(await read(events, seen, () => false)).not.toBe('stopped')
    const errors: Array<{ id: unknown; error: { code: number; message: string } }> = []
    const resumed = await resume(nginx.url, session, seen.lastEventId!)
    expect(resumed.status).toBe(200)
    for await (const event of sseEvents(resumed)) {
      if (event.id) seen.lastEventId = event.id
      if (!event.data) continue
      const message = JSON.parse(event.data)
      if (message.method === 'notifications/progress') seen.progress.push(message.params.progress)
      if (message.error) errors.push(message)
    }
    expect(seen.progress).toEqual(Array.from({ length: seen.progress.length }, (_, index) => index + 1))
    expect(errors).toEqual([
      {
        jsonrpc: '2.0',
        id: 'call-1',
        error: {
          code: -32603,
          message:
            'The server replica running this request stopped before it finished; its result is lost. Retry the request.',
        },
      },
    ])
  })
})

/** Waits (bounded) until some replica logs a line matching `pattern`; returns that replica. */
async function replicaLogging(pattern: RegExp): Promise<Replica> {
  for (let attempt = 0; attempt < 150; attempt++) {
    const found = replicas.find(
      (replica) => replica.child.exitCode === null && pattern.test(replica.stderr()),
    )
    if (found) return found
    await new Promise((wake) => setTimeout(wake, 100))
  }
  throw new Error(`no replica logged ${pattern}`)
}

describe.each([['v2' as const], ['v1' as const]])('a %s client whose stream is cut', (generation) => {
  it('resumes its standalone stream on another replica and misses no server-to-client request', async () => {
    const asked: string[] = []
    const connection = await connectHttp(nginx.url, {
      generation,
      onElicit: (params) => {
        asked.push(params.message)
        return params.message === 'Your name?'
          ? { action: 'accept', content: { name: 'Ada' } }
          : { action: 'accept', content: { colour: 'teal' } }
      },
    })
    try {
      const { session } = (await connection.client.callTool({ name: 'whoami' })).structuredContent as {
        session: string
      }
      // The replica holding the client's GET stream dies; the question of the next call is sent
      // while the client has no stream at all, and reaches it when it resumes elsewhere.
      const holder = await replicaLogging(
        new RegExp(`serving an SSE stream from Redis session=${session} stream=_GET_stream resumed=false`),
      )
      await holder.kill()
      const result = await connection.client.callTool({ name: 'ask_name' }, { timeout: 60_000 })
      expect(result.content[0].text).toMatch(/^Ada likes teal \(asked by \d+\)$/)
      expect(asked).toEqual(['Your name?', 'Your colour?'])
      const resumedOn = await replicaLogging(
        new RegExp(`serving an SSE stream from Redis session=${session} stream=_GET_stream resumed=true`),
      )
      expect(resumedOn).not.toBe(holder)
    } finally {
      await connection.close()
    }
  })
})

describe('resource subscriptions across replicas', () => {
  it('keep one watcher when re-subscribed through another replica, and are taken over when their replica dies', async () => {
    let updates = 0
    const connection = await connectHttp(nginx.url, {
      onResourceUpdated: (params) => {
        if (params.uri === 'replica://ticks') updates++
      },
    })
    const watching = () =>
      replicas.filter((replica) => {
        const log = replica.stderr()
        return (
          replica.child.exitCode === null &&
          replica.child.signalCode === null &&
          (log.match(/(?<!stopped )watching ticks on/g) ?? []).length >
            (log.match(/stopped watching ticks on/g) ?? []).length
        )
      })
    const until = async (what: string, condition: () => boolean) => {
      for (let attempt = 0; attempt < 400 && !condition(); attempt++)
        await new Promise((wake) => setTimeout(wake, 100))
      if (!condition()) throw new Error(`timed out waiting for ${what}`)
    }
    try {
      await connection.client.subscribeResource({ uri: 'replica://ticks' })
      await until('updates', () => updates >= 3)
      // Subscribing again reaches another replica (round robin): it watches, the first one stops.
      await connection.client.subscribeResource({ uri: 'replica://ticks' })
      await until('one watcher', () => watching().length === 1)
      const [watcher] = watching()
      await watcher!.kill()
      const before = updates
      // The replica serving the client's stream notices the watcher is gone and takes over.
      await until('updates after the watcher died', () => updates >= before + 3)
      await until('a new watcher', () => watching().length === 1)
      expect(watching()[0]).not.toBe(watcher)
      expect(replicas.map((replica) => replica.stderr()).join('\n')).toMatch(
        /took over a subscription from a replica that is gone/,
      )
    } finally {
      await connection.close()
    }
  })
})
