/**
 * The Web API client's HTTP transport, handed to `@slack/web-api` as its `fetch` option: core's
 * `createHttpFetch` (`node:http(s)` on keep-alive agents, the answer read whole). The client keeps
 * everything else (its request queue, its retries of reads (slack.ts), 429 handling, form encoding,
 * result checks); only the wire changes. Node's `fetch` builds web streams, a request object and a response object around
 * every call: about three times the CPU of the same request over `node:http` (≈ 220 against 65 µs
 * on loopback, client and server together), a third of a warm history call (docs/performance.md).
 *
 * What `fetch` did that this does too (core's http-fetch.ts keeps fetch's abort, timeouts,
 * decoding and connection handling): redirects are refused (`redirect: 'error'`: a Web API call is
 * never redirected, and the token never follows one), idle connections never keep the process
 * alive, a 429 without `Retry-After` reads as 1 s. A multipart body (binary arguments) still goes
 * through `fetch`.
 *
 * Every Web API call is a POST, the reads too. The methods in {@link READ_METHODS} change nothing
 * in Slack, and the transport treats them as fetch treats a GET: their connections are kept for
 * 30 s while idle (a model's pause between two calls, which undici's 4 s would turn into a new TCP
 * and TLS handshake with Slack each time), and one that meets a kept connection's close is sent
 * again at once. Every other method is a write: its connection is kept 4 s (undici's default, far
 * inside any server's idle limit), and the transport never sends it again.
 */
import { createHttpFetch, FetchResponse, type ReadTest, ResponseBody, ResponseHeaders } from '@keel-mcp/core'
import type { FetchFunction } from '@slack/web-api'

/** Idle keep-alive connections of writes are closed after this long (undici's default). */
export const IDLE_MS = 4_000

/** Idle keep-alive connections of reads ({@link READ_METHODS}) are closed after this long. */
export const READ_IDLE_MS = 30_000

/**
 * The Web API methods the server calls that only read (Slack documents none of them as changing
 * anything). A method missing here is a write: test/transport.test.ts requires every method the
 * server calls to be in this set or in its list of writes.
 */
export const READ_METHODS: ReadonlySet<string> = new Set([
  'auth.test',
  'chat.scheduledMessages.list',
  'conversations.history',
  'conversations.info',
  'conversations.list',
  'conversations.replies',
  'files.info',
  'files.list',
  'search.messages',
  'usergroups.list',
  'users.conversations',
  'users.info',
  'users.list',
  'users.lookupByEmail',
  'users.profile.get',
])

/** Whether a request other than a GET or HEAD is a read: a POST of a method in {@link READ_METHODS}. */
export const isReadRequest: ReadTest = (method, url) =>
  method === 'POST' && READ_METHODS.has(url.pathname.slice(url.pathname.lastIndexOf('/') + 1))

export interface TransportOptions {
  /** How long an idle connection of a write is kept, ms (tests shorten it). */
  idleMs?: number | undefined
  /** How long an idle connection of a read is kept, ms (tests shorten it). */
  readIdleMs?: number | undefined
}

type Init = NonNullable<Parameters<FetchFunction>[1]>
type SlackResponse = Awaited<ReturnType<FetchFunction>>

/** The `fetch` of a client whose Web API root is `apiUrl`; node's modules load on the first call. */
export function createTransport(apiUrl: string, options: TransportOptions = {}): FetchFunction {
  const secure = apiUrl.startsWith('https:')
  const send = createHttpFetch({
    keepAliveMs: options.idleMs ?? IDLE_MS,
    readKeepAliveMs: options.readIdleMs ?? READ_IDLE_MS,
    isRead: isReadRequest,
  })
  return async (input, init = {}) => {
    const url = String(input)
    // Multipart bodies, and a URL of the other scheme, are left to fetch (neither is a Web API call here).
    if (
      (init.body !== undefined && typeof init.body !== 'string') ||
      !url.startsWith(secure ? 'https:' : 'http:')
    )
      return withRetryAfter(url, init)
    const response = await send(url, {
      method: init.method ?? 'GET',
      ...(init.headers ? { headers: init.headers } : {}),
      ...(init.body !== undefined ? { body: init.body } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
      redirect: init.redirect === 'manual' ? 'manual' : 'error',
    })
    return readWhole(response)
  }
}

/**
 * The answer with its body already read: a connection that breaks off inside the body fails the
 * request itself (the client reports a request error at once), as it fails a request that never got
 * an answer. A 429 without `Retry-After` (from a proxy in between) gets `Retry-After: 1`.
 */
async function readWhole(response: FetchResponse): Promise<FetchResponse> {
  let bytes: Buffer
  try {
    bytes = await response.body.bytes()
  } catch (error) {
    throw new TypeError('fetch failed', { cause: error })
  }
  let headers = response.headers
  if (response.status === 429 && !headers.has('retry-after')) {
    const raw: string[] = []
    for (const [name, value] of headers) raw.push(name, value)
    raw.push('retry-after', '1')
    headers = new ResponseHeaders(raw)
  }
  return new FetchResponse(
    response.status,
    response.statusText,
    response.url,
    headers,
    new ResponseBody(Promise.resolve(bytes)),
    response.redirected ? 1 : 0,
  )
}

/**
 * `fetch`, where a 429 without `Retry-After` (from a proxy in between) counts as 1 s, so the
 * rate-limit policy decides about it too instead of the client failing with a bare error.
 */
export async function withRetryAfter(input: string | URL, init?: Init): Promise<SlackResponse> {
  const response = await fetch(input, init as RequestInit)
  if (response.status !== 429 || response.headers.has('retry-after')) return response
  const headers = new Headers(response.headers)
  headers.set('retry-after', '1')
  return new Response(response.body, { status: 429, statusText: response.statusText, headers })
}
