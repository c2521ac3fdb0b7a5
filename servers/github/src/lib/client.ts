import {
  arrayBufferOf,
  connectionNeverMade,
  createHttpFetch,
  nodeCrypto,
  ResponseBody,
  textOf,
} from '@keel-mcp/core'
import type { Octokit } from '@octokit/rest'
import { type BottleneckLike, lightBottleneck, withLightUnlimited } from './scheduler.js'

export type { Octokit }

/** How the clients behave; tests shorten the waits, nothing else differs. */
export interface ClientOptions {
  /** API root, already normalised (see api-url.ts). The token is sent to this origin only. */
  baseUrl: string
  userAgent: string
  /** Milliseconds per second of `Retry-After` / backoff (1000; tests use 1). */
  retryAfterBaseMs?: number
  /** Longest rate-limit wait, in seconds, before the call fails with `rate_limited` instead (60). */
  maxRateLimitWaitS?: number
  /**
   * Spaces writes and searches as GitHub asks (1 s / 2 s apart, per token). Tests turn it off;
   * nothing else should.
   */
  spaceRequests?: boolean
  /** Debug lines (retries, rate-limit waits). Never receives the token. */
  log(message: string, fields?: Record<string, unknown>): void
  /** The `X-OAuth-Scopes` of each answer (classic tokens), with the key of the token it came for. */
  onScopes?(key: string, scopes: string): void
  /**
   * The `X-Accepted-GitHub-Permissions` of a 403 (fine-grained tokens, GitHub Apps): the permission
   * sets that would have served the request, with the key of the token that lacked them.
   */
  onDenied?(key: string, permissions: string): void
}

/** Most per-token clients kept at once (`--token-from-request`); the least recently used goes first. */
export const MAX_CACHED_CLIENTS = 64

type OctokitClass = new (options: Record<string, unknown>) => Octokit

interface Loaded {
  Octokit: OctokitClass
  /** plugin-throttling's scheduler (scheduler.ts), handed to it as `throttle.Bottleneck`. */
  Scheduler: ReturnType<typeof lightBottleneck>
}

let loading: Promise<Loaded> | undefined

/** Octokit and its plugins load on the first call, never at start-up (octokit.vendor.ts). */
function loadOctokit(): Promise<Loaded> {
  loading ??= import('./octokit.vendor.js').then((loaded) => {
    // The bin loads the vendor file as CommonJS: its exports are the default export there.
    const lib = (loaded as typeof loaded & { default?: typeof loaded }).default ?? loaded
    withLightUnlimited(lib.Bottleneck as unknown as BottleneckLike)
    return {
      // @octokit/rest's composition (octokit.vendor.ts) without request-log, then retry and throttling.
      Octokit: lib.Octokit.plugin(
        lib.legacyRestEndpointMethods,
        lib.paginateRest,
        lib.retry,
        lib.throttling,
      ) as unknown as OctokitClass,
      Scheduler: lightBottleneck(lib.Bottleneck as unknown as BottleneckLike),
    }
  })
  loading.catch(() => {
    loading = undefined
  })
  return loading
}

/** A scheduler that runs at once: the shape plugin-throttling's limiter groups have. */
const immediate = {
  key: () => ({
    schedule: (...args: unknown[]) => {
      const task = args.find((arg) => typeof arg === 'function') as (...rest: unknown[]) => unknown
      return Promise.resolve(task(...args.slice(args.indexOf(task) + 1)))
    },
  }),
}

/**
 * List tools always pass `page` and `per_page`; a request leaves without the ones equal to
 * GitHub's own defaults (page 1; 30 a page, 50 for notifications), the request GitHub's own
 * clients make for a first page (and the one its answers were recorded for in @octokit/fixtures).
 */
export function withoutDefaultPaging(request: Record<string, unknown>): void {
  if (request.page === 1) delete request.page
  const perPageDefault = String(request.url).includes('notifications') ? 50 : 30
  if (request.per_page === perPageDefault) delete request.per_page
}

/** A stable, non-reversible key for a token: caches and limiter ids never hold the token itself. */
export function tokenKey(token: string): string {
  return nodeCrypto().createHash('sha256').update(token).digest('hex').slice(0, 32)
}

/** GitHub (or what answers as GitHub) sent a JSON content type with a body that is not JSON. */
export class MalformedResponseError extends Error {
  override name = 'MalformedResponseError'
}

/** A GitHub answer that parsed but is not of the shape the API documents (e.g. a bare string). */
export class UnexpectedShapeError extends Error {
  override name = 'UnexpectedShapeError'
}

export class TokenHostError extends Error {
  override name = 'TokenHostError'
}

interface BodyResponse {
  status: number
  headers: Record<string, string | number | undefined>
  data: unknown
}

/**
 * Reads a success body as Octokit would (JSON, text or bytes by content type), but JSON with
 * `JSON.parse`: Octokit 22's own parser (json-with-bigint) runs a regular expression over the
 * whole text and a reviver over every value to turn integers past 2^53 into BigInts, several
 * times the cost of the parse itself on Node 20, and a BigInt could not be put into a result
 * anyway (GitHub's ids fit in a double). The body is core's httpFetch's (core's http-fetch.ts).
 */
export async function readBody(response: BodyResponse): Promise<void> {
  const body = response.data
  if (!(body instanceof ResponseBody)) return
  const contentType = String(response.headers['content-type'] ?? '')
  const separator = contentType.indexOf(';')
  const type = (separator === -1 ? contentType : contentType.slice(0, separator)).trim().toLowerCase()
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType)?.[1]?.toLowerCase()
  const text =
    !contentType ||
    /json/.test(type) ||
    type.startsWith('text/') ||
    (charset === 'utf-8' && type !== 'application/octet-stream')
  let bytes: Buffer
  try {
    bytes = await body.bytes()
  } catch (error) {
    // The connection broke while the body arrived (`TypeError: terminated`): the API's failure,
    // not a field of an answer a tool could not read.
    throw new MalformedResponseError(
      `GitHub's answer (HTTP ${response.status}) broke off before its end: ${(error as Error).message}`,
      { cause: error },
    )
  }
  response.data = text ? textOf(bytes) : arrayBufferOf(bytes)
  if (!text) return
  // A redirect read as such (`redirect: 'manual'`, artifact downloads) carries a Location, no body.
  if (!/json/.test(type) || (response.status >= 300 && response.status < 400)) return
  try {
    response.data = JSON.parse(response.data as string)
  } catch {
    // A cut-off or garbage answer is the API's failure: the tools would otherwise read fields of
    // a string and fail as `internal`.
    throw new MalformedResponseError(`GitHub answered HTTP ${response.status} with a body that is not JSON`)
  }
  // Every JSON answer of the REST API is an object or an array.
  if (typeof response.data !== 'object' || response.data === null) {
    throw new UnexpectedShapeError(`GitHub answered HTTP ${response.status} with JSON that is not an object`)
  }
}

/** A failed request's debug line (what @octokit/rest's request-log wrote): method, path, status, request id. */
function logFailure(
  log: ClientOptions['log'],
  octokit: Octokit,
  endpoint: Parameters<Octokit['request']['endpoint']['parse']>[0],
  error: unknown,
): void {
  const failed = error as { status?: number; response?: { headers?: Record<string, unknown> } }
  let path = String(endpoint.url)
  try {
    path = octokit.request.endpoint.parse(endpoint).url.replace(String(endpoint.baseUrl), '')
  } catch {
    // The route as given is still worth the line.
  }
  log('GitHub request failed', {
    method: endpoint.method,
    path,
    status: failed.status,
    requestId: failed.response?.headers?.['x-github-request-id'],
  })
}

/**
 * The `X-Accepted-GitHub-Permissions` of a 403 that is not a rate limit: the permission sets that
 * would have served the request (fine-grained tokens, GitHub Apps).
 */
function deniedBy(error: unknown, report: (permissions: string) => void): void {
  const failed = error as {
    status?: number
    message?: string
    response?: { headers?: Record<string, unknown> }
  }
  const headers = failed.response?.headers ?? {}
  const permissions = headers['x-accepted-github-permissions']
  // A rate limit is a 403 too, and may carry the header of the permissions the route needs:
  // it says nothing about what the token lacks.
  const rateLimited =
    headers['retry-after'] !== undefined ||
    String(headers['x-ratelimit-remaining']) === '0' ||
    /rate limit/i.test(failed.message ?? '')
  if (failed.status === 403 && permissions !== undefined && !rateLimited) report(String(permissions))
}

/**
 * How long an idle connection is kept for the next read (a GET, or a GraphQL query: see
 * {@link isGitHubRead}): a model's next call often comes 5–30 s after its last, and without a kept
 * connection it first waits for TCP and TLS handshakes with the API, two round trips or more.
 * GitHub is reported to close idle connections after 60 s; a read that meets such a close anyway
 * is sent again once (core's http-fetch.ts). Writes keep undici's 4 s.
 */
export const READ_KEEP_ALIVE_MS = 30_000

/**
 * Whether a request to the API other than a GET or HEAD (reads to the transport anyway) is a read:
 * a POST to GraphQL whose document holds no mutation. A mutation operation is always spelt with the keyword `mutation` (the `{ … }`
 * shorthand is a query), so a document in which those letters appear nowhere, in any case, not even
 * in a name, a string or a comment, changes nothing; one in which they do is taken for a write,
 * whatever it is (subscriptions too). A body that is not JSON with a string `query` is a write.
 */
export function isGitHubRead(method: string, url: URL, body: string | Buffer | undefined): boolean {
  if (method !== 'POST' || body === undefined || !url.pathname.endsWith('/graphql')) return false
  let document: unknown
  try {
    document = (JSON.parse(String(body)) as { query?: unknown } | null)?.query
  } catch {
    return false
  }
  return isQueryDocument(document)
}

/** A GraphQL document that cannot write: see {@link isGitHubRead}. */
function isQueryDocument(document: unknown): boolean {
  return typeof document === 'string' && !/mutation|subscription/i.test(document)
}

/**
 * Whether an Octokit request (its endpoint options, before they are sent) only reads: a GET or
 * HEAD, or a GraphQL query ({@link isGitHubRead} judges the same request on the wire).
 */
export function isReadEndpoint(endpoint: { method?: string; url?: string; query?: unknown }): boolean {
  const method = endpoint.method ?? 'GET'
  if (method === 'GET' || method === 'HEAD') return true
  return method === 'POST' && String(endpoint.url).endsWith('/graphql') && isQueryDocument(endpoint.query)
}

/** Failed writes that GitHub may have applied without confirming it (see {@link GitHubClients}). */
const unconfirmed = new WeakSet<object>()

/**
 * A 5xx (a lost connection is Octokit's 500 too) whose connection was made, or an answer that
 * broke off (its status, often a 2xx, arrived: the write was most likely applied).
 */
function mayHaveApplied(error: unknown): error is object {
  if (error instanceof MalformedResponseError) return true
  const status = (error as { status?: unknown } | null)?.status
  return typeof status === 'number' && status >= 500 && !connectionNeverMade(error)
}

/** GitHub's GraphQL answer for a transient failure, which it asks clients to retry. */
export const GRAPHQL_WENT_WRONG = /Something went wrong while executing your query/

/**
 * Whether `error` is the failure of a write that GitHub may have applied: a 5xx (GraphQL's
 * "Something went wrong" too) or a connection lost after the request left. The write was sent once.
 */
export function isUnconfirmedWrite(error: unknown): boolean {
  return typeof error === 'object' && error !== null && unconfirmed.has(error)
}

/** The transport of every Octokit client here: core's node:http fetch (http-fetch.ts). */
const githubFetch = createHttpFetch({ readKeepAliveMs: READ_KEEP_ALIVE_MS, isRead: isGitHubRead })

/** How often a request is sent again by this file (plugin-retry's count for the 5xx of a read). */
const RESENDS = 2

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Sends a read (plugin-retry retries its 5xx and network errors) and reads its body. A GraphQL
 * query answered "Something went wrong while executing your query" is sent again too, with
 * plugin-retry's waits: plugin-retry would, but it looks at a body this client has not read yet
 * (`parseSuccessResponseBody: false`).
 */
async function sendRead<O extends { url: string }, R extends BodyResponse>(
  request: (options: O) => R | Promise<R>,
  endpoint: O,
  base: number,
): Promise<R> {
  for (let resent = 0; ; resent++) {
    const response = await request(endpoint)
    await readBody(response)
    const errors = (response.data as { errors?: Array<{ message?: unknown }> } | null)?.errors
    const wentWrong =
      resent < RESENDS &&
      endpoint.url.endsWith('/graphql') &&
      Array.isArray(errors) &&
      GRAPHQL_WENT_WRONG.test(String(errors[0]?.message))
    if (!wentWrong) return response
    await pause(base * (resent + 1) ** 2)
  }
}

/**
 * Sends a write without plugin-retry's retries of 5xx and network errors: either may come after
 * GitHub applied the write, and sending it again would open the issue or post the comment twice.
 * Only a write whose connection was never made is sent again, with plugin-retry's waits. Rate
 * limits (plugin-throttling's waits) are answers that nothing was done, and stay as they are.
 */
async function sendWrite<O extends object, R extends BodyResponse>(
  request: (options: O) => R | Promise<R>,
  endpoint: O,
  base: number,
): Promise<R> {
  const options = endpoint as { request?: object }
  options.request = { ...options.request, retries: 0 }
  for (let resent = 0; ; resent++) {
    let response: R
    try {
      response = await request(endpoint)
    } catch (error) {
      if (resent >= RESENDS || !connectionNeverMade(error)) throw error
      await pause(base * (resent + 1) ** 2)
      continue
    }
    await readBody(response)
    return response
  }
}

/**
 * Octokit clients, one per token, created on first use. Each client sends its token only to the
 * configured API origin: a `Link` header or any other URL that points elsewhere is refused before
 * a request leaves. (Redirects are followed by githubFetch, which drops `Authorization` across origins,
 * as fetch does: that is how job logs reach their storage host without the token.)
 */
export class GitHubClients {
  readonly #options: ClientOptions
  readonly #origin: string
  readonly #clients = new Map<string, Promise<Octokit>>()
  #lastToken: string | undefined
  #lastKey = ''

  constructor(options: ClientOptions) {
    this.#options = options
    this.#origin = new URL(options.baseUrl).origin
  }

  /**
   * `tokenKey(token)`, without hashing again when the token is the one of the previous call (every
   * call of a server with one GITHUB_TOKEN; consecutive calls of one caller over HTTP).
   */
  keyOf(token: string | undefined): string {
    if (token === undefined) return 'anonymous'
    if (token !== this.#lastToken) {
      this.#lastKey = tokenKey(token)
      this.#lastToken = token
    }
    return this.#lastKey
  }

  /** The client for `token` (undefined: unauthenticated, public data only at 60 requests/hour). */
  get(token: string | undefined): Promise<Octokit> {
    const key = this.keyOf(token)
    const cached = this.#clients.get(key)
    if (cached) {
      // Map order is insertion order: re-inserting marks it most recently used.
      this.#clients.delete(key)
      this.#clients.set(key, cached)
      return cached
    }
    const created = this.#create(token, key)
    created.catch(() => this.#clients.delete(key))
    this.#clients.set(key, created)
    while (this.#clients.size > MAX_CACHED_CLIENTS) {
      const oldest = this.#clients.keys().next().value
      if (oldest === undefined) break
      this.#clients.delete(oldest)
    }
    return created
  }

  /** Clients currently cached (for tests of the bound). */
  get size(): number {
    return this.#clients.size
  }

  async #create(token: string | undefined, key: string): Promise<Octokit> {
    const { Octokit: Client, Scheduler } = await loadOctokit()
    const options = this.#options
    const base = options.retryAfterBaseMs ?? 1000
    const maxWait = options.maxRateLimitWaitS ?? 60
    const log = options.log
    const quiet = () => {}
    const retryOnce =
      (kind: string) =>
      (
        retryAfter: number,
        request: { method?: string; url?: string },
        _octokit: unknown,
        retryCount: number,
      ) => {
        const retry = retryCount < 1 && retryAfter <= maxWait
        log(`GitHub ${kind} rate limit`, { method: request.method, url: request.url, retryAfter, retry })
        return retry
      }
    const octokit = new Client({
      ...(token === undefined ? {} : { auth: token }),
      baseUrl: options.baseUrl,
      userAgent: options.userAgent,
      // Requests go through node:http (core's http-fetch.ts), success bodies are read by readBody, below.
      request: { fetch: githubFetch, parseSuccessResponseBody: false },
      log: {
        debug: quiet,
        info: quiet,
        warn: (message: string) => log(message),
        error: (message: string) => log(message),
      },
      retry: {
        retries: 2,
        retryAfterBaseValue: base,
        doNotRetry: [400, 401, 403, 404, 409, 410, 422, 429, 451],
      },
      throttle: {
        // Limits are per token on GitHub: each token gets its own limiter, never shared with another user's.
        id: key,
        Bottleneck: Scheduler,
        retryAfterBaseValue: base,
        fallbackSecondaryRateRetryAfter: 60,
        onRateLimit: retryOnce('primary'),
        onSecondaryRateLimit: retryOnce('secondary'),
        ...(options.spaceRequests === false
          ? { write: immediate, search: immediate, notifications: immediate }
          : {}),
      },
    })
    const origin = this.#origin
    const baseUrl = options.baseUrl
    const onScopes = options.onScopes
    const onDenied = options.onDenied
    // One wrap instead of a before, an after and an error hook: each hook before-after-hook runs
    // is a few more promises and bound functions a request. Registered last, it is the outermost:
    // it sees each request once, after plugin-retry's retries and plugin-throttling's waits.
    octokit.hook.wrap('request', async (request, endpoint) => {
      const read = isReadEndpoint(endpoint as { method?: string; url?: string; query?: unknown })
      try {
        withoutDefaultPaging(endpoint)
        // A route (`/repos/{owner}/{repo}`) on the configured root cannot leave its origin: the root
        // is prefixed and the route's first character starts the path. Anything else (a URL from a
        // `Link` header, another baseUrl) is expanded and checked.
        if (!endpoint.url.startsWith('/') || endpoint.baseUrl !== baseUrl) {
          const url = new URL(octokit.request.endpoint.parse(endpoint).url)
          if (url.origin !== origin) {
            throw new TokenHostError(
              `refused a request to ${url.origin}: only the configured API host receives the token`,
            )
          }
        }
        const response = read
          ? await sendRead(request, endpoint, base)
          : await sendWrite(request, endpoint, base)
        const scopes = response.headers['x-oauth-scopes']
        if (onScopes && scopes !== undefined) onScopes(key, String(scopes))
        return response
      } catch (error) {
        if (!read && mayHaveApplied(error)) unconfirmed.add(error)
        logFailure(log, octokit, endpoint, error)
        if (onDenied) deniedBy(error, (permissions) => onDenied(key, permissions))
        throw error
      }
    })
    return octokit
  }
}
