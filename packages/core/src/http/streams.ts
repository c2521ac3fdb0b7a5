import type { IncomingMessage, ServerResponse } from 'node:http'
import { toNodeHandler } from '@modelcontextprotocol/node'
import {
  classifyInboundRequest,
  createMcpHandler,
  InMemoryServerEventBus,
} from '@modelcontextprotocol/server'
import { createInstance } from '../build-server.js'
import { ListenWatches, prepareListen } from '../change-streams.js'
import type { Runtime } from '../instance.js'
import { errorResponse, INVALID_REQUEST } from '../jsonrpc.js'
import { type ObserverHooks, observer } from '../observe/hooks.js'
import type { Cluster } from '../scale/cluster.js'
import { readMessage } from './body.js'
import { type HttpContext, verifiedAuth } from './context.js'
import { clientOf } from './front-door.js'
import { sendAnswer, sendJson, sendSessionNotFound, sendTooManySessions } from './respond.js'
import { findSession, relayedLoneCall, routeSessionCall } from './routing.js'
import { openSession, type Session } from './sessions.js'

// /mcp past the front door. GET opens (or, with `Last-Event-ID`, resumes) a session's SSE stream,
// DELETE ends a session, POST carries JSON-RPC: on a 2025-era session, opening one (`initialize`),
// or on its own (2026-07-28, or every request with --stateless).

type Message = { id?: string | number; method?: unknown; params?: { name?: unknown } }

/** Requests served without a session: one McpServer per request (2026-07-28, or `--stateless`). */
export interface LoneRequests {
  serve(req: IncomingMessage, res: ServerResponse, message: unknown): Promise<void>
  close(): Promise<void>
}

/**
 * The SDK's per-request handler, with the change streams of `subscriptions/listen` watched for as
 * long as each stream is open (across replicas through Redis, else in process).
 */
export function loneRequests(
  runtime: Runtime<unknown, unknown>,
  cluster: Cluster | undefined,
  onerror: (error: Error) => void,
): LoneRequests {
  const { config, spec } = runtime
  const bus = cluster?.bus ?? new InMemoryServerEventBus(onerror)
  const watches = [...(spec.resources ?? []), ...(spec.resourceTemplates ?? [])].some(
    (resource) => resource.subscribe,
  )
    ? new ListenWatches(runtime, (uri) => bus.publish({ kind: 'resource_updated', uri }))
    : undefined
  const perRequest = createMcpHandler(() => createInstance(runtime, { connection: 'request' }), {
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
  return {
    async serve(req, res, message) {
      const watchUntilClosed = (release: () => void) => res.once('close', release)
      await perRequestNode(req, res, await prepareListen(watches, message, watchUntilClosed))
    },
    async close() {
      await perRequest.close().catch(() => {})
      watches?.close()
    },
  }
}

/** The /mcp handler: GET, POST and DELETE, routed to their session or served on their own. */
export function mcpHandler(
  context: HttpContext,
  lone: LoneRequests,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const { cluster, gate, sessions } = context
  return async (req, res) => {
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
      if (gate && !(await cluster.ownedBy(sessionId, clientOf(req, gate)))) {
        sendSessionNotFound(res)
        return
      }
      await cluster.serveStream(sessionId, req, res)
      return
    }
    const found = await findSession(context, req, res, sessionId)
    if (!found) return
    const { session } = found
    if (method === 'POST') {
      await servePost(context, lone, req, res, session, sessionId)
      return
    }
    if (!session) {
      sendJson(res, 405, errorResponse(null, INVALID_REQUEST, 'Method not allowed without a session'), {
        allow: 'POST',
      })
      return
    }
    // A GET stream keeps the session busy until the client closes it; DELETE ends the session.
    await sessions.busy(session, () => session.transport.handleRequest(req, res))
  }
}

/** A POST: body checks, the write-scope check, the rate budget and observation, then {@link dispatch}. */
async function servePost(
  context: HttpContext,
  lone: LoneRequests,
  req: IncomingMessage,
  res: ServerResponse,
  session: Session | undefined,
  sessionId: string | undefined,
): Promise<void> {
  const { runtime, gate, limits } = context
  const read = await readMessage(req, res, {
    maxBodyBytes: runtime.config.maxBodyBytes,
    discardBodyBytes: limits.discardBodyBytes,
  })
  if (!read) return
  const parsed = read.message
  const verified = verifiedAuth(req)
  const challenge = gate && verified ? gate.scopeChallenge(parsed, verified) : undefined
  if (challenge) {
    runtime.logger.info('refused a call that needs the write scope', { remote: req.socket.remoteAddress })
    sendAnswer(res, challenge)
    return
  }
  const serve = () => dispatch(context, lone, req, res, parsed, session, sessionId)
  const watching = observer()
  if (!watching) return serve()
  if (!(await withinBudget(context, watching, req, res, parsed as Message, sessionId))) return
  const message = parsed as Message
  if (typeof message.method === 'string' && message.id !== undefined) {
    const observation = watching.request({
      method: message.method,
      id: message.id,
      transport: 'http',
      params: message.params,
    })
    res.once('close', () => observation.end(res.statusCode >= 400 ? res.statusCode : undefined))
    await observation.run(serve)
    return
  }
  await serve()
}

/** Whether a tool call fits its client's rate budget; answers 429 when it does not. */
async function withinBudget(
  context: HttpContext,
  watching: ObserverHooks,
  req: IncomingMessage,
  res: ServerResponse,
  message: Message,
  sessionId: string | undefined,
): Promise<boolean> {
  if (!watching.admit || message.method !== 'tools/call') return true
  const { gate, runtime } = context
  const tool = runtime.tools.find((candidate) => candidate.name === message.params?.name)
  if (!tool) return true
  // The client whose budget pays: the OAuth subject, else the 2025 session, else the token or address.
  const payer = gate && verifiedAuth(req) ? clientOf(req, gate) : (sessionId ?? clientOf(req, gate))
  const admission = await watching.admit(payer, tool.annotations.readOnlyHint === true)
  if (admission.allowed) return true
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
  return false
}

/**
 * The SDK's era classification of a POST, as its `isLegacyRequest` makes it (the same function on
 * the same headers and parsed body), without turning the Node request into a Fetch `Request`.
 */
function routeOf(req: IncomingMessage, parsed: unknown): ReturnType<typeof classifyInboundRequest> {
  if (parsed === undefined)
    return { kind: 'legacy', reason: 'no-claim' } as ReturnType<typeof classifyInboundRequest>
  const header = (name: string) => {
    const value = req.headers[name]
    return Array.isArray(value) ? value.join(', ') : value
  }
  return classifyInboundRequest({
    httpMethod: (req.method ?? 'POST').toUpperCase(),
    protocolVersionHeader: header('mcp-protocol-version'),
    mcpMethodHeader: header('mcp-method'),
    mcpNameHeader: header('mcp-name'),
    body: parsed,
  })
}

/** Serves a checked POST: routed to its session, served on its own, or opening a session. */
async function dispatch(
  context: HttpContext,
  lone: LoneRequests,
  req: IncomingMessage,
  res: ServerResponse,
  parsed: unknown,
  session: Session | undefined,
  sessionId: string | undefined,
): Promise<void> {
  const { runtime, sessions, gate } = context
  if (!sessionId && (await relayedLoneCall(context, req, res, parsed))) return
  if (session && sessionId) {
    const routed = await routeSessionCall(context, req, res, session, sessionId, parsed)
    if (!routed) return
    const viaSdk = () => session.transport.handleRequest(req, res, routed.message)
    const fast = context.fastCalls?.serveInSession(req, res, routed.message, session, viaSdk)
    await sessions.busy(session, fast ?? viaSdk)
    return
  }
  const fast = context.fastCalls?.serve(req, res, parsed, runtime.config.stateless === true)
  if (fast) {
    await fast
    return
  }
  if (runtime.config.stateless || routeOf(req, parsed).kind !== 'legacy') {
    await lone.serve(req, res, parsed)
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
  const client = clientOf(req, gate)
  if (!sessions.makeRoom(client)) {
    sendTooManySessions(res, message.id ?? null)
    return
  }
  await openSession(context, client, req, res, parsed as { params?: Record<string, unknown> })
}
