import type { ServerEvent, ServerEventBus } from '@modelcontextprotocol/server'
import type { Redis } from 'ioredis'

/**
 * The SDK's change-event seam for 2026-07-28 `subscriptions/listen` streams, over Redis pub/sub:
 * an event published on any replica reaches the listen streams open on every replica (this one
 * included, once: its own publication comes back through the channel, not directly).
 */
export class RedisServerEventBus implements ServerEventBus {
  readonly #listeners = new Set<(event: ServerEvent) => void>()

  constructor(
    private readonly redis: Redis,
    readonly channel: string,
    private readonly onerror: (error: Error) => void,
  ) {}

  publish(event: ServerEvent): void {
    this.redis.publish(this.channel, JSON.stringify(event)).catch((error: Error) => this.onerror(error))
  }

  subscribe(listener: (event: ServerEvent) => void): () => void {
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }

  /** Hands an event that arrived on the channel to this replica's listeners. */
  dispatch(text: string): void {
    let event: ServerEvent
    try {
      event = JSON.parse(text) as ServerEvent
    } catch {
      return
    }
    for (const listener of [...this.#listeners]) {
      try {
        listener(event)
      } catch (error) {
        this.onerror(error as Error)
      }
    }
  }
}
