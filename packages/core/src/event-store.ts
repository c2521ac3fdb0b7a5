import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server'

/**
 * A bounded in-memory event store for one HTTP session, so a client that lost its SSE stream
 * can resume with `Last-Event-ID`. Old events fall off once `maxEvents` or `maxBytes` is reached.
 *
 * Bounded in bytes as well as in count: a count alone let each session keep 1000 whole tool
 * results (a soak of 4 sessions grew the process by 50 MB), so every open session cost memory in
 * proportion to the size of its answers. Events are kept serialized: the size is exact and a
 * string costs less than the parsed object graph; a replay (rare) parses them again.
 */
export class BoundedEventStore implements EventStore {
  readonly #events = new Map<string, { streamId: string; json: string }>()
  readonly #maxEvents: number
  readonly #maxBytes: number
  #bytes = 0
  #counter = 0

  /** `maxBytes` counts the serialized events (UTF-16 code units, which is bytes for ASCII JSON). */
  constructor(maxEvents = 1000, maxBytes = 1024 * 1024) {
    this.#maxEvents = maxEvents
    this.#maxBytes = maxBytes
  }

  /** Events and bytes held now. */
  get size(): { events: number; bytes: number } {
    return { events: this.#events.size, bytes: this.#bytes }
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const eventId = `${streamId}_${(++this.#counter).toString(36).padStart(8, '0')}`
    const json = JSON.stringify(message)
    // An event larger than the whole budget is not kept: it would evict everything else.
    if (json.length > this.#maxBytes) return eventId
    this.#events.set(eventId, { streamId, json })
    this.#bytes += json.length
    while (this.#events.size > this.#maxEvents || this.#bytes > this.#maxBytes) {
      const oldest = this.#events.entries().next().value
      if (oldest === undefined) break
      this.#events.delete(oldest[0])
      this.#bytes -= oldest[1].json.length
    }
    return eventId
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return (
      this.#events.get(eventId)?.streamId ??
      (eventId.includes('_') ? eventId.slice(0, eventId.lastIndexOf('_')) : undefined)
    )
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const streamId = await this.getStreamIdForEventId(lastEventId)
    if (!streamId) return ''
    let found = false
    for (const [eventId, event] of this.#events) {
      if (eventId === lastEventId) {
        found = true
        continue
      }
      if (found && event.streamId === streamId) await send(eventId, JSON.parse(event.json) as JSONRPCMessage)
    }
    return streamId
  }
}
