/**
 * The Web API client's HTTP transport, handed to `@slack/web-api` as its `fetch` option: one
 * `node:http(s)` request on a keep-alive agent, the answer read whole. The client keeps everything
 * else (its request queue, retries, 429 handling, form encoding, result checks); only the wire
 * changes. Node's `fetch` builds web streams, a request object and a response object around every
 * call: about three times the CPU of the same request over `node:http` (≈ 220 against 65 µs on
 * loopback, client and server together), a third of a warm history call (docs/performance.md).
 *
 * What `fetch` did that this does too: redirects are refused (`redirect: 'error'`), an abort signal
 * ends the request, gzip, deflate and brotli answers are asked for and decoded, idle connections are
 * dropped before the server would (its `Keep-Alive` hint, at most 4 s, as undici does) and never
 * keep the process alive, a 429 without `Retry-After` reads as 1 s (see {@link ResponseHeaders}).
 * A multipart body (binary arguments) still goes through `fetch`.
 */
import type { Agent, IncomingMessage } from 'node:http'
import type { FetchFunction } from '@slack/web-api'

/** Idle keep-alive connections are closed after this long (undici's default). */
export const IDLE_MS = 4_000

type Init = NonNullable<Parameters<FetchFunction>[1]>
type FetchResponse = Awaited<ReturnType<FetchFunction>>
type Decoder = (input: Buffer, callback: (error: Error | null, result: Buffer) => void) => void

/**
 * The `fetch` of a client whose Web API root is `apiUrl`; node's modules load on the first call.
 * `idleMs`: how long an idle connection is kept (tests shorten it).
 */
export function createTransport(apiUrl: string, idleMs = IDLE_MS): FetchFunction {
  const secure = apiUrl.startsWith('https:')
  let loaded: Promise<Send> | undefined
  return (input, init = {}) => {
    const url = String(input)
    // Multipart bodies, and a URL of the other scheme, are left to fetch (neither is a Web API call here).
    if (
      (init.body !== undefined && typeof init.body !== 'string') ||
      !url.startsWith(secure ? 'https:' : 'http:')
    )
      return withRetryAfter(url, init)
    loaded ??= load(secure, idleMs)
    return loaded.then((send) => send(url, init))
  }
}

type Send = (url: string, init: Init) => Promise<FetchResponse>

async function load(secure: boolean, idleMs: number): Promise<Send> {
  const [http, zlib] = await Promise.all([
    secure ? import('node:https') : import('node:http'),
    import('node:zlib'),
  ])
  const agent: Agent = new http.Agent({ keepAlive: true, timeout: idleMs })
  const decoders: Record<string, Decoder> = {
    gzip: zlib.gunzip,
    'x-gzip': zlib.gunzip,
    deflate: zlib.inflate,
    br: zlib.brotliDecompress,
  }
  return (url, init) =>
    new Promise<FetchResponse>((resolve, reject) => {
      const body = init.body as string | undefined
      const headers: Record<string, string> = { ...init.headers, 'accept-encoding': 'gzip, deflate, br' }
      if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body))
      const request = http.request(url, {
        method: init.method ?? 'GET',
        headers,
        agent,
        ...(init.signal ? { signal: init.signal } : {}),
      })
      request.on('error', reject)
      request.once('response', (response: IncomingMessage) => {
        const status = response.statusCode ?? 0
        if (status >= 300 && status < 400 && init.redirect !== 'manual' && response.headers.location) {
          // fetch with `redirect: 'error'` fails the request; this one never follows either way.
          response.resume()
          reject(new TypeError(`fetch failed: redirected to another URL (HTTP ${status})`))
          return
        }
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('error', reject)
        // A connection that ends inside the body fails the request (never a call left waiting).
        response.once('close', () => {
          if (!response.complete) reject(new Error('fetch failed: the connection closed inside the answer'))
        })
        response.once('end', () => {
          const raw = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)
          const encoding = String(response.headers['content-encoding'] ?? '')
            .trim()
            .toLowerCase()
          const decode = encoding ? decoders[encoding] : undefined
          const answer = (bytes: Buffer) =>
            resolve(new NodeResponse(status, response.statusMessage ?? '', url, response.headers, bytes))
          if (!decode) return answer(raw)
          decode(raw, (error, bytes) => (error ? reject(error) : answer(bytes)))
        })
      })
      request.end(body)
    })
}

/** What the client reads of an answer: status, headers, the body as text or bytes. */
class NodeResponse implements FetchResponse {
  readonly headers: ResponseHeaders
  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly url: string,
    headers: IncomingMessage['headers'],
    private readonly bytes: Buffer,
  ) {
    this.headers = new ResponseHeaders(headers, status)
  }

  get ok(): boolean {
    return this.status >= 200 && this.status < 300
  }

  async text(): Promise<string> {
    const text = this.bytes.toString('utf8')
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text())
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const { buffer, byteOffset, byteLength } = this.bytes
    return buffer.slice(byteOffset, byteOffset + byteLength) as ArrayBuffer
  }
}

/**
 * Node's header record (lower-case names) read as fetch's `Headers`. A 429 without `Retry-After`
 * (from a proxy in between) reads as one second, as {@link withRetryAfter} makes it for fetch.
 */
class ResponseHeaders {
  constructor(
    private readonly record: IncomingMessage['headers'],
    status: number,
  ) {
    if (status === 429 && record['retry-after'] === undefined) this.record = { ...record, 'retry-after': '1' }
  }

  get(name: string): string | null {
    const value = this.record[name.toLowerCase()]
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value
  }

  has(name: string): boolean {
    return this.record[name.toLowerCase()] !== undefined
  }

  *entries(): IterableIterator<[string, string]> {
    for (const name of Object.keys(this.record)) yield [name, this.get(name) as string]
  }
}

/**
 * `fetch`, where a 429 without `Retry-After` (from a proxy in between) counts as 1 s, so the
 * rate-limit policy decides about it too instead of the client failing with a bare error.
 */
export async function withRetryAfter(input: string | URL, init?: Init): Promise<FetchResponse> {
  const response = await fetch(input, init as RequestInit)
  if (response.status !== 429 || response.headers.has('retry-after')) return response
  const headers = new Headers(response.headers)
  headers.set('retry-after', '1')
  return new Response(response.body, { status: 429, statusText: response.statusText, headers })
}
