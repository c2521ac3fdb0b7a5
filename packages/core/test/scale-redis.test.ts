import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type JSONRPCMessage, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RedisServerEventBus } from '../src/scale/redis-event-bus.js'
import { parseEventId, RedisEventStore } from '../src/scale/redis-event-store.js'
import { ownerOf, RelayTransport } from '../src/scale/relay-transport.js'

// The pieces of the scale-out that need no cluster: the relay transport's ids, and the event
// store against a real redis-server (Debian's, on a free loopback port, no persistence).

describe('RelayTransport', () => {
  const make = () => new RelayTransport(new WebStandardStreamableHTTPServerTransport(), 'a1b2c3d4e5f6')

  it('names its server-to-client requests (and their cancellation) after the replica, and maps answers back', async () => {
    const transport = make()
    const sent: unknown[] = []
    transport.inner.send = async (message) => {
      sent.push(message)
    }
    const received: unknown[] = []
    transport.onmessage = (message) => received.push(message)
    await transport.send({
      jsonrpc: '2.0',
      id: 3,
      method: 'elicitation/create',
      params: {},
    } as JSONRPCMessage)
    await transport.send({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 3, reason: 'timeout' },
    } as JSONRPCMessage)
    await transport.send({ jsonrpc: '2.0', id: 7, result: {} } as JSONRPCMessage)
    expect(sent).toEqual([
      { jsonrpc: '2.0', id: 'a1b2c3d4e5f6.3', method: 'elicitation/create', params: {} },
      {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 'a1b2c3d4e5f6.3', reason: 'timeout' },
      },
      { jsonrpc: '2.0', id: 7, result: {} },
    ])
    transport.deliver({
      jsonrpc: '2.0',
      id: 'a1b2c3d4e5f6.3',
      result: { action: 'decline' },
    } as JSONRPCMessage)
    // Another replica's id, or a client request's own id, is left as it is.
    transport.deliver({ jsonrpc: '2.0', id: 'ffffffffffff.3', result: {} } as JSONRPCMessage)
    expect(received).toEqual([
      { jsonrpc: '2.0', id: 3, result: { action: 'decline' } },
      { jsonrpc: '2.0', id: 'ffffffffffff.3', result: {} },
    ])
  })

  it('recognises only ids of the form <12 hex>.<n> as relayed', () => {
    expect(ownerOf('a1b2c3d4e5f6.42')).toEqual({ replica: 'a1b2c3d4e5f6', id: 42 })
    for (const id of [42, 'a1b2c3d4e5f6', 'a1b2c3d4e5f6.x', 'A1B2C3D4E5F6.1', '../a1b2c3d4e5f6.1', null])
      expect(ownerOf(id)).toBeUndefined()
  })
})

let child: ChildProcess | undefined
let dir: string
let redis: Redis

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'keel-core-redis-'))
  const port = await freePort()
  const started = spawn(
    process.env.REDIS_SERVER_BIN ?? '/usr/bin/redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  child = started
  await new Promise<void>((resolveStart, reject) => {
    let output = ''
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${output}`)), 15_000)
    started.stdout?.on('data', (chunk: Buffer) => {
      output += chunk
      if (/Ready to accept connections/.test(output)) {
        clearTimeout(timer)
        resolveStart()
      }
    })
    started.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output}`)))
  })
  redis = new Redis(`redis://127.0.0.1:${port}`)
})

afterAll(async () => {
  redis?.disconnect()
  if (child && child.exitCode === null) {
    const exited = new Promise((resolveExit) => child?.once('exit', resolveExit))
    child.kill('SIGTERM')
    await exited
  }
  await rm(dir, { recursive: true, force: true })
})

const message = (n: number) =>
  ({ jsonrpc: '2.0', method: 'notifications/progress', params: { n } }) as JSONRPCMessage

describe('RedisEventStore (real redis-server)', () => {
  it('replays the events of one stream after an id, in order, without the priming event', async () => {
    const store = new RedisEventStore(redis, 'test:', 'session-1', 60_000)
    const priming = await store.storeEvent('stream-a', {} as JSONRPCMessage)
    const first = await store.storeEvent('stream-a', message(1))
    await store.storeEvent('stream-b', message(99))
    await store.storeEvent('stream-a', message(2))
    await store.storeEvent('stream-a', message(3))
    expect(parseEventId(first)).toEqual({ streamId: 'stream-a', entryId: expect.stringMatching(/^\d+-\d+$/) })
    expect(await store.getStreamIdForEventId(first)).toBe('stream-a')
    const replayed: Array<[string, unknown]> = []
    const send = async (eventId: string, event: JSONRPCMessage) => {
      replayed.push([eventId, (event as unknown as { params: { n: number } }).params.n])
    }
    expect(await store.replayEventsAfter(first, { send })).toBe('stream-a')
    expect(replayed.map(([, n]) => n)).toEqual([2, 3])
    replayed.length = 0
    await store.replayEventsAfter(priming, { send })
    expect(replayed.map(([, n]) => n)).toEqual([1, 2, 3])
    expect(await redis.pttl('test:events:session-1:stream-a')).toBeGreaterThan(0)
  })

  it('keeps sessions apart, refuses ids it did not issue, and stores nothing while muted', async () => {
    const mine = new RedisEventStore(redis, 'test:', 'session-2', 60_000)
    const theirs = new RedisEventStore(redis, 'test:', 'session-3', 60_000)
    const id = await theirs.storeEvent('s', message(1))
    await theirs.storeEvent('s', message(2))
    const replayed: unknown[] = []
    await mine.replayEventsAfter(id, { send: async (_eventId, event) => void replayed.push(event) })
    expect(replayed).toEqual([])
    expect(await mine.getStreamIdForEventId('../../etc~1-0')).toBeUndefined()
    expect(await mine.replayEventsAfter('not-an-id', { send: async () => {} })).toBe('')
    mine.muted = true
    await mine.storeEvent('quiet', message(1))
    expect(await redis.exists('test:events:session-2:quiet')).toBe(0)
  })

  it('caps each stream at about maxEvents', async () => {
    const store = new RedisEventStore(redis, 'test:', 'session-4', 60_000, 10)
    for (let n = 0; n < 300; n++) await store.storeEvent('long', message(n))
    // MAXLEN ~ trims whole nodes: the stream stays near the cap, never grows with the session.
    expect(await redis.xlen('test:events:session-4:long')).toBeLessThan(200)
  })

  it('answers with an id from the clock, and reports, when Redis cannot store an event', async () => {
    const broken = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    })
    broken.on('error', () => {})
    const errors: Error[] = []
    const store = new RedisEventStore(broken, 'test:', 'session-5', 60_000, 1000, (error) =>
      errors.push(error),
    )
    const before = Date.now()
    const id = await store.storeEvent('s', message(1))
    const entry = parseEventId(id)?.entryId ?? ''
    expect(Number(entry.split('-')[0])).toBeGreaterThanOrEqual(before)
    expect(errors).toHaveLength(1)
    broken.disconnect()
  })
})

describe('RedisServerEventBus (real redis-server)', () => {
  it('delivers an event published on one replica to the listeners of every replica, once each', async () => {
    const errors: Error[] = []
    const channel = 'test:server-events'
    const here = new RedisServerEventBus(redis, channel, (error) => errors.push(error))
    const there = new RedisServerEventBus(redis, channel, (error) => errors.push(error))
    const subscribers = [redis.duplicate(), redis.duplicate()]
    await Promise.all(subscribers.map((subscriber) => subscriber.subscribe(channel)))
    subscribers[0]?.on('message', (_channel: string, text: string) => here.dispatch(text))
    subscribers[1]?.on('message', (_channel: string, text: string) => there.dispatch(text))
    const seenHere: unknown[] = []
    const seenThere: unknown[] = []
    const stop = here.subscribe((event) => seenHere.push(event))
    there.subscribe((event) => seenThere.push(event))
    here.publish({ kind: 'resource_updated', uri: 'note://1' })
    for (let wait = 0; wait < 100 && seenThere.length === 0; wait++)
      await new Promise((wake) => setTimeout(wake, 20))
    expect(seenHere).toEqual([{ kind: 'resource_updated', uri: 'note://1' }])
    expect(seenThere).toEqual([{ kind: 'resource_updated', uri: 'note://1' }])
    stop()
    stop()
    there.publish({ kind: 'tools_list_changed' })
    for (let wait = 0; wait < 100 && seenThere.length < 2; wait++)
      await new Promise((wake) => setTimeout(wake, 20))
    expect(seenThere).toHaveLength(2)
    expect(seenHere).toHaveLength(1)
    expect(errors).toEqual([])
    for (const subscriber of subscribers) subscriber.disconnect()
  })
})
