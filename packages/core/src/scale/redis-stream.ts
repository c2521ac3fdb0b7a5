import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Redis } from 'ioredis'
import type { Logger } from '../logger.js'
import { duplicateConnection } from './redis.js'
import { isPriming, parseEventId, STANDALONE_STREAM, storedEvent, streamKey } from './redis-event-store.js'

/** How long one blocking read of a stream waits before a keep-alive (and the checks) go out. */
export const BLOCK_MS = 10_000
/** How long a standalone stream's hold outlives its last check (a killed replica's hold expires). */
const HOLD_MS = 3 * BLOCK_MS
const RELEASE_HOLDER =
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

type Message = Record<string, unknown>

/** True for a JSON-RPC response (a result or an error). */
export const isResponse = (message: Message) =>
  message.method === undefined && message.id !== undefined && ('result' in message || 'error' in message)

/** The Redis key of a session's record. */
export function sessionKey(prefix: string, id: string): string {
  return `${prefix}session:${id}`
}

/** What serving a stream needs from the cluster. */
export interface StreamContext {
  redis: Redis
  prefix: string
  ttlMs: number
  logger: Logger
  /** Open blocking connections, closed when the replica shuts down. */
  readers: Set<Redis>
  /** Runs Redis commands; a failure becomes the cluster's StoreUnavailable (a 503). */
  store<T>(work: () => Promise<T>): Promise<T>
  /** Takes over the session's subscriptions whose watching replica is gone. */
  adopt(id: string): Promise<void>
  /** Whether a replica is up. */
  alive(replica: string): Promise<boolean>
  closed(): boolean
}

/**
 * Serves a GET stream of session `id` from Redis: the standalone stream, or (with `Last-Event-ID`)
 * the rest of any stream of the session, then new events as any replica stores them. A resumed
 * request stream ends after its response; the standalone stream when the client leaves or the
 * session ends.
 */
export async function serveRedisStream(
  context: StreamContext,
  id: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { redis, prefix, ttlMs, logger } = context
  const json = (status: number, code: number, message: string) => {
    res.writeHead(status, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }))
  }
  if (!String(req.headers.accept ?? '').includes('text/event-stream')) {
    json(406, -32000, 'Not Acceptable: Client must accept text/event-stream')
    return
  }
  const lastEventId = req.headers['last-event-id']
  const resumeFrom = typeof lastEventId === 'string' ? parseEventId(lastEventId) : undefined
  if (typeof lastEventId === 'string' && !resumeFrom) {
    json(400, -32000, 'Invalid event ID format')
    return
  }
  const exists = await context.store(() => redis.pexpire(sessionKey(prefix, id), ttlMs))
  if (!exists) {
    json(404, -32001, 'Session not found')
    return
  }
  const streamId = resumeFrom?.streamId ?? STANDALONE_STREAM
  const key = streamKey(prefix, id, streamId)
  // Only this session's streams: an event id from another session names no stream here.
  if (resumeFrom && !(await context.store(() => redis.exists(key)))) {
    json(404, -32001, 'Event stream not found in this session')
    return
  }
  // One standalone stream per session across all replicas (MCP: a message goes to one stream).
  // A resumed stream takes over from one the client lost; a second fresh one is refused.
  const standalone = streamId === STANDALONE_STREAM
  const holderKey = `${prefix}stream-holder:${id}`
  const token = randomUUID()
  if (standalone) {
    const taken = await context.store(() =>
      resumeFrom
        ? redis.set(holderKey, token, 'PX', HOLD_MS)
        : redis.set(holderKey, token, 'PX', HOLD_MS, 'NX'),
    )
    if (taken !== 'OK') {
      json(409, -32000, 'Conflict: Only one SSE stream is allowed per session')
      return
    }
  }
  let after: string | undefined = resumeFrom?.entryId
  if (!after) {
    after = await context.store(async () => {
      const entry = await redis.xadd(key, 'MAXLEN', '~', '1000', '*', 'm', '{}')
      await redis.pexpire(key, ttlMs)
      return entry ?? '0-0'
    })
  }
  // A resumed request stream: which replica runs the request, and the request's id, from what it
  // stored last; if that replica dies before answering, the client gets an error, not a wait.
  let runner: string | undefined
  let request: string | number | undefined
  if (!standalone) {
    const [last] = await context.store(() => redis.xrevrange(key, '+', '-', 'COUNT', 1))
    if (last) ({ replica: runner, request } = storedEvent(last[1]))
  }
  // Its replica died with nothing left to send and no way to name the request: nothing will come.
  if (
    !standalone &&
    runner &&
    request === undefined &&
    !(await context.store(() => context.alive(runner as string)))
  ) {
    const pending = await context.store(() => redis.xrange(key, `(${after}`, '+', 'COUNT', 1))
    if (pending.length === 0) {
      json(
        404,
        -32001,
        'The server replica running this request stopped before it finished; its result is lost',
      )
      return
    }
  }
  const reader = await context.store(() => duplicateConnection(redis, BLOCK_MS))
  context.readers.add(reader)
  let open = true
  res.on('close', () => {
    open = false
    reader.disconnect()
  })
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'mcp-session-id': id,
  })
  // Send the headers now: a resumed stream may have nothing to say for a while.
  res.flushHeaders()
  logger.debug('serving an SSE stream from Redis', {
    session: id,
    stream: streamId,
    resumed: resumeFrom !== undefined,
  })
  if (!resumeFrom) res.write(`id: ${streamId}~${after}\ndata: \n\n`)
  const adopt = () =>
    context.adopt(id).catch((error: unknown) =>
      logger.debug('could not check the subscriptions of a session', {
        error: (error as Error).message,
      }),
    )
  if (standalone) await adopt()
  try {
    while (open && !context.closed()) {
      const result: Array<[string, Array<[string, string[]]>]> | null = await reader.xread(
        'COUNT',
        100,
        'BLOCK',
        BLOCK_MS,
        'STREAMS',
        key,
        after ?? '$',
      )
      if (!open) break
      if (standalone) {
        if ((await redis.get(holderKey)) !== token) break
        await redis.pexpire(holderKey, HOLD_MS)
      }
      if (!result) {
        res.write(': keepalive\n\n')
        if (standalone) await adopt()
        else if (runner && !(await context.alive(runner))) {
          if (request !== undefined) {
            const lost = {
              jsonrpc: '2.0',
              id: request,
              error: {
                code: -32603,
                message:
                  'The server replica running this request stopped before it finished; its result is lost. Retry the request.',
              },
            }
            res.write(`event: message\ndata: ${JSON.stringify(lost)}\n\n`)
          }
          logger.warn('a resumed request stream ended: the replica running the request is gone', {
            session: id,
            replica: runner,
          })
          break
        }
        // An open stream keeps its session (and itself) from expiring, as a busy session in memory.
        if (!(await redis.pexpire(sessionKey(prefix, id), ttlMs))) break
        await redis.pexpire(key, ttlMs)
        continue
      }
      let answered = false
      for (const [, entries] of result) {
        for (const [entryId, fields] of entries) {
          after = entryId
          const stored = storedEvent(fields)
          runner = stored.replica ?? runner
          request = stored.request ?? request
          const data = stored.message
          const message = JSON.parse(data) as Message
          if (isPriming(message)) continue
          res.write(`event: message\nid: ${streamId}~${entryId}\ndata: ${data}\n\n`)
          if (streamId !== STANDALONE_STREAM && isResponse(message)) answered = true
        }
      }
      if (answered) break
    }
  } catch (error) {
    if (open && !context.closed())
      logger.warn('an SSE stream stopped: the session store (Redis) failed', {
        error: (error as Error).message,
      })
  } finally {
    context.readers.delete(reader)
    reader.disconnect()
    res.end()
    if (standalone)
      await redis.eval(RELEASE_HOLDER, 1, holderKey, token).catch(() => {
        // Redis is away: the hold expires by itself.
      })
  }
}
