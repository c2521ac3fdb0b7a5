import type * as Http from 'node:http'
import type * as Https from 'node:https'
import { createRequire } from 'node:module'
import type * as Zlib from 'node:zlib'

/**
 * A `fetch` for the API clients the servers use (Octokit's `request.fetch`, `@slack/web-api`'s
 * `fetch` option): `node:http` / `node:https` over keep-alive agents, instead of Node's built-in
 * fetch (undici). The clients read little of a fetch response (status, URL, headers, the body as
 * text or bytes), and undici's fetch builds much more for each request (a Request, Headers lists, a
 * Response, a web stream for the body, its own HTTP parser in WebAssembly): the largest single cost
 * of a warm GitHub or Slack call after the socket writes themselves (docs/performance.md).
 *
 * What it keeps of fetch, as the servers' APIs are used:
 * - redirects followed (at most 20) as fetch's default does: 303, and 301/302 after a POST, become
 *   a GET without a body; across origins `Authorization`, `Cookie` and `Proxy-Authorization` are
 *   dropped (job logs reach their storage host without the token); `redirect: 'manual'` answers
 *   the 3xx itself, `'error'` refuses it;
 * - the `AbortSignal`: a signal already aborted sends nothing; an abort rejects with its reason,
 *   while waiting for the answer or reading its body, and closes the connection;
 * - undici's limits: 10 s to connect, 300 s without a byte of the answer's head or body;
 * - `gzip`, `deflate` and `br` answers decoded, as fetch asks for them;
 * - response headers as fetch's Headers give them: names in lower case, repeated headers joined
 *   with `, `;
 * - network failures as fetch's `TypeError('fetch failed')` with the cause, and a body that breaks
 *   off as `TypeError('terminated')`, which Octokit and readBody turn into the same errors as
 *   before.
 * - HTTP(S)_PROXY / NO_PROXY where Node's fetch reads them: only when Node is asked to
 *   (`NODE_USE_ENV_PROXY=1` or `--use-env-proxy`, Node 22.21 and 24), through the agents' own
 *   `proxyEnv` option; Node 20's fetch reads no proxy variables, and neither does this.
 * Bodies sent are strings or bytes (JSON and form-encoded requests); a client with other bodies
 * (multipart) keeps Node's fetch for those.
 *
 * Tested through the clients that use it: `servers/github/src/lib/http-fetch.test.ts` (redirects,
 * abort, timeouts, decoding, https) and `servers/slack/test/transport.test.ts`.
 */

export interface FetchInit {
  method?: string
  headers?: Record<string, string>
  body?: string | Uint8Array | ArrayBuffer | null
  redirect?: 'follow' | 'manual' | 'error'
  signal?: AbortSignal | null
}

/** Longest wait for a connection (undici's `connectTimeout`). */
const CONNECT_TIMEOUT_MS = 10_000
/** Longest silence of a connection while an answer is awaited or read (undici's head and body timeouts). */
const IDLE_TIMEOUT_MS = 300_000
/** How long an idle connection is kept for the next request (undici's `keepAliveTimeout`). */
const KEEP_ALIVE_MS = 4_000
const MAX_REDIRECTS = 20
/** Headers that never follow a redirect to another origin (as fetch: the token stays home). */
const CROSS_ORIGIN_DROPPED = ['authorization', 'cookie', 'proxy-authorization']
/** Headers that describe a request body, dropped when a redirect turns the request into a GET. */
const BODY_HEADERS = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-location',
]

/** Response headers as fetch's `Headers` iterate them: lower-case names, repeats joined. */
export class ResponseHeaders {
  readonly #map = new Map<string, string>()

  constructor(raw: readonly string[]) {
    const map = this.#map
    for (let index = 0; index < raw.length; index += 2) {
      const name = (raw[index] as string).toLowerCase()
      const value = raw[index + 1] as string
      const previous = map.get(name)
      map.set(name, previous === undefined ? value : `${previous}, ${value}`)
    }
  }

  get(name: string): string | null {
    return this.#map.get(name.toLowerCase()) ?? null
  }

  has(name: string): boolean {
    return this.#map.has(name.toLowerCase())
  }

  entries(): IterableIterator<[string, string]> {
    return this.#map.entries()
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.#map.entries()
  }
}

/** An answer's body, read whole as it arrives (the `body` of a FetchResponse). */
export class ResponseBody {
  readonly #bytes: Promise<Buffer>
  #used = false

  constructor(bytes: Promise<Buffer>) {
    this.#bytes = bytes
    // Nobody may ever read it (a 204, an answer Octokit drops): its failure is not unhandled.
    bytes.catch(() => {})
  }

  /** The whole body; a body can be read once, as a stream's. */
  bytes(): Promise<Buffer> {
    if (this.#used) return Promise.reject(new TypeError('Body is unusable: Body has already been read'))
    this.#used = true
    return this.#bytes
  }
}

export class FetchResponse {
  readonly ok: boolean
  readonly redirected: boolean

  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly url: string,
    readonly headers: ResponseHeaders,
    readonly body: ResponseBody,
    redirects: number,
  ) {
    this.ok = status >= 200 && status < 300
    this.redirected = redirects > 0
  }

  async text(): Promise<string> {
    return textOf(await this.body.bytes())
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return arrayBufferOf(await this.body.bytes())
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text())
  }
}

/** UTF-8 text as fetch's text() decodes it: a leading byte order mark is not part of the text. */
export function textOf(bytes: Buffer): string {
  const text = bytes.toString('utf8')
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
}

/** The bytes in an ArrayBuffer of their own (a Buffer may be a view of a shared pool). */
export function arrayBufferOf(bytes: Buffer): ArrayBuffer {
  const copy = new ArrayBuffer(bytes.byteLength)
  new Uint8Array(copy).set(bytes)
  return copy
}

interface Modules {
  http: typeof Http
  https: typeof Https
  zlib: typeof Zlib
}

interface Agents {
  httpAgent: Http.Agent
  httpsAgent: Https.Agent
}

let modules: Modules | undefined

/** node:http, node:https and node:zlib load with the first request, never at start-up. */
function loadModules(): Modules {
  if (modules) return modules
  const require = createRequire(import.meta.url)
  modules = {
    http: require('node:http') as typeof Http,
    https: require('node:https') as typeof Https,
    zlib: require('node:zlib') as typeof Zlib,
  }
  return modules
}

export interface HttpFetchOptions {
  /** How long an idle connection is kept for the next request, ms (default 4 s, undici's). */
  keepAliveMs?: number
  /**
   * How long an idle connection is kept for the next read (a GET or HEAD, or what `isRead` names),
   * ms (default: keepAliveMs). Reads then go over agents of their own, while writes keep
   * keepAliveMs. (With or without it, a read sent on a kept connection that the server closed
   * meanwhile is sent again once, and a write never is: see {@link fetchWith}.)
   */
  readKeepAliveMs?: number
  /**
   * Which other requests are reads: GET and HEAD always are. A read goes over the read agents
   * (readKeepAliveMs) and is sent again once when it meets a kept connection's close; any other
   * request is a write. An API whose reads are POSTs (Slack's Web API, GitHub's GraphQL queries)
   * names them here, by method, URL and body; what it does not name stays a write.
   */
  isRead?: ReadTest
}

/** Whether a request with this method, URL and body changes nothing on the server. */
export type ReadTest = (method: string, url: URL, body: string | Buffer | undefined) => boolean

interface Pools {
  pool: () => Agents
  readPool: () => Agents
  isRead: ReadTest | undefined
}

/** A `fetch` with its own keep-alive agents (made on its first request). */
export type HttpFetch = (input: string | URL, init?: FetchInit) => Promise<FetchResponse>

/** A {@link HttpFetch} with its own connection pool; see the top of this file for what it keeps of fetch. */
export function createHttpFetch(options: HttpFetchOptions = {}): HttpFetch {
  const agentsFor = (keepAliveMs: number | undefined): (() => Agents) => {
    let agents: Agents | undefined
    return () => {
      if (agents) return agents
      const { http, https } = loadModules()
      const agent = agentOptions(process.env, process.execArgv, keepAliveMs)
      agents = { httpAgent: new http.Agent(agent), httpsAgent: new https.Agent(agent) }
      return agents
    }
  }
  const pool = agentsFor(options.keepAliveMs)
  const readPool =
    options.readKeepAliveMs === undefined || options.readKeepAliveMs === options.keepAliveMs
      ? pool
      : agentsFor(options.readKeepAliveMs)
  const pools: Pools = { pool, readPool, isRead: options.isRead }
  return (input, init) => fetchWith(pools, input, init)
}

/**
 * The agents' options: idle connections are kept for the next request (unreferenced: they never
 * hold the process), the most recently used first, so a burst's extra connections are the ones left
 * to close. An idle connection closes after 4 s (undici's keep-alive timeout; sooner when the
 * server's `Keep-Alive: timeout=` hint says so), before a server drops it under a request being
 * sent. The environment's proxy where Node's fetch would use it.
 */
export function agentOptions(
  env: NodeJS.ProcessEnv,
  execArgv: readonly string[],
  keepAliveMs = KEEP_ALIVE_MS,
): Http.AgentOptions & { proxyEnv?: NodeJS.ProcessEnv } {
  const envProxy =
    env.NODE_USE_ENV_PROXY === '1' ||
    execArgv.includes('--use-env-proxy') ||
    /(^|\s)--use-env-proxy(\s|$)/.test(env.NODE_OPTIONS ?? '')
  return {
    keepAlive: true,
    scheduling: 'lifo',
    timeout: keepAliveMs,
    ...(envProxy ? { proxyEnv: env } : {}),
  }
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError')
}

function failed(cause: unknown): TypeError {
  return new TypeError('fetch failed', { cause })
}

/** Codes of a connection that was never made (undici's code for its connect timeout too). */
const NOT_CONNECTED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
])

/**
 * Whether a request's failure shows that its connection was never made (refused, unroutable, a
 * name that did not resolve, the connect timeout), so the request cannot have reached the server
 * and sending it again cannot apply it twice. It follows `cause` through a client's wrappers
 * (Octokit's RequestError, `@slack/web-api`'s request error, fetch's `TypeError`). Anything else
 * (a reset, a close, a timeout once connected) may have come after the server read the request.
 */
export function connectionNeverMade(error: unknown): boolean {
  let current = error
  for (let depth = 0; depth < 6 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && NOT_CONNECTED.has(code)) return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}

/** `fetch(url, init)` on a pool shared by its callers: see the top of this file for what it keeps of fetch. */
export const httpFetch: HttpFetch = createHttpFetch()

async function fetchWith(
  { pool, readPool, isRead }: Pools,
  input: string | URL,
  init: FetchInit = {},
): Promise<FetchResponse> {
  const signal = init.signal ?? undefined
  if (signal?.aborted) throw abortReason(signal)
  let url: URL
  try {
    url = new URL(String(input))
  } catch (error) {
    throw new TypeError(`Failed to parse URL from ${String(input)}`, { cause: error })
  }
  let method = (init.method ?? 'GET').toUpperCase()
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(init.headers ?? {})) headers[name.toLowerCase()] = value
  let body = bodyBytes(init.body)
  const redirect = init.redirect ?? 'follow'
  headers['accept-encoding'] ??= 'gzip, deflate, br'
  for (let redirects = 0; ; redirects++) {
    const reading = method === 'GET' || method === 'HEAD' || isRead?.(method, url, body) === true
    const agents = (reading ? readPool : pool)()
    let response: FetchResponse
    try {
      response = await exchange(agents, url, method, headers, body, signal, redirects)
    } catch (error) {
      // A kept connection the server closed while this request was on its way: the request never
      // got an answer. A read (it changes nothing) is sent again once: the closed connection has
      // left the pool, so it goes on another kept one or a new one. A write is not sent again: the
      // server may have acted on it.
      if (!reading || !staleFailures.has(error as object) || signal?.aborted) throw error
      response = await exchange(agents, url, method, headers, body, signal, redirects)
    }
    const location = response.headers.get('location')
    if (location === null || !isRedirect(response.status) || redirect === 'manual') return response
    // Not read: the connection goes back to the pool (or closes) once the body is drained.
    response.body.bytes().catch(() => {})
    if (redirect === 'error') throw failed(new Error('unexpected redirect'))
    if (redirects === MAX_REDIRECTS) throw failed(new Error('redirect count exceeded'))
    let next: URL
    try {
      next = new URL(location, url)
    } catch (error) {
      throw failed(error)
    }
    if (next.protocol !== 'http:' && next.protocol !== 'https:')
      throw failed(new Error('URL scheme must be a HTTP(S) scheme'))
    if (next.origin !== url.origin) for (const name of CROSS_ORIGIN_DROPPED) delete headers[name]
    if (
      response.status === 303
        ? method !== 'HEAD'
        : (response.status === 301 || response.status === 302) && method === 'POST'
    ) {
      method = 'GET'
      body = undefined
      for (const name of BODY_HEADERS) delete headers[name]
    }
    url = next
  }
}

function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308
}

function bodyBytes(body: FetchInit['body']): Buffer | string | undefined {
  if (body === undefined || body === null) return undefined
  if (typeof body === 'string') return body
  if (body instanceof ArrayBuffer) return Buffer.from(body)
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  throw new TypeError('httpFetch sends a string or bytes as a body')
}

/**
 * Failures of requests sent on a kept connection that closed before any of the answer came: the
 * server had closed it while idle, and the request met the close.
 */
const staleFailures = new WeakSet<object>()

/** Socket errors of a connection closed under a request (the peer's FIN or RST). */
const CLOSED_UNDER_REQUEST = new Set(['ECONNRESET', 'EPIPE'])

/** One request and its answer's head; the body is read on in the background (ResponseBody). */
function exchange(
  { httpAgent, httpsAgent }: Agents,
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: Buffer | string | undefined,
  signal: AbortSignal | undefined,
  redirects: number,
): Promise<FetchResponse> {
  const { http, https } = loadModules()
  const secure = url.protocol === 'https:'
  if (!secure && url.protocol !== 'http:') return Promise.reject(failed(new Error('unknown scheme')))
  const sent = { ...headers }
  if (body !== undefined) sent['content-length'] = String(Buffer.byteLength(body))
  else if (method === 'POST' || method === 'PUT' || method === 'PATCH') sent['content-length'] = '0'
  return new Promise<FetchResponse>((resolve, reject) => {
    let request: Http.ClientRequest
    try {
      request = (secure ? https : http).request(url, {
        method,
        headers: sent,
        agent: secure ? httpsAgent : httpAgent,
      })
    } catch (error) {
      // An invalid header name or value (fetch: a TypeError before anything is sent).
      reject(new TypeError((error as Error).message, { cause: error }))
      return
    }
    let settled = false
    // Set while the body is read: ends it with an error (`as` is: the error itself, not `terminated`).
    let finishBody: ((error: unknown, as?: 'as is') => void) | undefined
    const fail = (error: unknown, as?: 'as is') => {
      if (!settled) {
        settled = true
        reject(error)
      } else finishBody?.(error, as)
    }
    const onAbort = () => {
      // The reason first: the destroyed request's own errors then find the exchange settled.
      fail(abortReason(signal as AbortSignal), 'as is')
      request.destroy()
      cleanup()
    }
    const cleanup = () => signal?.removeEventListener('abort', onAbort)
    signal?.addEventListener('abort', onAbort, { once: true })
    request.setTimeout(IDLE_TIMEOUT_MS, () => {
      // Answered and read whole: the connection may already serve another request.
      if (settled && !finishBody) return
      fail(settled ? new Error('body timeout') : failed(new Error('headers timeout')))
      request.destroy()
      cleanup()
    })
    request.on('socket', (socket) => {
      if (!socket.connecting) return
      const timer = setTimeout(() => {
        fail(failed(Object.assign(new Error('connect timeout'), { code: 'UND_ERR_CONNECT_TIMEOUT' })))
        request.destroy()
        cleanup()
      }, CONNECT_TIMEOUT_MS)
      socket.once(secure ? 'secureConnect' : 'connect', () => clearTimeout(timer))
      socket.once('close', () => clearTimeout(timer))
    })
    request.on('error', (error) => {
      if (settled) fail(error)
      else {
        const failure = failed(error)
        if (request.reusedSocket && CLOSED_UNDER_REQUEST.has((error as NodeJS.ErrnoException).code ?? ''))
          staleFailures.add(failure)
        fail(failure)
      }
      cleanup()
    })
    request.on('response', (answer) => {
      const status = answer.statusCode ?? 0
      const responseHeaders = new ResponseHeaders(answer.rawHeaders)
      const bytes = new Promise<Buffer>((done, broke) => {
        finishBody = (error, as) => {
          finishBody = undefined
          cleanup()
          broke(as ? error : new TypeError('terminated', { cause: error }))
        }
        const chunks: Buffer[] = []
        let length = 0
        const decoded = decoder(responseHeaders.get('content-encoding'), method, status)
        const source = decoded ? answer.pipe(decoded) : answer
        if (decoded) decoded.on('error', (error) => finishBody?.(error))
        source.on('data', (chunk: Buffer) => {
          chunks.push(chunk)
          length += chunk.length
        })
        source.on('end', () => {
          if (!finishBody) return
          finishBody = undefined
          cleanup()
          done(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, length))
        })
        answer.on('aborted', () => finishBody?.(new Error('aborted')))
        answer.on('error', (error) => finishBody?.(error))
      })
      settled = true
      resolve(
        new FetchResponse(
          status,
          answer.statusMessage ?? '',
          url.href,
          responseHeaders,
          new ResponseBody(bytes),
          redirects,
        ),
      )
    })
    if (body === undefined) request.end()
    else request.end(body)
  })
}

/** A decoder for a compressed answer, as fetch decodes (none for HEAD, 204, 304). */
function decoder(
  encoding: string | null,
  method: string,
  status: number,
): Zlib.Gunzip | Zlib.BrotliDecompress | undefined {
  if (encoding === null || method === 'HEAD' || status === 204 || status === 304) return undefined
  const { zlib } = loadModules()
  const coding = encoding.trim().toLowerCase()
  // Flushes as fetch's: a body cut short by the server is still read as far as it goes.
  const options = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH }
  if (coding === 'gzip' || coding === 'x-gzip') return zlib.createGunzip(options)
  if (coding === 'deflate') return zlib.createUnzip(options)
  if (coding === 'br') return zlib.createBrotliDecompress()
  return undefined
}
