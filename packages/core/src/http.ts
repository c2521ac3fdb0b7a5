import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from '@modelcontextprotocol/node'
import { createMcpHandler, isLegacyRequest, type McpServer } from '@modelcontextprotocol/server'
import { createInstance, type Runtime } from './build-server.js'
import { isLoopback } from './config.js'
import { BoundedEventStore } from './event-store.js'
import { checkEnvelope, errorResponse, INVALID_REQUEST, PARSE_ERROR } from './jsonrpc.js'

/** A running HTTP endpoint. */
export interface HttpEndpoint {
  /** `http://host:port/mcp` */
  url: string
  port: number
  /** Stops accepting, closes sessions and in-flight requests. */
  close(): Promise<void>
}

/** Limits of the HTTP front door. */
export interface HttpLimits {
  maxSessions: number
  sessionIdleMs: number
}

const DEFAULT_LIMITS: HttpLimits = { maxSessions: 256, sessionIdleMs: 30 * 60 * 1000 }
const LOCAL_NAMES = ['localhost', '127.0.0.1', '[::1]', '::1']

interface Session {
  transport: NodeStreamableHTTPServerTransport
  server: McpServer
  lastSeen: number
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  if (res.headersSent) return
  const payload = JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    ...headers,
  })
  res.end(payload)
}

function hostnameOf(hostHeader: string): string {
  const value = hostHeader.trim().toLowerCase()
  if (value.startsWith('[')) return value.slice(0, value.indexOf(']') + 1)
  const colon = value.lastIndexOf(':')
  return colon === -1 ? value : value.slice(0, colon)
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}

class BodyTooLarge extends Error {}

/**
 * Hands the request's bearer credential to the SDK (`req.auth` becomes the handler's `authInfo`),
 * so a tool can act with the caller's own credential (`ToolContext.auth`). It is never logged.
 */
function attachBearer(req: IncomingMessage): void {
  const header = req.headers.authorization
  const token = typeof header === 'string' ? /^bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined
  ;(req as IncomingMessage & { auth?: { token: string; clientId: string; scopes: string[] } }).auth = token
    ? { token, clientId: 'bearer', scopes: [] }
    : undefined
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > limit) throw new BodyTooLarge()
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > limit) throw new BodyTooLarge()
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks)
}

/**
 * Serves MCP over Streamable HTTP at `/mcp` and a health check at `/healthz`.
 *
 * Front door, in order: Host check (DNS rebinding), Origin check, bearer token (constant-time),
 * method, body size, JSON and JSON-RPC framing. Behind it, 2025-era clients get sessions (SSE
 * streams, server-to-client requests, resumable with `Last-Event-ID`) and 2026-era requests
 * are served per request; `--stateless` serves both eras per request with no sessions.
 */
export async function serveHttp<D, C>(
  runtime: Runtime<D, C>,
  limits: Partial<HttpLimits> = {},
): Promise<HttpEndpoint> {
  const { config, logger, spec } = runtime
  const { maxSessions, sessionIdleMs } = { ...DEFAULT_LIMITS, ...limits }
  const loopback = isLoopback(config.host)
  const allowedHosts = new Set([
    ...(loopback ? LOCAL_NAMES : []),
    ...config.allowedHosts.map((host) => host.toLowerCase()),
  ])
  const allowedOrigins = new Set(
    config.allowedOrigins.map((origin) => origin.toLowerCase().replace(/\/$/, '')),
  )
  const expectedToken = config.authToken ? digest(config.authToken) : undefined
  const onerror = (error: Error) => logger.debug('http transport error', { error: error.message })
  const factory = () => createInstance(runtime, { connection: 'request' })
  const perRequest = createMcpHandler(factory, {
    legacy: config.stateless ? 'stateless' : 'reject',
    onerror,
    maxRequestBodySize: config.maxBodyBytes,
  })
  const perRequestNode = toNodeHandler(perRequest, { onerror, maxRequestBodySize: config.maxBodyBytes })
  const sessions = new Map<string, Session>()

  const sweep = setInterval(
    () => {
      const now = Date.now()
      for (const [id, session] of sessions) {
        if (now - session.lastSeen > sessionIdleMs) {
          logger.info('closing idle session', { session: id })
          sessions.delete(id)
          void session.server.close().catch(() => {})
        }
      }
    },
    Math.min(60_000, sessionIdleMs),
  )
  sweep.unref()

  function hostAllowed(req: IncomingMessage): boolean {
    // With no loopback bind and no configured names there is nothing to compare against.
    if (allowedHosts.size === 0) return true
    const host = req.headers.host
    return typeof host === 'string' && allowedHosts.has(hostnameOf(host))
  }

  function originAllowed(req: IncomingMessage): boolean {
    const origin = req.headers.origin
    if (origin === undefined) return true
    let parsed: URL
    try {
      parsed = new URL(origin)
    } catch {
      return false
    }
    const normalized = parsed.origin.toLowerCase()
    if (allowedOrigins.has(normalized) || allowedOrigins.has('*')) return true
    return loopback && LOCAL_NAMES.includes(parsed.hostname.toLowerCase())
  }

  function authorized(req: IncomingMessage): 'ok' | 'missing' | 'invalid' {
    if (!expectedToken) return 'ok'
    const header = req.headers.authorization
    if (typeof header !== 'string' || !/^bearer\s+/i.test(header)) return 'missing'
    const presented = digest(header.replace(/^bearer\s+/i, '').trim())
    return timingSafeEqual(presented, expectedToken) ? 'ok' : 'invalid'
  }

  async function handleMcp(req: IncomingMessage, res: ServerResponse) {
    const method = req.method ?? 'GET'
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
      sendJson(res, 405, errorResponse(null, INVALID_REQUEST, 'Method not allowed'), {
        allow: 'POST, GET, DELETE',
      })
      return
    }
    const sessionHeader = req.headers['mcp-session-id']
    const sessionId = typeof sessionHeader === 'string' ? sessionHeader : undefined
    const session = sessionId ? sessions.get(sessionId) : undefined
    if (sessionId && !session) {
      sendJson(
        res,
        404,
        errorResponse(null, -32001, 'Session not found: start a new session with initialize'),
      )
      return
    }
    if (method !== 'POST') {
      if (session) {
        session.lastSeen = Date.now()
        await session.transport.handleRequest(req, res)
        return
      }
      sendJson(res, 405, errorResponse(null, INVALID_REQUEST, 'Method not allowed without a session'), {
        allow: 'POST',
      })
      return
    }
    let body: Buffer
    try {
      body = await readBody(req, config.maxBodyBytes)
    } catch (error) {
      if (error instanceof BodyTooLarge) {
        sendJson(
          res,
          413,
          errorResponse(null, INVALID_REQUEST, `Request body larger than ${config.maxBodyBytes} bytes`),
          {
            connection: 'close',
          },
        )
        req.resume()
        return
      }
      throw error
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(body.toString('utf8'))
    } catch {
      sendJson(res, 400, errorResponse(null, PARSE_ERROR, 'Parse error: the body is not valid JSON'))
      return
    }
    const check = checkEnvelope(parsed)
    if (!check.ok) {
      sendJson(res, 400, errorResponse(check.id, INVALID_REQUEST, check.message))
      return
    }
    if (session) {
      session.lastSeen = Date.now()
      await session.transport.handleRequest(req, res, parsed)
      return
    }
    if (config.stateless) {
      await perRequestNode(req, res, parsed)
      return
    }
    const webRequest = await toWebRequest(req, parsed)
    if (!(await isLegacyRequest(webRequest, parsed))) {
      await perRequestNode(req, res, parsed)
      return
    }
    const message = parsed as { method?: string; id?: string | number }
    if (message.method !== 'initialize') {
      sendJson(
        res,
        400,
        errorResponse(message.id ?? null, INVALID_REQUEST, 'Bad Request: no session; send initialize first'),
      )
      return
    }
    if (sessions.size >= maxSessions) {
      sendJson(res, 503, errorResponse(message.id ?? null, -32000, 'Too many sessions; try again later'), {
        'retry-after': '5',
      })
      return
    }
    const server = createInstance(runtime, { forwardProcessLogs: false, connection: 'session' })
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new BoundedEventStore(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server, lastSeen: Date.now() })
        logger.debug('session opened', { session: id })
      },
      onsessionclosed: (id) => {
        // DELETE ends the session: close its server too, so its per-connection cleanups run.
        if (sessions.delete(id)) void server.close().catch(() => {})
        logger.debug('session closed', { session: id })
      },
    })
    transport.onerror = onerror
    await server.connect(transport)
    await transport.handleRequest(req, res, parsed)
  }

  const httpServer: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (url.pathname === '/healthz') {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendJson(res, 405, { error: 'Method not allowed' }, { allow: 'GET, HEAD' })
        return
      }
      sendJson(res, 200, { status: 'ok', name: spec.name, version: spec.version, sessions: sessions.size })
      return
    }
    if (url.pathname !== '/mcp') {
      sendJson(res, 404, { error: 'Not found: MCP is served at /mcp' })
      return
    }
    // DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends Host: evil.example.
    if (!hostAllowed(req)) {
      logger.warn('refused a request with a foreign Host header', { host: req.headers.host })
      sendJson(res, 403, errorResponse(null, -32000, 'Forbidden: Host not allowed'))
      return
    }
    if (!originAllowed(req)) {
      logger.warn('refused a request with a foreign Origin', { origin: req.headers.origin })
      sendJson(res, 403, errorResponse(null, -32000, 'Forbidden: Origin not allowed'))
      return
    }
    const auth = authorized(req)
    if (auth !== 'ok') {
      logger.warn('refused an unauthenticated request', { reason: auth, remote: req.socket.remoteAddress })
      sendJson(res, 401, errorResponse(null, -32000, 'Unauthorized: a valid bearer token is required'), {
        'www-authenticate':
          auth === 'missing'
            ? 'Bearer realm="mcp"'
            : 'Bearer realm="mcp", error="invalid_token", error_description="The token is not valid"',
      })
      return
    }
    attachBearer(req)
    handleMcp(req, res).catch((error: unknown) => {
      logger.error('http request failed', { error })
      if (!res.headersSent) sendJson(res, 500, errorResponse(null, -32603, 'Internal error'))
      else res.end()
    })
  })
  httpServer.requestTimeout = 0
  httpServer.headersTimeout = 30_000

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject)
    httpServer.listen(config.port, config.host, () => {
      httpServer.off('error', reject)
      resolve()
    })
  })
  const port = (httpServer.address() as AddressInfo).port
  const hostForUrl =
    config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host
  return {
    url: `http://${hostForUrl}:${port}/mcp`,
    port,
    async close() {
      clearInterval(sweep)
      const closing = new Promise<void>((resolve) => httpServer.close(() => resolve()))
      await Promise.allSettled([...sessions.values()].map((session) => session.server.close()))
      sessions.clear()
      await perRequest.close().catch(() => {})
      httpServer.closeAllConnections()
      await closing
    },
  }
}
