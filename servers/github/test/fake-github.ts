import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'

/**
 * A loopback server that answers like the GitHub REST API: routes from recorded `@octokit/fixtures`
 * scenarios (replayed with their status, headers and bodies, `https://api.github.com` links
 * rewritten to this server) and hand-written routes in the same shape. Every request is recorded
 * with the credential it carried, so tests can say which token reached the API.
 */

export interface FakeRequest {
  method: string
  /** Path below the API root (the GHES `/api/v3` prefix removed). */
  path: string
  query: URLSearchParams
  authorization: string | undefined
  accept: string | undefined
  body: unknown
}

export interface Reply {
  status?: number
  headers?: Record<string, string | number>
  body?: unknown
}

export type Handler = (request: FakeRequest) => Reply | Promise<Reply>

interface Route {
  method: string
  path: string | RegExp
  /** Query parameters that must be present with these values. */
  query: Record<string, string>
  /** Replies in order; the last one repeats unless `once`. */
  replies: Array<Reply | Handler>
  once: boolean
  authorization?: string
}

export interface FixtureEntry {
  method: string
  path: string
  body: unknown
  status: number
  reqheaders?: Record<string, string>
  headers: Record<string, string | number>
  response: unknown
}

const fixturesDir = (() => {
  const require = createRequire(import.meta.url)
  return require.resolve('@octokit/fixtures/package.json').replace(/package\.json$/, '')
})()

/** A recorded scenario of `@octokit/fixtures` (api.github.com). */
export function recorded(name: string): FixtureEntry[] {
  return JSON.parse(
    readFileSync(`${fixturesDir}scenarios/api.github.com/${name}/normalized-fixture.json`, 'utf8'),
  ) as FixtureEntry[]
}

/** The token the recordings were made with. */
export const RECORDED_TOKEN = '0000000000000000000000000000000000000001'

// Headers that describe the recorded transfer, not the response: the fake sends its own.
const TRANSFER_HEADERS = new Set(['content-length', 'connection', 'transfer-encoding', 'content-encoding'])

export class FakeGitHub {
  readonly requests: FakeRequest[] = []
  readonly unmatched: string[] = []
  #routes: Route[] = []
  #server: Server
  #prefix: string
  #origin = ''

  private constructor(server: Server, prefix: string) {
    this.#server = server
    this.#prefix = prefix
  }

  /** Starts on 127.0.0.1; `prefix` serves the API below a path, as GitHub Enterprise Server does (`/api/v3`). */
  static async start(options: { prefix?: string } = {}): Promise<FakeGitHub> {
    let fake: FakeGitHub | undefined
    const server = createServer((req, res) => {
      void fake?.handle(req).then(
        ({ status, headers, body }) => {
          res.writeHead(status, headers)
          res.end(body)
        },
        (error: Error) => {
          res.writeHead(500, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ message: `fake failed: ${error.message}` }))
        },
      )
    })
    fake = new FakeGitHub(server, options.prefix ?? '')
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    fake.#origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    return fake
  }

  /** The API root to give the server (`--api-url`). */
  get url(): string {
    return `${this.#origin}${this.#prefix}`
  }

  get origin(): string {
    return this.#origin
  }

  /** Answers `method path` (exact path or RegExp; `?a=b` in a string path must be present in the query). */
  on(method: string, path: string | RegExp, ...replies: Array<Reply | Handler>): this {
    return this.#add(method, path, replies, false)
  }

  /** Like `on`, but each reply is used once; then the route is spent. */
  once(method: string, path: string | RegExp, ...replies: Array<Reply | Handler>): this {
    return this.#add(method, path, replies, true)
  }

  /** Replays a recorded scenario: each interaction answers once, and only for the recorded token. */
  replay(entries: FixtureEntry[]): this {
    for (const entry of entries) {
      const headers = Object.fromEntries(
        Object.entries(entry.headers).filter(([name]) => !TRANSFER_HEADERS.has(name.toLowerCase())),
      )
      const route = this.#route(
        entry.method,
        entry.path,
        [{ status: entry.status, headers, body: entry.response }],
        true,
      )
      if (entry.reqheaders?.authorization) route.authorization = entry.reqheaders.authorization
      this.#routes.push(route)
    }
    return this
  }

  /** Requests to a path (RegExp or exact). */
  calls(method: string, path: string | RegExp): FakeRequest[] {
    return this.requests.filter(
      (request) =>
        request.method === method.toUpperCase() &&
        (typeof path === 'string' ? request.path === path : path.test(request.path)),
    )
  }

  reset(): void {
    this.#routes = []
    this.requests.length = 0
    this.unmatched.length = 0
  }

  close(): Promise<void> {
    this.#server.closeAllConnections()
    return new Promise((resolve) => this.#server.close(() => resolve()))
  }

  #add(method: string, path: string | RegExp, replies: Array<Reply | Handler>, once: boolean): this {
    this.#routes.push(this.#route(method, path, replies, once))
    return this
  }

  #route(method: string, path: string | RegExp, replies: Array<Reply | Handler>, once: boolean): Route {
    if (typeof path !== 'string' || !path.includes('?')) {
      return {
        method: method.toUpperCase(),
        path: typeof path === 'string' ? trimSlash(path) : path,
        query: {},
        replies: [...replies],
        once,
      }
    }
    const url = new URL(path, 'http://fake.invalid')
    return {
      method: method.toUpperCase(),
      path: trimSlash(decodeURIComponent(url.pathname)),
      query: Object.fromEntries(url.searchParams),
      replies: [...replies],
      once,
    }
  }

  async handle(
    req: IncomingMessage,
  ): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const raw = Buffer.concat(chunks).toString('utf8')
    const url = new URL(req.url ?? '/', this.#origin)
    if (!url.pathname.startsWith(this.#prefix)) {
      return this.#json(404, { message: `fake: outside the API prefix ${this.#prefix}` })
    }
    const request: FakeRequest = {
      method: req.method ?? 'GET',
      path: trimSlash(decodeURIComponent(url.pathname.slice(this.#prefix.length) || '/')),
      query: url.searchParams,
      authorization: req.headers.authorization,
      accept: req.headers.accept,
      body: raw ? safeJson(raw) : undefined,
    }
    this.requests.push(request)
    const route = this.#routes.find(
      (candidate) =>
        candidate.replies.length > 0 &&
        candidate.method === request.method &&
        (typeof candidate.path === 'string'
          ? candidate.path === request.path
          : candidate.path.test(request.path)) &&
        Object.entries(candidate.query).every(([key, value]) => request.query.get(key) === value) &&
        (candidate.authorization === undefined || candidate.authorization === request.authorization),
    )
    if (!route) {
      this.unmatched.push(`${request.method} ${request.path}${url.search}`)
      return this.#json(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' })
    }
    const next = route.once || route.replies.length > 1 ? route.replies.shift() : route.replies[0]
    const reply = typeof next === 'function' ? await next(request) : (next ?? {})
    const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' }
    for (const [name, value] of Object.entries(reply.headers ?? {})) {
      headers[name.toLowerCase()] = String(value).replaceAll('https://api.github.com', this.url)
    }
    const body =
      reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body)
    return { status: reply.status ?? 200, headers, body }
  }

  #json(status: number, body: unknown) {
    return {
      status,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify(body),
    }
  }
}

/** GitHub answers `/contents` and `/contents/` alike. */
function trimSlash(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') : path
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** Git's name for a blob, as GitHub answers a write with it: SHA-1 of `blob <size>\0<bytes>`. */
export function blobSha(base64: string): string {
  const bytes = Buffer.from(base64, 'base64')
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex')
}

/** `POST /git/blobs` as GitHub answers it: the blob's real name. */
export const storeBlob: Handler = (request) => ({
  status: 201,
  body: { sha: blobSha(String((request.body as { content?: string }).content ?? '')) },
})

/** `PUT /contents/{path}` as GitHub answers it: the commit and the stored blob's real name. */
export const storeFile =
  (commit: string, htmlUrl: string): Handler =>
  (request) => ({
    status: 201,
    body: {
      commit: { sha: commit },
      content: {
        sha: blobSha(String((request.body as { content?: string }).content ?? '')),
        html_url: htmlUrl,
      },
    },
  })
