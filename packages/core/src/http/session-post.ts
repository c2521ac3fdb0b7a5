import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { TextEncoder } from 'node:util'
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node'
import {
  type AuthInfo,
  DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  type EventStore,
  isJsonContentType,
  type JSONRPCMessage,
  type McpServer,
  type MessageExtraInfo,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server'
import {
  answerMessage,
  type CallParams,
  callParams,
  type Id,
  isId,
  isRecord,
  legacyAnswer,
  membersWithin,
  NO_ENVELOPE,
  REQUEST_MEMBERS,
  type ResultCodec,
} from '../fast-call.js'
import { type McpLogLevel, mcpLevelAtLeast } from '../logger.js'
import { type CallingContext, type CoreCallTool, coreCallToolOf } from '../tool-call.js'
import { verifiedAuth } from './context.js'
import { acceptsJsonAndEventStream, LEGACY_REVISIONS, SSE_HEADERS } from './respond.js'

// A `tools/call` POST on a 2025-era session held in this process, taken in by core instead of the
// SDK's Node adapter. The adapter turns every POST into a Fetch `Request` (headers copied, the body
// wrapped in a stream), the SDK's transport parses the message again with zod, and its answer, an
// SSE `Response` over a `ReadableStream`, is piped back to the Node response chunk by chunk: about
// half of the CPU of a small call. Here the POST's checks are the transport's own, in its order,
// made on the Node request: both media types accepted, JSON content, the session initialized and
// not closed, a supported `MCP-Protocol-Version` or none, no scope challenge (the transport's own
// resolver). Then it is served as `handlePostRequest` serves one request, with the transport's own
// parts: the per-request stream registered in its stream maps under a new stream id, the priming
// event written by the transport (stored in the session's event store). The call is then served
// on the session's server as its protocol layer serves a request, without that layer's
// per-message work (see runCall): core's own `tools/call` handler with the context the layer would
// give it, the call's abort controller in the layer's own map (so `notifications/cancelled` and
// the session's end stop it as any request), notifications and requests to the client related to
// the call, no answer once it is aborted. Everything the call sends goes through the session's
// transport: its `send` stores and writes every event of the stream (progress, requests to the
// client, the result) and ends it, and a client that lost the stream resumes it with
// `Last-Event-ID` as before: the stream is the transport's. (Should the server lack a part this
// uses, the message is delivered to it through the transport's `onmessage` instead, as the
// adapter delivers it.) Only its sink differs: the events go straight to the Node
// response, gathered within one turn of the event loop (the head and the priming event with the
// result of a call that answers at once: one write).
//
// Not taken in (the SDK's adapter serves them as before): anything but one `tools/call` request
// with plain params (name, arguments, `_meta` without reserved keys), an id the session already
// has in flight, a transport answering JSON instead of SSE or checking Host/Origin headers. A
// session shared through Redis is taken in the same way on the replica that serves the POST: its
// transport (scale/relay-transport.ts) wraps the same SDK transport, whose event store is Redis
// and whose outgoing messages pass through the relay's id mapping (sent through the relay), as
// they do through the adapter. On the fallback delivery, the context's `ctx.http.req` is a view
// of the POST (method, URL, headers), not a Fetch `Request` with its body (core never reads it).

/** The parts of the SDK's Web Standard transport this path uses (private API, checked on first use). */
interface WebTransport {
  sessionId?: string
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void
  onerror?: (error: Error) => void
  _initialized: boolean
  _closed: boolean
  _enableJsonResponse: boolean
  _enableDnsRebindingProtection: boolean
  _supportedProtocolVersions: string[]
  _eventStore?: EventStore
  _streamMapping: Map<string, StreamEntry>
  _requestToStreamMapping: Map<string | number, string>
  _checkScopeChallenge(messages: unknown[], authInfo: AuthInfo | undefined): Promise<Response | undefined>
  writePrimingEvent(controller: Sink, encoder: TextEncoder, streamId: string, version: string): Promise<void>
  startKeepAlive(controller: Sink, encoder: TextEncoder): NodeJS.Timeout | undefined
  supportsEmptySSEData(version: string): boolean
  closeSSEStream(requestId: string | number): void
  closeStandaloneSSEStream(): void
}

/** An entry of the transport's stream map, as `handlePostRequest` makes it. */
interface StreamEntry {
  controller?: unknown
  encoder?: TextEncoder
  cleanup: () => void
}

/** The transport of a session, when it is the SDK's own (in process) and has the parts used here. */
export function webTransportOf(transport: unknown): WebTransport | undefined {
  // In process: the Node adapter's transport; shared through Redis: the relay's inner one.
  const web =
    transport instanceof NodeStreamableHTTPServerTransport
      ? (transport as unknown as { _webStandardTransport?: Partial<WebTransport> })._webStandardTransport
      : (transport as { inner?: unknown } | undefined)?.inner instanceof
          WebStandardStreamableHTTPServerTransport
        ? ((transport as { inner: unknown }).inner as Partial<WebTransport>)
        : undefined
  if (
    !web ||
    !(web._streamMapping instanceof Map) ||
    !(web._requestToStreamMapping instanceof Map) ||
    !Array.isArray(web._supportedProtocolVersions) ||
    typeof web._checkScopeChallenge !== 'function' ||
    typeof web.writePrimingEvent !== 'function' ||
    typeof web.startKeepAlive !== 'function' ||
    typeof web.supportsEmptySSEData !== 'function' ||
    typeof web.closeSSEStream !== 'function' ||
    typeof web.closeStandaloneSSEStream !== 'function' ||
    typeof web._initialized !== 'boolean' ||
    typeof web._closed !== 'boolean'
  ) {
    return undefined
  }
  return web as WebTransport
}

/**
 * The work that serves `message`, a POST of the session whose transport is `transport`, or
 * undefined when the SDK's adapter serves it (see the module comment). `fallback` serves it the
 * SDK's way: taken when the transport's scope check has something to say.
 */
export function sessionCall(
  req: IncomingMessage,
  res: ServerResponse,
  message: unknown,
  session: { transport: unknown; server: McpServer },
  fallback: () => Promise<void>,
): (() => Promise<void>) | undefined {
  if (!isRecord(message) || message.jsonrpc !== '2.0' || message.method !== 'tools/call') return undefined
  const { id, params } = message
  if (!isId(id) || !membersWithin(message, REQUEST_MEMBERS) || !callParams(params, NO_ENVELOPE))
    return undefined
  const web = webTransportOf(session.transport)
  if (
    !web ||
    web._closed ||
    !web._initialized ||
    web._enableJsonResponse ||
    web._enableDnsRebindingProtection ||
    web.sessionId === undefined ||
    web._requestToStreamMapping.has(id)
  ) {
    return undefined
  }
  const { headers } = req
  const version = headers['mcp-protocol-version']
  if (
    !acceptsJsonAndEventStream(headers.accept) ||
    !isJsonContentType(headers['content-type']) ||
    headers['mcp-session-id'] !== web.sessionId ||
    Array.isArray(version) ||
    (version !== undefined && !web._supportedProtocolVersions.includes(version))
  ) {
    return undefined
  }
  const calls = sessionServerOf(session.server)
  return () =>
    serve(
      web,
      req,
      res,
      message as unknown as JSONRPCMessage & { id: string | number },
      version,
      fallback,
      calls,
    )
}

async function serve(
  web: WebTransport,
  req: IncomingMessage,
  res: ServerResponse,
  message: JSONRPCMessage & { id: string | number },
  version: string | undefined,
  fallback: () => Promise<void>,
  calls: SessionServer | undefined,
): Promise<void> {
  const authInfo = verifiedAuth(req)
  let challenge: Response | undefined
  try {
    challenge = await web._checkScopeChallenge([message], authInfo)
  } catch {
    challenge = undefined
  }
  // The transport has something to say (or failed to decide): it says it, the SDK's way.
  if (challenge || web._closed || web._requestToStreamMapping.has(message.id)) return fallback()
  const done = new Promise<void>((resolve) => res.once('close', resolve))
  const streamId = randomUUID()
  const clientVersion = version ?? DEFAULT_NEGOTIATED_PROTOCOL_VERSION
  // The head goes out with the first event, or once the message is delivered, as the adapter
  // writes it when the transport returns its `Response`.
  const sink = new Sink(res, { ...SSE_HEADERS, 'mcp-session-id': web.sessionId as string })
  const encoder = new TextEncoder()
  let keepAlive: NodeJS.Timeout | undefined
  const cleanup = () => {
    if (keepAlive !== undefined) clearInterval(keepAlive)
    web._streamMapping.delete(streamId)
    try {
      sink.close()
    } catch {
      // Already ended (its client went away).
    }
  }
  // A client that goes away ends the stream, not the call: its events are still stored.
  res.once('close', () => {
    if (keepAlive !== undefined) clearInterval(keepAlive)
    sink.closed = true
    if (web._streamMapping.get(streamId)?.controller === sink) web._streamMapping.delete(streamId)
  })
  // What the transport writes within this turn of the event loop goes out in one write (the end
  // of the response uncorks it too).
  sink.cork()
  setImmediate(() => sink.uncork())
  try {
    web._streamMapping.set(streamId, { controller: sink, encoder, cleanup })
    web._requestToStreamMapping.set(message.id, streamId)
    await web.writePrimingEvent(sink, encoder, streamId, clientVersion)
    if (calls && servesLegacy(calls)) runCall(calls, message, web.sessionId, authInfo)
    else {
      const extra: MessageExtraInfo = { request: new RequestView(req) as unknown as Request }
      if (authInfo) extra.authInfo = authInfo
      if (web._eventStore && web.supportsEmptySSEData(clientVersion)) {
        extra.closeSSEStream = () => web.closeSSEStream(message.id)
        extra.closeStandaloneSSEStream = () => web.closeStandaloneSSEStream()
      }
      web.onmessage?.(message, extra)
    }
    if (web._streamMapping.get(streamId)?.controller === sink) keepAlive = web.startKeepAlive(sink, encoder)
    sink.head()
  } catch (error) {
    // As `handlePostRequest` fails: reported, and a 400 when nothing was written yet.
    web.onerror?.(error as Error)
    if (web._streamMapping.get(streamId)?.controller === sink) web._streamMapping.delete(streamId)
    if (web._requestToStreamMapping.get(message.id) === streamId)
      web._requestToStreamMapping.delete(message.id)
    sink.uncork()
    if (!res.headersSent) {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        error: { code: -32700, message: 'Parse error', data: String(error) },
        id: null,
      })
      res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
      res.end(body)
    } else if (!res.writableEnded) res.end()
  }
  await done
}

/** What serving a call without the SDK's protocol layer uses of a session's server (private API, checked). */
interface SessionServer {
  callTool: CoreCallTool
  codec: () => ResultCodec
  server: McpServer['server']
  /** The same server, seen through the private members used here. */
  internals: {
    _requestHandlerAbortControllers?: Map<Id, AbortController>
    _loggingLevels?: Map<string | undefined, string>
    _onerror?: (error: Error) => void
    _negotiatedWireCodec?: () => ResultCodec
  }
}

const sessionServers = new WeakMap<McpServer, SessionServer | null>()

/** The parts of a session's server used to serve its calls, or undefined when one is missing. */
function sessionServerOf(mcp: McpServer): SessionServer | undefined {
  let known = sessionServers.get(mcp)
  if (known === undefined) {
    const server = mcp.server
    const internals = server as unknown as SessionServer['internals']
    const callTool = coreCallToolOf(mcp)
    const codec = internals._negotiatedWireCodec
    known =
      callTool && typeof codec === 'function' && internals._requestHandlerAbortControllers instanceof Map
        ? { callTool, codec: () => codec.call(server), server, internals }
        : null
    sessionServers.set(mcp, known)
  }
  return known ?? undefined
}

/** Whether the session's server serves a 2025 revision now, with its abort map in place. */
function servesLegacy({ server, internals }: SessionServer): boolean {
  const version = server.getNegotiatedProtocolVersion()
  return (
    typeof version === 'string' &&
    LEGACY_REVISIONS.has(version) &&
    internals._requestHandlerAbortControllers instanceof Map &&
    server.transport !== undefined
  )
}

/**
 * Serves one call on the session's server as its protocol layer serves a request, without the
 * layer's per-message work (the request's and the result's zod checks, the era router): core's
 * own `tools/call` handler, the one the layer would call, with the context it would give; the
 * call's abort controller in the layer's own map, so that `notifications/cancelled` and the
 * session's end stop it as they stop any request; notifications and requests to the client
 * related to the call (on its stream); no answer once it is aborted; the answer sent through the
 * session's transport, which stores it and ends the stream.
 */
function runCall(
  calls: SessionServer,
  message: JSONRPCMessage & { id: string | number },
  sessionId: string | undefined,
  authInfo: AuthInfo | undefined,
): void {
  const { server, internals, callTool, codec } = calls
  const id = message.id
  const abort = new AbortController()
  ;(internals._requestHandlerAbortControllers as Map<Id, AbortController>).set(id, abort)
  const params = (message as unknown as { params: CallParams }).params
  const notify = (notification: { method: string; params: Record<string, unknown> }) =>
    server.notification(notification as never, { relatedRequestId: id })
  const mcpReq: CallingContext['mcpReq'] = {
    id,
    signal: abort.signal,
    notify,
    // As the SDK's request context logs on a 2025-era connection: with the logging capability,
    // at or above the level the layer holds for the session (if any).
    log: (level: McpLogLevel, data: unknown, logger?: string) => {
      if (!server.getCapabilities().logging) return Promise.resolve()
      const levels = internals._loggingLevels
      const threshold = levels?.get(sessionId) ?? levels?.get(undefined)
      if (threshold !== undefined && !mcpLevelAtLeast(level, threshold as McpLogLevel))
        return Promise.resolve()
      return notify({ method: 'notifications/message', params: { level, data, logger } })
    },
  }
  if (params._meta !== undefined) mcpReq._meta = params._meta
  const ctx: CallingContext = { mcpReq, http: authInfo ? { authInfo } : {} }
  if (sessionId !== undefined) ctx.sessionId = sessionId
  const transport = server.transport
  legacyAnswer(callTool(params, ctx), codec)
    .then((answer) => {
      if (abort.signal.aborted) return
      return transport?.send(answerMessage(id, answer) as JSONRPCMessage)
    })
    .catch((error: unknown) => internals._onerror?.(new Error(`Failed to send response: ${error}`)))
    .finally(() => {
      // The layer's map of the moment: closing the connection replaces it.
      const aborts = internals._requestHandlerAbortControllers
      if (aborts?.get(id) === abort) aborts.delete(id)
    })
}

/**
 * The POST as the SDK's request context shows it (`ctx.http.req`, where the adapter gives the Fetch
 * `Request` it made): its method, URL and headers, the headers made into a Fetch `Headers` on
 * first read. Its presence is what gives every call over HTTP an `http` context, with or without
 * a credential, as the adapter's `Request` does; core reads nothing of it.
 */
class RequestView {
  readonly method = 'POST'
  #headers: Headers | undefined

  constructor(readonly req: IncomingMessage) {}

  get url(): string {
    return `http://${this.req.headers.host ?? 'localhost'}${this.req.url ?? '/'}`
  }

  get headers(): Headers {
    if (this.#headers === undefined) {
      const headers = new Headers()
      for (const [name, value] of Object.entries(this.req.headers)) {
        if (Array.isArray(value)) for (const each of value) headers.append(name, each)
        else if (value !== undefined) headers.set(name, value)
      }
      this.#headers = headers
    }
    return this.#headers
  }
}

/**
 * The sink of one SSE stream: what the transport enqueues is written to the Node response, and
 * closing it ends the response. Like a closed stream's controller, it throws once closed (the
 * transport catches that and reports it).
 */
class Sink {
  closed = false
  #corked = false

  constructor(
    readonly res: ServerResponse,
    readonly headers: Record<string, string>,
  ) {}

  /** Writes the head (status 200, the SSE headers) unless it is written. */
  head(): void {
    if (!this.res.headersSent && !this.res.writableEnded) this.res.writeHead(200, this.headers)
  }

  cork(): void {
    this.#corked = true
    this.res.cork()
  }

  uncork(): void {
    if (!this.#corked) return
    this.#corked = false
    this.res.uncork()
  }

  enqueue(chunk: Uint8Array): void {
    if (this.closed || this.res.writableEnded || this.res.destroyed)
      throw new TypeError('Invalid state: the stream is closed')
    this.head()
    this.res.write(chunk)
  }

  close(): void {
    if (this.closed) throw new TypeError('Invalid state: the stream is closed')
    this.closed = true
    this.#corked = false
    this.head()
    this.res.end()
  }
}
