import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { AuthInfo } from '@modelcontextprotocol/server'
import type { AuthGate } from '../auth/gate.js'
import type { CommonConfig } from '../config.js'
import { isLoopback } from '../config.js'
import { errorResponse, INVALID_REQUEST } from '../jsonrpc.js'
import { answerReadiness, type ReadinessCheck } from '../readiness.js'
import { type HttpContext, verifiedAuth } from './context.js'
import { sendAnswer, sendJson } from './respond.js'

// The front door of the HTTP endpoint: the service paths (/healthz, /readyz, /metrics, OAuth
// metadata), then, for /mcp, in order: Host check (DNS rebinding), Origin check, bearer token
// (constant-time) or OAuth. Only a request that passes reaches the /mcp handler (streams.ts).

const LOCAL_NAMES = ['localhost', '127.0.0.1', '[::1]', '::1']

// RFC 9110 Host: a name or IPv4 address, or a bracketed IPv6 address, and an optional port. Anything
// else (`localhost:1234@evil.example`) is not a Host header this server answers.
const HOST_HEADER = /^(?:[a-z0-9._~-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i

function hostnameOf(hostHeader: string): string {
  const value = hostHeader.trim().toLowerCase()
  if (value.startsWith('[')) return value.slice(0, value.indexOf(']') + 1)
  const colon = value.lastIndexOf(':')
  return colon === -1 ? value : value.slice(0, colon)
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}

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

/** The caller, for session ownership and limits: the OAuth subject, else the token's digest, else the address. */
export function clientOf(req: IncomingMessage, gate: AuthGate | undefined): string {
  const verified = verifiedAuth(req)
  if (gate && verified) return gate.principal(verified)
  const header = req.headers.authorization
  if (typeof header === 'string' && /^bearer\s+/i.test(header))
    return `token:${digest(header).toString('hex')}`
  return `address:${req.socket.remoteAddress ?? 'unknown'}`
}

/** The Host, Origin and bearer-token checks of a configuration. */
function checksFor(config: CommonConfig) {
  const loopback = isLoopback(config.host)
  const allowedHosts = new Set([
    ...(loopback ? LOCAL_NAMES : []),
    ...config.allowedHosts.map((host) => host.toLowerCase()),
  ])
  const allowedOrigins = new Set(
    config.allowedOrigins.map((origin) => origin.toLowerCase().replace(/\/$/, '')),
  )
  const expectedToken = config.authToken ? digest(config.authToken) : undefined
  return {
    hostAllowed(req: IncomingMessage): boolean {
      // With no loopback bind and no configured names there is nothing to compare against.
      if (allowedHosts.size === 0) return true
      const host = req.headers.host
      return typeof host === 'string' && allowedHosts.has(hostnameOf(host))
    },
    originAllowed(req: IncomingMessage): boolean {
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
    },
    authorized(req: IncomingMessage): 'ok' | 'missing' | 'invalid' {
      if (!expectedToken) return 'ok'
      const header = req.headers.authorization
      if (typeof header !== 'string' || !/^bearer\s+/i.test(header)) return 'missing'
      const presented = digest(header.replace(/^bearer\s+/i, '').trim())
      return timingSafeEqual(presented, expectedToken) ? 'ok' : 'invalid'
    },
  }
}

/** Answers a health, readiness, metrics or OAuth metadata path; false for any other path. */
function serveServicePath(
  context: HttpContext,
  readiness: Record<string, ReadinessCheck>,
  pathname: string,
  req: IncomingMessage,
  res: ServerResponse,
): boolean {
  const { config, operations, spec } = context.runtime
  const readOnlyMethod = req.method === 'GET' || req.method === 'HEAD'
  if (pathname === '/readyz') {
    if (!readOnlyMethod) sendJson(res, 405, { error: 'Method not allowed' }, { allow: 'GET, HEAD' })
    else
      void answerReadiness(res, readiness).catch(() => {
        if (!res.headersSent) sendJson(res, 503, { status: 'not ready' })
      })
    return true
  }
  if (pathname === '/metrics' && config.observe.metrics && operations) {
    operations.serve(req, res)
    return true
  }
  if (pathname === '/healthz') {
    if (!readOnlyMethod) sendJson(res, 405, { error: 'Method not allowed' }, { allow: 'GET, HEAD' })
    else
      sendJson(res, 200, {
        status: 'ok',
        name: spec.name,
        version: spec.version,
        sessions: context.sessions.size,
      })
    return true
  }
  const metadata = context.gate?.metadata(pathname, req.method ?? 'GET')
  if (metadata) {
    sendAnswer(res, metadata)
    return true
  }
  return false
}

/** Answers a request whose handling threw: 503 when the session store is away, else 500 (or nothing, when the client left). */
function answerFailure(
  context: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  error: unknown,
): void {
  const { logger } = context.runtime
  if ((error as Error).name === 'StoreUnavailable') {
    logger.warn('a session request failed: the session store is unavailable', {
      error: (error as Error).message,
    })
    if (!res.headersSent)
      sendJson(res, 503, errorResponse(null, -32000, 'Session store unavailable; try again shortly'), {
        'retry-after': '2',
      })
    else res.end()
    return
  }
  // A client that went away mid-request (or was cut by a timeout) is not a server error.
  if (
    req.destroyed ||
    (error as { code?: string }).code === 'ECONNRESET' ||
    (error as Error).message === 'aborted'
  ) {
    logger.debug('http request abandoned by the client', { error: (error as Error).message })
    if (!res.headersSent) res.destroy()
    return
  }
  logger.error('http request failed', { error })
  if (!res.headersSent) sendJson(res, 500, errorResponse(null, -32603, 'Internal error'))
  else res.end()
}

/**
 * The request listener of the HTTP server: service paths, then the /mcp checks, then `serveMcp`
 * with the caller's verified credential on `req.auth`.
 */
export function frontDoor(
  context: HttpContext,
  readiness: Record<string, ReadinessCheck>,
  serveMcp: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): (req: IncomingMessage, res: ServerResponse) => void {
  const { gate, runtime } = context
  const { logger } = runtime
  const checks = checksFor(runtime.config)
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (serveServicePath(context, readiness, url.pathname, req, res)) return
    if (url.pathname !== '/mcp') {
      sendJson(res, 404, { error: 'Not found: MCP is served at /mcp' })
      return
    }
    const hostHeader = req.headers.host
    if (typeof hostHeader !== 'string' || !HOST_HEADER.test(hostHeader.trim())) {
      logger.warn('refused a request with a malformed Host header')
      sendJson(res, 400, errorResponse(null, INVALID_REQUEST, 'Bad Request: malformed Host header'))
      return
    }
    // DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends Host: evil.example.
    if (!checks.hostAllowed(req)) {
      logger.warn('refused a request with a foreign Host header', { host: req.headers.host })
      sendJson(res, 403, errorResponse(null, -32000, 'Forbidden: Host not allowed'))
      return
    }
    if (!checks.originAllowed(req)) {
      logger.warn('refused a request with a foreign Origin', { origin: req.headers.origin })
      sendJson(res, 403, errorResponse(null, -32000, 'Forbidden: Origin not allowed'))
      return
    }
    const failed = (error: unknown) => answerFailure(context, req, res, error)
    if (gate) {
      gate
        .authenticate(req)
        .then((outcome) => {
          if ('status' in outcome && 'body' in outcome) {
            if (outcome.status === 401) logger.info('refused a request without a valid access token')
            sendAnswer(res, outcome)
            return
          }
          ;(req as IncomingMessage & { auth?: AuthInfo }).auth = outcome
          return serveMcp(req, res)
        })
        .catch(failed)
      return
    }
    const auth = checks.authorized(req)
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
    serveMcp(req, res).catch(failed)
  }
}

/** Starts listening on the configured address; rejects when it cannot (port in use). */
export function listen(httpServer: Server, config: Pick<CommonConfig, 'port' | 'host'>): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject)
    httpServer.listen(config.port, config.host, () => {
      httpServer.off('error', reject)
      resolve()
    })
  })
}

/** `http://host:port/mcp` of a listening server (IPv6 hosts bracketed). */
export function endpointUrl(httpServer: Server, host: string): string {
  const hostForUrl = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
  return `http://${hostForUrl}:${(httpServer.address() as AddressInfo).port}/mcp`
}
