import type { JSONRPCMessage } from '@modelcontextprotocol/server'
import { describe, expect, it } from 'vitest'
import { BoundedEventStore } from '../src/event-store.js'

const result = (id: number, text: string): JSONRPCMessage =>
  ({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } }) as JSONRPCMessage

async function replayed(store: BoundedEventStore, after: string): Promise<JSONRPCMessage[]> {
  const sent: JSONRPCMessage[] = []
  await store.replayEventsAfter(after, {
    send: async (_id, message) => {
      sent.push(message)
    },
  })
  return sent
}

describe('BoundedEventStore', () => {
  it('replays the events of a stream after the last one the client saw', async () => {
    const store = new BoundedEventStore()
    const first = await store.storeEvent('s1', result(1, 'one'))
    await store.storeEvent('s2', result(2, 'other stream'))
    await store.storeEvent('s1', result(3, 'three'))
    expect(await replayed(store, first)).toEqual([result(3, 'three')])
  })

  it('keeps at most maxBytes of serialized events, dropping the oldest first', async () => {
    const store = new BoundedEventStore(1000, 10_000)
    const big = 'x'.repeat(1000)
    for (let id = 0; id < 200; id++) await store.storeEvent('s', result(id, big))
    expect(store.size.bytes).toBeLessThanOrEqual(10_000)
    expect(store.size.events).toBeGreaterThan(5)
    expect(store.size.events).toBeLessThan(11)
  })

  it('keeps at most maxEvents small events', async () => {
    const store = new BoundedEventStore(50)
    for (let id = 0; id < 500; id++) await store.storeEvent('s', result(id, 'small'))
    expect(store.size.events).toBe(50)
  })

  it('does not keep an event larger than the whole budget, nor evict the others for it', async () => {
    const store = new BoundedEventStore(1000, 10_000)
    const kept = await store.storeEvent('s', result(1, 'kept'))
    await store.storeEvent('s', result(2, 'x'.repeat(20_000)))
    await store.storeEvent('s', result(3, 'after'))
    expect(store.size.events).toBe(2)
    expect(await replayed(store, kept)).toEqual([result(3, 'after')])
  })
})
