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

/** One GET stream being served, and where it has got to. */
interface ServedStream {
  /** The session. */
  id: string
  streamId: string
  /** The Redis stream it reads. */
  key: string
  /** The session's standalone stream (held by one request across replicas), not a request's. */
  standalone: boolean
  holderKey: string
  /** This request's hold on the standalone stream. */
  token: string
  /** Whether the client resumed with `Last-Event-ID`. */
  resumed: boolean
  /** The last entry sent (or, fresh, the priming entry). */
  after: string | undefined
  /** A request stream's replica running the request, and the request's id, as last stored. */
  runner: string | undefined
  request: string | number | undefined
}

function sendError(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }))
}

/**
 * Checks the request (accepts SSE, a well-formed `Last-Event-ID` naming a stream of this session)
 * and takes the standalone stream's hold. `undefined` when the request was answered instead.
 */
async function claimStream(
  context: StreamContext,
  id: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<ServedStream | undefined> {
  const { redis, prefix, ttlMs } = context
  if (!String(req.headers.accept ?? '').includes('text/event-stream')) {
    sendError(res, 406, -32000, 'Not Acceptable: Client must accept text/event-stream')
    return undefined
  }
  const lastEventId = req.headers['last-event-id']
  const resumeFrom = typeof lastEventId === 'string' ? parseEventId(lastEventId) : undefined
  if (typeof lastEventId === 'string' && !resumeFrom) {
    sendError(res, 400, -32000, 'Invalid event ID format')
    return undefined
  }
  const exists = await context.store(() => redis.pexpire(sessionKey(prefix, id), ttlMs))
  if (!exists) {
    sendError(res, 404, -32001, 'Session not found')
    return undefined
  }
  const streamId = resumeFrom?.streamId ?? STANDALONE_STREAM
  const key = streamKey(prefix, id, streamId)
  // Only this session's streams: an event id from another session names no stream here.
  if (resumeFrom && !(await context.store(() => redis.exists(key)))) {
    sendError(res, 404, -32001, 'Event stream not found in this session')
    return undefined
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
      sendError(res, 409, -32000, 'Conflict: Only one SSE stream is allowed per session')
      return undefined
    }
  }
  const resumed = resumeFrom !== undefined
  const after = resumeFrom?.entryId
  return {
    id,
    streamId,
    key,
    standalone,
    holderKey,
    token,
    resumed,
    after,
    runner: undefined,
    request: undefined,
  }
}

/**
 * Where the stream starts: after the last event the client saw, or after a new priming entry.
 * False (and a 404 sent) for a resumed request stream whose replica died with nothing left to send.
 */
async function positionStream(
  context: StreamContext,
  stream: ServedStream,
  res: ServerResponse,
): Promise<boolean> {
  const { redis, ttlMs } = context
  const { key } = stream
  if (!stream.after) {
    stream.after = await context.store(async () => {
      const entry = await redis.xadd(key, 'MAXLEN', '~', '1000', '*', 'm', '{}')
      await redis.pexpire(key, ttlMs)
      return entry ?? '0-0'
    })
  }
  if (stream.standalone) return true
  // A resumed request stream: which replica runs the request, and the request's id, from what it
  // stored last; if that replica dies before answering, the client gets an error, not a wait.
  const [last] = await context.store(() => redis.xrevrange(key, '+', '-', 'COUNT', 1))
  if (last) ({ replica: stream.runner, request: stream.request } = storedEvent(last[1]))
  const { runner } = stream
  // Its replica died with nothing left to send and no way to name the request: nothing will come.
  if (runner && stream.request === undefined && !(await context.store(() => context.alive(runner)))) {
    const pending = await context.store(() => redis.xrange(key, `(${stream.after}`, '+', 'COUNT', 1))
    if (pending.length === 0) {
      sendError(
        res,
        404,
        -32001,
        'The server replica running this request stopped before it finished; its result is lost',
      )
      return false
    }
  }
  return true
}

/** The SSE response head, sent at once (a resumed stream may have nothing to say for a while). */
function beginEventStream(context: StreamContext, stream: ServedStream, res: ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'mcp-session-id': stream.id,
  })
  res.flushHeaders()
  context.logger.debug('serving an SSE stream from Redis', {
    session: stream.id,
    stream: stream.streamId,
    resumed: stream.resumed,
  })
  if (!stream.resumed) res.write(`id: ${stream.streamId}~${stream.after}\ndata: \n\n`)
}

function adoptSubscriptions(context: StreamContext, id: string): Promise<void> {
  return context.adopt(id).catch((error: unknown) =>
    context.logger.debug('could not check the subscriptions of a session', {
      error: (error as Error).message,
    }),
  )
}

/** Renews the standalone stream's hold; false when another request took it over. */
async function keepHold(context: StreamContext, stream: ServedStream): Promise<boolean> {
  if (!stream.standalone) return true
  if ((await context.redis.get(stream.holderKey)) !== stream.token) return false
  await context.redis.pexpire(stream.holderKey, HOLD_MS)
  return true
}

/**
 * A read that timed out with nothing new: a keep-alive, and the checks. False when the stream
 * should end: its request's replica is gone (the client gets an error for the request), or its
 * session expired.
 */
async function quietTick(
  context: StreamContext,
  stream: ServedStream,
  res: ServerResponse,
): Promise<boolean> {
  const { redis, prefix, ttlMs, logger } = context
  res.write(': keepalive\n\n')
  if (stream.standalone) await adoptSubscriptions(context, stream.id)
  else if (stream.runner && !(await context.alive(stream.runner))) {
    if (stream.request !== undefined) {
      const lost = {
        jsonrpc: '2.0',
        id: stream.request,
        error: {
          code: -32603,
          message:
            'The server replica running this request stopped before it finished; its result is lost. Retry the request.',
        },
      }
      res.write(`event: message\ndata: ${JSON.stringify(lost)}\n\n`)
    }
    logger.warn('a resumed request stream ended: the replica running the request is gone', {
      session: stream.id,
      replica: stream.runner,
    })
    return false
  }
  // An open stream keeps its session (and itself) from expiring, as a busy session in memory.
  if (!(await redis.pexpire(sessionKey(prefix, stream.id), ttlMs))) return false
  await redis.pexpire(stream.key, ttlMs)
  return true
}

type ReadResult = Array<[string, Array<[string, string[]]>]>

/** Writes the entries read as SSE events; true when a request stream's response went out (the stream ends). */
function writeEntries(stream: ServedStream, result: ReadResult, res: ServerResponse): boolean {
  let answered = false
  for (const [, entries] of result) {
    for (const [entryId, fields] of entries) {
      stream.after = entryId
      const stored = storedEvent(fields)
      stream.runner = stored.replica ?? stream.runner
      stream.request = stored.request ?? stream.request
      const data = stored.message
      const message = JSON.parse(data) as Message
      if (isPriming(message)) continue
      res.write(`event: message\nid: ${stream.streamId}~${entryId}\ndata: ${data}\n\n`)
      if (stream.streamId !== STANDALONE_STREAM && isResponse(message)) answered = true
    }
  }
  return answered
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
  const stream = await claimStream(context, id, req, res)
  if (!stream || !(await positionStream(context, stream, res))) return
  const reader = await context.store(() => duplicateConnection(context.redis, BLOCK_MS))
  context.readers.add(reader)
  let open = true
  res.on('close', () => {
    open = false
    reader.disconnect()
  })
  beginEventStream(context, stream, res)
  if (stream.standalone) await adoptSubscriptions(context, id)
  try {
    while (open && !context.closed()) {
      const result: ReadResult | null = await reader.xread(
        'COUNT',
        100,
        'BLOCK',
        BLOCK_MS,
        'STREAMS',
        stream.key,
        stream.after ?? '$',
      )
      if (!open || !(await keepHold(context, stream))) break
      if (!result) {
        if (await quietTick(context, stream, res)) continue
        break
      }
      if (writeEntries(stream, result, res)) break
    }
  } catch (error) {
    if (open && !context.closed())
      context.logger.warn('an SSE stream stopped: the session store (Redis) failed', {
        error: (error as Error).message,
      })
  } finally {
    context.readers.delete(reader)
    reader.disconnect()
    res.end()
    if (stream.standalone)
      await context.redis.eval(RELEASE_HOLDER, 1, stream.holderKey, stream.token).catch(() => {
        // Redis is away: the hold expires by itself.
      })
  }
}
