import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from '@modelcontextprotocol/node'
import {
  type AuthInfo,
  createMcpHandler,
  InMemoryServerEventBus,
  isLegacyRequest,
  type McpServer,
} from '@modelcontextprotocol/server'
import type { AuthGate, GateAnswer } from './auth/gate.js'
import { createInstance, type Runtime } from './build-server.js'
import { ListenWatches, prepareListen } from './change-streams.js'
import { useStateSecret } from './client-access.js'
import { isLoopback } from './config.js'
import { BoundedEventStore } from './event-store.js'
import { stateRoute } from './handles.js'
import { checkEnvelope, errorResponse, INVALID_REQUEST, PARSE_ERROR } from './jsonrpc.js'
import { observer } from './observe/hooks.js'
import { answerReadiness, type ReadinessCheck, serverReadiness } from './readiness.js'
import type { Cluster, ClusterSession, SessionHooks } from './scale/cluster.js'

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
  /** Sessions alive at once; past it the least recently used idle session is evicted first. */
  maxSessions: number
  /** Sessions one client (one bearer token, else one address) keeps; its oldest idle one gives way. */
  maxSessionsPerClient: number
  /** A session unused this long is closed. */
  sessionIdleMs: number
  /** Time a client gets to send its request headers. */
  headersTimeoutMs: number
  /** Time a client gets to send a whole request (not the response: SSE streams are not cut). */
  requestTimeoutMs: number
  /** A too-large body up to this size is read and discarded so the client can read the 413; past it the connection is closed. */
  discardBodyBytes: number
  /** OAuth: least time between two refetches of the issuer's keys when a token names an unknown key. */
  jwksCooldownMs: number
}

const DEFAULT_LIMITS: HttpLimits = {
  maxSessions: 1024,
  maxSessionsPerClient: 32,
  sessionIdleMs: 10 * 60 * 1000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  discardBodyBytes: 64 * 1024 * 1024,
  jwksCooldownMs: 30_000,
}
const LOCAL_NAMES = ['localhost', '127.0.0.1', '[::1]', '::1']

interface Session {
  transport: Pick<NodeStreamableHTTPServerTransport, 'handleRequest'>
  server: McpServer
  lastSeen: number
  /** Who opened it: a digest of the bearer token, else the remote address. */
  client: string
  /** Requests (and SSE streams) being served on it right now: such a session is not idle. */
  active: number
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

// RFC 9110 Host: a name or IPv4 address, or a bracketed IPv6 address, and an optional port. Anything
// else (`localhost:1234@evil.example`) is not a Host header this server answers.
const HOST_HEADER = /^(?:[a-z0-9._~-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i

function hostnameOf(hostHeader: string): string {
  const value = hostHeader.trim().toLowerCase()
  if (value.startsWith('[')) return value.slice(0, value.indexOf(']') + 1)
  const colon = value.lastIndexOf(':')
  return colon === -1 ? value : value.slice(0, colon)
}

function sendAnswer(res: ServerResponse, answer: GateAnswer) {
  if (res.headersSent) return
  res.writeHead(answer.status, { ...answer.headers, 'content-length': Buffer.byteLength(answer.body) })
  res.end(answer.body)
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

/**
 * Reads and drops what is left of a too-large body, up to `bound` bytes, so that the client (a
 * `fetch` that writes the whole body before it reads) gets the 413 instead of a broken pipe. Past
 * the bound, or when the declared length is past it, the connection is closed instead.
 */
async function discardBody(req: IncomingMessage, bound: number): Promise<boolean> {
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > bound) return false
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > bound) return false
  }
  return true
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
  const {
    maxSessions,
    maxSessionsPerClient,
    sessionIdleMs,
    headersTimeoutMs,
    requestTimeoutMs,
    discardBodyBytes,
    jwksCooldownMs,
  } = { ...DEFAULT_LIMITS, sessionIdleMs: config.sessionIdleMs, ...limits }
  // 2026-07-28 requestState is signed with the shared secret, so a retry may reach any replica.
  if (config.stateSecret) useStateSecret(config.stateSecret)
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
  const sessions = new Map<string, Session>()
  const hooksFor = (client: string): SessionHooks => ({
    // A session opened under OAuth is its owner's, whoever's request restored it here.
    register(id: string, opened: ClusterSession, owner?: string) {
      sessions.set(id, { ...opened, lastSeen: Date.now(), client: owner ?? client, active: 0 })
    },
    closed(id: string) {
      const session = sessions.get(id)
      if (session) closeSession(id, session)
    },
  })
  // With --redis-url, sessions live in Redis and any replica serves any request (scale/cluster.ts).
  const cluster: Cluster | undefined =
    config.redisUrl && !config.stateless
      ? await (await import('./scale/cluster.js')).Cluster.start(runtime, hooksFor('cluster'))
      : undefined
  // Change events of 2026-07-28 listen streams: across replicas through Redis, else in process.
  const bus = cluster?.bus ?? new InMemoryServerEventBus(onerror)
  const watches = [...(spec.resources ?? []), ...(spec.resourceTemplates ?? [])].some(
    (resource) => resource.subscribe,
  )
    ? new ListenWatches(runtime, (uri) => bus.publish({ kind: 'resource_updated', uri }))
    : undefined
  const perRequest = createMcpHandler(factory, {
    legacy: config.stateless ? 'stateless' : 'reject',
    onerror,
    maxRequestBodySize: config.maxBodyBytes,
    bus,
  })
  const perRequestNode = toNodeHandler(perRequest, { onerror, maxRequestBodySize: config.maxBodyBytes })
  cluster?.handles.serveWith((request, authInfo, parsedBody, session) =>
    session
      ? cluster.serveRelayed(session, request, authInfo)
      : perRequest.fetch(request, { ...(authInfo ? { authInfo } : {}), parsedBody }),
  )
  // OAuth 2.1 resource server: loaded only when an issuer is configured.
  const issuer = config.auth.issuer
  const gate: AuthGate | undefined = issuer
    ? (await import('./auth/gate.js')).createAuthGate({
        auth: { ...config.auth, issuer },
        defaultResource: () => endpointUrl(),
        tools: runtime.tools as never,
        logger,
        jwksCooldownMs,
      })
    : undefined

  // /readyz: the server's own upstream (spec.ready) and, with replicas, Redis.
  const readiness: Record<string, ReadinessCheck> = {
    ...serverReadiness(spec, runtime.deps),
    ...(cluster ? { redis: () => cluster.ping() } : {}),
  }
  runtime.operations?.observer.gauge(
    'mcp_sessions',
    'Open 2025-era HTTP sessions on this replica.',
    () => sessions.size,
  )

  const sweep = setInterval(
    () => {
      const now = Date.now()
      for (const [id, session] of sessions) {
        if (session.active === 0 && now - session.lastSeen > sessionIdleMs) {
          logger.info('closing idle session', { session: id })
          closeSession(id, session)
        }
      }
    },
    Math.max(1000, Math.min(60_000, sessionIdleMs / 2)),
  )
  sweep.unref()

  function closeSession(id: string, session: Session) {
    sessions.delete(id)
    void session.server.close().catch(() => {})
  }

  /** The least recently used session with nothing in flight, among those `which` accepts. */
  function oldestIdle(which: (session: Session) => boolean): [string, Session] | undefined {
    let oldest: [string, Session] | undefined
    for (const entry of sessions) {
      const [, session] = entry
      if (session.active > 0 || !which(session)) continue
      if (!oldest || session.lastSeen < oldest[1].lastSeen) oldest = entry
    }
    return oldest
  }

  /**
   * Makes room for one more session of `client`: its own oldest idle session gives way when it is at
   * its cap, and the oldest idle session of anyone when the server is at its cap. Abandoned sessions
   * therefore never lock anyone out. False when nothing idle can give way.
   */
  function makeRoom(client: string): boolean {
    const own = [...sessions.values()].filter((session) => session.client === client).length
    if (own >= maxSessionsPerClient) {
      const victim = oldestIdle((session) => session.client === client)
      if (!victim) return false
      logger.debug('evicting a session: its client is at its session cap', { session: victim[0] })
      closeSession(...victim)
    }
    if (sessions.size >= maxSessions) {
      const victim = oldestIdle(() => true)
      if (!victim) return false
      logger.debug('evicting the least recently used idle session', { session: victim[0] })
      closeSession(...victim)
    }
    return true
  }

  function clientOf(req: IncomingMessage): string {
    const verified = (req as IncomingMessage & { auth?: AuthInfo }).auth
    if (gate && verified) return gate.principal(verified)
    const header = req.headers.authorization
    if (typeof header === 'string' && /^bearer\s+/i.test(header))
      return `token:${digest(header).toString('hex')}`
    return `address:${req.socket.remoteAddress ?? 'unknown'}`
  }

  /** Runs `work` with the session marked busy (not evictable, not idle). */
  async function busy<T>(session: Session, work: () => Promise<T>): Promise<T> {
    session.active++
    session.lastSeen = Date.now()
    try {
      return await work()
    } finally {
      session.active--
      session.lastSeen = Date.now()
    }
  }

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
    if (cluster) res.setHeader('x-keel-replica', cluster.replica)
    // GET streams of a shared session are served from Redis by whichever replica the client reaches.
    if (cluster && sessionId && method === 'GET') {
      if (gate && !(await cluster.ownedBy(sessionId, clientOf(req)))) {
        sendJson(
          res,
          404,
          errorResponse(null, -32001, 'Session not found: start a new session with initialize'),
        )
        return
      }
      await cluster.serveStream(sessionId, req, res)
      return
    }
    let session = sessionId ? sessions.get(sessionId) : undefined
    if (cluster && sessionId && !session) {
      // A session another replica opened: restored here from Redis (if it still exists).
      if (!makeRoom(clientOf(req))) {
        sendJson(res, 503, errorResponse(null, -32000, 'Too many sessions in use; try again later'), {
          'retry-after': '5',
        })
        return
      }
      await cluster.restore(hooksFor(clientOf(req)), sessionId, gate ? clientOf(req) : undefined)
      session = sessions.get(sessionId)
    }
    // A session belongs to the subject that opened it: another token's holder does not find it.
    if (sessionId && (!session || (gate && session.client !== clientOf(req)))) {
      sendJson(
        res,
        404,
        errorResponse(null, -32001, 'Session not found: start a new session with initialize'),
      )
      return
    }
    if (method !== 'POST') {
      if (session) {
        // A GET stream keeps the session busy until the client closes it.
        await busy(session, () => session.transport.handleRequest(req, res))
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
        const drained = await discardBody(req, discardBodyBytes).catch(() => false)
        sendJson(
          res,
          413,
          errorResponse(null, INVALID_REQUEST, `Request body larger than ${config.maxBodyBytes} bytes`),
          { connection: 'close' },
        )
        if (!drained) req.socket.destroySoon()
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
      sendJson(res, 400, errorResponse(check.id, check.code, check.message))
      return
    }
    const verified = (req as IncomingMessage & { auth?: AuthInfo }).auth
    const challenge = gate && verified ? gate.scopeChallenge(parsed, verified) : undefined
    if (challenge) {
      logger.info('refused a call that needs the write scope', { remote: req.socket.remoteAddress })
      sendAnswer(res, challenge)
      return
    }
    const watching = observer()
    if (watching) {
      const message = parsed as { id?: string | number; method?: unknown; params?: { name?: unknown } }
      if (watching.admit && message.method === 'tools/call') {
        const tool = runtime.tools.find((candidate) => candidate.name === message.params?.name)
        // The client whose budget pays: the OAuth subject, else the 2025 session, else the token or address.
        const payer = gate && verified ? clientOf(req) : (sessionId ?? clientOf(req))
        const admission = tool
          ? await watching.admit(payer, tool.annotations.readOnlyHint === true)
          : { allowed: true, retryAfterMs: 0 }
        if (!admission.allowed) {
          const seconds = Math.max(1, Math.ceil(admission.retryAfterMs / 1000))
          sendJson(
            res,
            429,
            errorResponse(
              message.id ?? null,
              -32000,
              `Too many calls: the ${admission.budget ?? 'call'} rate limit allows more in ${seconds} s`,
            ),
            { 'retry-after': String(seconds) },
          )
          return
        }
      }
      if (typeof message.method === 'string' && message.id !== undefined) {
        const observation = watching.request({
          method: message.method,
          id: message.id,
          transport: 'http',
          params: message.params,
        })
        res.once('close', () => observation.end(res.statusCode >= 400 ? res.statusCode : undefined))
        await observation.run(() => dispatch(req, res, parsed, session, sessionId))
        return
      }
    }
    await dispatch(req, res, parsed, session, sessionId)
  }

  /** Serves a checked POST: routed to its session, served on its own, or opening a session. */
  async function dispatch(
    req: IncomingMessage,
    res: ServerResponse,
    parsed: unknown,
    session: Session | undefined,
    sessionId: string | undefined,
  ) {
    const verified = (req as IncomingMessage & { auth?: AuthInfo }).auth
    // A lone 2026-07-28 call carrying another replica's state handle is served by that replica.
    if (cluster && !sessionId) {
      const route = stateRoute(runtime as Runtime<unknown, unknown>, parsed)
      if (
        typeof route === 'object' &&
        !(await isLegacyRequest(await toWebRequest(req, parsed), parsed)) &&
        (await cluster.handles.relay(route.owner, req, res, parsed, verified))
      )
        return
    }
    if (session && cluster && sessionId) {
      const routed = await cluster.route(sessionId, parsed)
      if (!routed.exists) {
        closeSession(sessionId, session)
        sendJson(
          res,
          404,
          errorResponse(null, -32001, 'Session not found: start a new session with initialize'),
        )
        return
      }
      if (routed.rest.length === 0) {
        res.writeHead(202).end()
        return
      }
      parsed = Array.isArray(parsed) ? routed.rest : routed.rest[0]
      // A stateful call is served where its state lives: the replica its handle names, or the one
      // holding this session's own state.
      const route = stateRoute(runtime as Runtime<unknown, unknown>, parsed)
      const owner = route === 'connection' ? await cluster.stateOwner(sessionId) : route?.owner
      const principal = gate ? { principal: clientOf(req) } : {}
      if (
        owner &&
        owner !== cluster.replica &&
        (await cluster.handles.relay(owner, req, res, parsed, verified, { id: sessionId, ...principal }))
      )
        return
    }
    if (session) {
      const current = session
      await busy(current, () => current.transport.handleRequest(req, res, parsed))
      return
    }
    const watchUntilClosed = (release: () => void) => res.once('close', release)
    if (config.stateless) {
      await perRequestNode(req, res, await prepareListen(watches, parsed, watchUntilClosed))
      return
    }
    const webRequest = await toWebRequest(req, parsed)
    if (!(await isLegacyRequest(webRequest, parsed))) {
      await perRequestNode(req, res, await prepareListen(watches, parsed, watchUntilClosed))
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
    const client = clientOf(req)
    if (!makeRoom(client)) {
      sendJson(
        res,
        503,
        errorResponse(message.id ?? null, -32000, 'Too many sessions in use; try again later'),
        {
          'retry-after': '5',
        },
      )
      return
    }
    if (cluster) {
      const opened = await cluster.open(
        hooksFor(client),
        (message as { params?: Record<string, unknown> }).params ?? {},
        gate ? client : undefined,
      )
      await opened.transport.handleRequest(req, res, parsed)
      return
    }
    const server = createInstance(runtime, { forwardProcessLogs: false, connection: 'session' })
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new BoundedEventStore(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server, lastSeen: Date.now(), client, active: 0 })
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

  // Slow clients: headers and request bodies must arrive within their timeouts (checked every
  // second), so trickling sockets are closed in seconds; responses (SSE streams) are not limited.
  const httpServer: Server = createServer({ connectionsCheckingInterval: 1000 }, (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (url.pathname === '/readyz') {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendJson(res, 405, { error: 'Method not allowed' }, { allow: 'GET, HEAD' })
        return
      }
      void answerReadiness(res, readiness).catch(() => {
        if (!res.headersSent) sendJson(res, 503, { status: 'not ready' })
      })
      return
    }
    if (url.pathname === '/metrics' && config.observe.metrics && runtime.operations) {
      runtime.operations.serve(req, res)
      return
    }
    if (url.pathname === '/healthz') {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendJson(res, 405, { error: 'Method not allowed' }, { allow: 'GET, HEAD' })
        return
      }
      sendJson(res, 200, { status: 'ok', name: spec.name, version: spec.version, sessions: sessions.size })
      return
    }
    const metadata = gate?.metadata(url.pathname, req.method ?? 'GET')
    if (metadata) {
      sendAnswer(res, metadata)
      return
    }
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
          return handleMcp(req, res)
        })
        .catch(failed)
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
    handleMcp(req, res).catch(failed)

    function failed(error: unknown) {
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
  })
  httpServer.headersTimeout = headersTimeoutMs
  httpServer.requestTimeout = requestTimeoutMs

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject)
    httpServer.listen(config.port, config.host, () => {
      httpServer.off('error', reject)
      resolve()
    })
  }).catch(async (error: unknown) => {
    clearInterval(sweep)
    await cluster?.close()
    throw error
  })
  const port = (httpServer.address() as AddressInfo).port
  function endpointUrl(): string {
    const hostForUrl =
      config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host
    return `http://${hostForUrl}:${(httpServer.address() as AddressInfo).port}/mcp`
  }
  return {
    url: endpointUrl(),
    port,
    async close() {
      clearInterval(sweep)
      const closing = new Promise<void>((resolve) => httpServer.close(() => resolve()))
      await Promise.allSettled([...sessions.values()].map((session) => session.server.close()))
      sessions.clear()
      await perRequest.close().catch(() => {})
      watches?.close()
      await cluster?.close()
      httpServer.closeAllConnections()
      await closing
    },
  }
}
