import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server'
import type { Redis } from 'ioredis'

/** The standalone (GET) stream's id in the SDK's Streamable HTTP transport. */
export const STANDALONE_STREAM = '_GET_stream'

// An event id is `<streamId>~<Redis stream entry id>`: the SDK's stream ids are UUIDs or
// `_GET_stream`, Redis entry ids are `<ms>-<seq>`. Anything else is not an id this store issued.
const EVENT_ID = /^([A-Za-z0-9_-]{1,64})~(\d{1,20}-\d{1,20})$/

/** Splits an event id into its stream id and Redis entry id; `undefined` when it is not one of ours. */
export function parseEventId(eventId: string): { streamId: string; entryId: string } | undefined {
  const match = EVENT_ID.exec(eventId)
  return match?.[1] && match[2] ? { streamId: match[1], entryId: match[2] } : undefined
}

/** The Redis key of one SSE stream of one session. */
export function streamKey(prefix: string, sessionId: string, streamId: string): string {
  return `${prefix}events:${sessionId}:${streamId}`
}

/** The fields of one stored event: the message, the replica that stored it, the request it answers. */
export interface StoredEvent {
  message: string
  replica: string | undefined
  request: string | number | undefined
}

/** Reads an entry's field list (`m`, `r`, `q`, as {@link RedisEventStore.storeEvent} writes them). */
export function storedEvent(fields: string[]): StoredEvent {
  const values = new Map<string, string>()
  for (let index = 0; index + 1 < fields.length; index += 2)
    values.set(fields[index] ?? '', fields[index + 1] ?? '')
  const request = values.get('q')
  return {
    message: values.get('m') ?? '{}',
    replica: values.get('r') || undefined,
    request: request === undefined ? undefined : (JSON.parse(request) as string | number),
  }
}

/** A priming event (the SDK stores `{}` so a client has an id to resume from): never replayed. */
export function isPriming(message: unknown): boolean {
  return typeof message === 'object' && message !== null && Object.keys(message).length === 0
}

/**
 * The events of one HTTP session's SSE streams, kept in Redis streams (one per SSE stream, capped
 * at about `maxEvents` and expiring with the session), so that a client that lost a stream can
 * resume it with `Last-Event-ID` on any replica.
 */
export class RedisEventStore implements EventStore {
  /** While set, nothing is stored (a session being restored replays its handshake to itself). */
  muted = false
  /** The replica storing (kept with each event, so a reader can tell when it is gone). */
  replica = ''
  /**
   * The client request the message being sent belongs to, set by the transport around each send
   * (the SDK stores the event synchronously inside its send), kept with the event.
   */
  relatedRequest: string | number | undefined

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly sessionId: string,
    private readonly ttlMs: number,
    private readonly maxEvents = 1000,
    private readonly onError?: (error: Error) => void,
  ) {}

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    if (this.muted) return `${streamId}~0-0`
    const related = this.relatedRequest
    const key = streamKey(this.prefix, this.sessionId, streamId)
    const fields = ['m', JSON.stringify(message), 'r', this.replica]
    if (related !== undefined) fields.push('q', JSON.stringify(related))
    try {
      const [[addError, entryId] = [], [expireError] = []] =
        (await this.redis
          .multi()
          .xadd(key, 'MAXLEN', '~', String(this.maxEvents), '*', ...fields)
          .pexpire(key, this.ttlMs)
          .exec()) ?? []
      if (addError || expireError || typeof entryId !== 'string')
        throw addError ?? expireError ?? new Error('Redis did not store the event')
      return `${streamId}~${entryId}`
    } catch (error) {
      // The live stream still gets the message; only resuming past it is lost. An id from the
      // clock (Redis ids are milliseconds) keeps a later resume close to the right place.
      this.onError?.(error as Error)
      return `${streamId}~${Date.now()}-0`
    }
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return parseEventId(eventId)?.streamId
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const parsed = parseEventId(lastEventId)
    if (!parsed) return ''
    const entries = await this.redis.xrange(
      streamKey(this.prefix, this.sessionId, parsed.streamId),
      `(${parsed.entryId}`,
      '+',
      'COUNT',
      this.maxEvents,
    )
    for (const [entryId, fields] of entries) {
      const message = JSON.parse(storedEvent(fields).message) as JSONRPCMessage
      if (!isPriming(message)) await send(`${parsed.streamId}~${entryId}`, message)
    }
    return parsed.streamId
  }
}
