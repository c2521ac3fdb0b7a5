import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server'

/**
 * A bounded in-memory event store for one HTTP session, so a client that lost its SSE stream
 * can resume with `Last-Event-ID`. Old events fall off once `maxEvents` is reached.
 */
export class BoundedEventStore implements EventStore {
  readonly #events = new Map<string, { streamId: string; message: JSONRPCMessage }>()
  readonly #maxEvents: number
  #counter = 0

  constructor(maxEvents = 1000) {
    this.#maxEvents = maxEvents
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const eventId = `${streamId}_${(++this.#counter).toString(36).padStart(8, '0')}`
    this.#events.set(eventId, { streamId, message })
    if (this.#events.size > this.#maxEvents) {
      const oldest = this.#events.keys().next().value
      if (oldest !== undefined) this.#events.delete(oldest)
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
      if (found && event.streamId === streamId) await send(eventId, event.message)
    }
    return streamId
  }
}
