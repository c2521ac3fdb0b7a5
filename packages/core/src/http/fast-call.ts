import type { IncomingMessage, ServerResponse } from 'node:http'
import { isJsonContentType, type McpServer, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server'
import { createInstance } from '../build-server.js'
import type { SessionAccess } from '../define.js'
import {
  answerMessage,
  callParams,
  ENVELOPE_KEYS,
  encodedError,
  isId,
  isRecord,
  legacyAnswer,
  type Message,
  type ModernAnswer,
  type ModernCallExtras,
  ModernCalls,
  membersWithin,
  NO_ENVELOPE,
  REQUEST_MEMBERS,
  type ResultCodec,
} from '../fast-call.js'
import type { Runtime } from '../instance.js'
import { type CallingContext, type CoreCallTool, coreCallToolOf } from '../tool-call.js'
import { verifiedAuth } from './context.js'
import { acceptsJsonAndEventStream, LEGACY_REVISIONS, SSE_HEADERS } from './respond.js'
import { sessionCall } from './session-post.js'

// Core's fast path for 2026-07-28 tool calls over Streamable HTTP. The SDK's per-request handler
// turns each POST into a Fetch `Request`, classifies it, builds a new McpServer for it (every
// tool registered), connects it to a one-exchange transport, parses the request with zod, and
// turns the answer back into a Fetch `Response` streamed to the Node response: about 0.7 ms of CPU
// for a small fs read, ten times the call itself. Such a call is served here instead, by core's
// own `tools/call` handler on one long-lived instance of the same era, the way the stdio fast path
// serves it (fast-call.ts: the envelope checked by the SDK's own check, the SDK's
// `input_required` seam, the era's codec): a `tools/call` POST whose body claims 2026-07-28 with
// an envelope the SDK accepts, whose standard headers (`MCP-Protocol-Version`, `Mcp-Method`,
// `Mcp-Name`) are present and equal to the body's values, and that is not a retry
// (`inputResponses`, `requestState`). It is answered as the SDK answers it: one JSON body, or an
// SSE stream from the call's first notification (progress, log messages at the envelope's level)
// on. With `--stateless` a 2025-era call is served the same way when the SDK's per-request 2025
// transport would accept it, answered as that transport answers (see #serveStateless). Everything
// else goes to the SDK unchanged.
// `KEEL_FAST_PATH=0` turns it off.

/**
 * The revisions served here: the one 2026-era revision of this SDK line. A request naming another
 * goes to the SDK, which serves it or refuses it.
 */
const SERVED_REVISIONS = new Set(['2026-07-28'])

/** What the stateless 2025-era path uses of its instance. */
interface LegacyCalls {
  callTool: CoreCallTool
  codec: () => ResultCodec
  server: McpServer['server']
}

/** A tool name the `Mcp-Name` header carries as it is (no Base64 sentinel, no whitespace). */
const PLAIN_NAME = /^[A-Za-z0-9_.-]{1,128}$/

/** Tool calls served over HTTP without the SDK's per-request work. */
export class HttpFastCalls {
  readonly #runtime: Runtime<unknown, unknown>
  /** Per revision: the calls of one long-lived instance of that era; null when it cannot serve. */
  readonly #byRevision = new Map<string, ModernCalls | null>()
  /** The 2025-era instance (`--stateless`); null when it cannot serve. */
  #legacy: LegacyCalls | null | undefined
  /** How many calls were served here (for tests and diagnostics). */
  served = 0

  constructor(runtime: Runtime<unknown, unknown>) {
    this.#runtime = runtime
  }

  /**
   * Serves `message` when it qualifies (see the module comment) and resolves once it is answered;
   * undefined when the SDK serves it.
   */
  serve(
    req: IncomingMessage,
    res: ServerResponse,
    message: unknown,
    stateless: boolean,
  ): Promise<void> | undefined {
    if (!isRecord(message) || message.jsonrpc !== '2.0' || !membersWithin(message, REQUEST_MEMBERS))
      return undefined
    const { id, method, params } = message
    if (method !== 'tools/call' || !isId(id) || !isJsonContentType(req.headers['content-type']))
      return undefined
    const meta = isRecord(params) && isRecord(params._meta) ? params._meta : undefined
    if (meta && PROTOCOL_VERSION_META_KEY in meta) return this.#serveModern(req, res, id, params)
    return stateless ? this.#serveStateless(req, res, id, params) : undefined
  }

  /**
   * A `tools/call` POST of a 2025-era session held here: the work that serves it with the session's
   * own transport and server (session-post.ts), or undefined when the SDK's adapter serves it.
   */
  serveInSession(
    req: IncomingMessage,
    res: ServerResponse,
    message: unknown,
    session: { transport: unknown; server: McpServer },
    viaSdk: () => Promise<void>,
  ): (() => Promise<void>) | undefined {
    const work = sessionCall(req, res, message, session, viaSdk)
    if (work) this.served++
    return work
  }

  /** A 2026-07-28 call (see the module comment). */
  #serveModern(req: IncomingMessage, res: ServerResponse, id: string | number, params: unknown) {
    const call = callParams(params, ENVELOPE_KEYS)
    const meta = call?._meta
    // The SDK classifies a request by its body: an envelope naming a 2026 revision (checked below
    // with the SDK's own envelope check) whose headers agree with it is a 2026-07-28 request.
    const revision = meta?.[PROTOCOL_VERSION_META_KEY]
    if (!call || !meta || typeof revision !== 'string' || !SERVED_REVISIONS.has(revision)) return undefined
    const { headers } = req
    if (
      headers['mcp-protocol-version'] !== revision ||
      headers['mcp-method'] !== 'tools/call' ||
      headers['mcp-name'] !== call.name ||
      !PLAIN_NAME.test(call.name)
    ) {
      return undefined
    }
    const calls = this.#callsFor(revision)
    const lifted = calls?.lift(meta, revision)
    if (!calls || !lifted) return undefined
    this.served++
    const { envelope, rest } = lifted
    return this.#answer(req, new Exchange(res, id, this.#runtime, false), (extras, onStop) =>
      calls.call(
        id,
        call,
        envelope,
        rest,
        {
          ...extras,
          log: (level, data, logger) =>
            calls.logs(envelope, level)
              ? extras.notify({ method: 'notifications/message', params: { level, data, logger } })
              : Promise.resolve(),
        },
        onStop,
      ),
    )
  }

  /**
   * A 2025-era call with `--stateless`, answered as the SDK's per-request 2025 transport answers
   * it (an SSE stream: the call's notifications, then its result) when that transport would
   * accept it: both media types accepted, a supported `MCP-Protocol-Version` or none, no `_meta`
   * key under the protocol's reserved prefix, no task, and `Mcp-Method`/`Mcp-Name`, if sent, equal
   * to the body's values.
   */
  #serveStateless(req: IncomingMessage, res: ServerResponse, id: string | number, params: unknown) {
    const call = callParams(params, NO_ENVELOPE)
    if (!call) return undefined
    const { headers } = req
    const version = headers['mcp-protocol-version']
    if (Array.isArray(version)) return undefined
    if (
      !acceptsJsonAndEventStream(headers.accept) ||
      (version !== undefined && !LEGACY_REVISIONS.has(version)) ||
      (headers['mcp-method'] !== undefined && headers['mcp-method'] !== 'tools/call') ||
      (headers['mcp-name'] !== undefined && headers['mcp-name'] !== call.name)
    ) {
      return undefined
    }
    const legacy = this.#legacyInstance()
    if (!legacy) return undefined
    this.served++
    const { callTool, codec, server } = legacy
    return this.#answer(req, new Exchange(res, id, this.#runtime, true), (extras, onStop) => {
      const mcpReq: CallingContext['mcpReq'] = {
        id,
        notify: extras.notify,
        log: (level, data, logger) =>
          server.getCapabilities().logging
            ? extras.notify({ method: 'notifications/message', params: { level, data, logger } })
            : Promise.resolve(),
      }
      if (call._meta !== undefined) mcpReq._meta = call._meta
      const ctx: CallingContext = {
        mcpReq,
        http: extras.http as CallingContext['http'],
        keelSession: extras.session,
      }
      return legacyAnswer(callTool(call, ctx, onStop), codec)
    })
  }

  /** Runs one call on `exchange` and answers it there, as the SDK's per-request instance would. */
  async #answer(
    req: IncomingMessage,
    exchange: Exchange,
    run: (
      extras: Pick<ModernCallExtras, 'http' | 'session' | 'notify'>,
      onStop: (stop: (reason: unknown) => void) => void,
    ) => Promise<ModernAnswer>,
  ): Promise<void> {
    const { res } = exchange
    // The client hanging up stops the call, as closing the SDK's per-request instance does.
    let stop: ((reason: unknown) => void) | undefined
    const onClose = () => {
      exchange.closed = true
      stop?.(new DOMException('The client closed the request', 'AbortError'))
    }
    res.once('close', onClose)
    // The request's session, as the SDK's per-request instance gives it: no id, and what the call
    // registers with `onClose` runs once the request is answered (or its client hangs up).
    const closers: Array<() => void | Promise<void>> = []
    const session: SessionAccess = { id: undefined, onClose: (closer) => void closers.push(closer) }
    const answer = await run(
      {
        http: { authInfo: verifiedAuth(req) },
        session,
        notify: (notification) => exchange.notify({ jsonrpc: '2.0', ...notification }),
      },
      (stopCall) => {
        stop = stopCall
      },
    )
    res.off('close', onClose)
    try {
      exchange.answer(answer)
    } finally {
      for (const closer of closers.splice(0)) {
        Promise.resolve()
          .then(closer)
          .catch((error: unknown) => this.#runtime.logger.warn('a connection cleanup failed', { error }))
      }
    }
  }

  /** The calls of one instance serving `revision`, made on first use. */
  #callsFor(revision: string): ModernCalls | undefined {
    let calls = this.#byRevision.get(revision)
    if (calls === undefined) {
      calls = this.#instanceFor(revision) ?? null
      this.#byRevision.set(revision, calls)
    }
    return calls ?? undefined
  }

  /** One long-lived 2025-era instance, as the SDK's per-request 2025 handler makes them (never initialized). */
  #legacyInstance(): LegacyCalls | undefined {
    if (this.#legacy === undefined) {
      const mcp: McpServer = createInstance(this.#runtime, { connection: 'request' })
      const server = mcp.server
      const internals = server as unknown as {
        _negotiatedWireCodec?: () => ResultCodec
        _supportedProtocolVersions?: string[]
      }
      const callTool = coreCallToolOf(mcp)
      const codec = internals._negotiatedWireCodec
      const supported = internals._supportedProtocolVersions
      // The versions the SDK's 2025 transport accepts are the instance's (private API, checked).
      const same =
        Array.isArray(supported) &&
        supported.length === LEGACY_REVISIONS.size &&
        supported.every((version) => LEGACY_REVISIONS.has(version))
      this.#legacy =
        callTool && typeof codec === 'function' && same && server.getNegotiatedProtocolVersion() === undefined
          ? { callTool, codec: () => codec.call(server), server }
          : null
    }
    return this.#legacy ?? undefined
  }

  #instanceFor(revision: string): ModernCalls | undefined {
    const mcp: McpServer = createInstance(this.#runtime, { connection: 'request' })
    const server = mcp.server as McpServer['server'] & {
      _negotiatedProtocolVersion?: string
      _supportedProtocolVersions?: string[]
    }
    const callTool = coreCallToolOf(mcp)
    // The era is the instance's state, as the SDK's HTTP entry sets it (private API, checked).
    if (!callTool || !('_negotiatedProtocolVersion' in server)) return undefined
    server._negotiatedProtocolVersion = revision
    if (server.getNegotiatedProtocolVersion() !== revision) return undefined
    const calls = ModernCalls.of(mcp.server, callTool)
    if (!calls || typeof calls.codec().checkInboundEnvelope !== 'function') return undefined
    return calls
  }
}

/** How often an SSE answer gets a keep-alive comment while the call runs, as the SDK sends them. */
const KEEP_ALIVE_MS = 15_000

/**
 * One request's answer, as the SDK's per-request transport gives it: one JSON body when the result
 * comes first; an SSE stream from the first notification on (progress, log messages), ending with
 * the result's frame.
 */
class Exchange {
  /** Set when the client hung up: nothing more is written. */
  closed = false
  #keepAlive: NodeJS.Timeout | undefined
  #streaming = false

  constructor(
    readonly res: ServerResponse,
    readonly id: string | number,
    readonly runtime: Runtime<unknown, unknown>,
    /** 2025-era: the answer is an SSE stream from the start, as the SDK's 2025 transport writes it. */
    streamAtOnce: boolean,
  ) {
    if (streamAtOnce) this.#stream()
  }

  #stream(): void {
    this.#streaming = true
    this.res.writeHead(200, SSE_HEADERS)
    this.#keepAlive = setInterval(() => this.#frame(': keepalive\n\n'), KEEP_ALIVE_MS)
    this.#keepAlive.unref()
  }

  notify(message: Message): Promise<void> {
    if (this.closed || this.res.writableEnded) return Promise.resolve()
    if (!this.#streaming) this.#stream()
    this.#frame(`event: message\ndata: ${JSON.stringify(message)}\n\n`)
    return Promise.resolve()
  }

  answer(answer: ModernAnswer): void {
    clearInterval(this.#keepAlive)
    const { res, id } = this
    if (this.closed || res.destroyed || res.writableEnded) return
    let body: string
    try {
      body = JSON.stringify(answerMessage(id, answer))
    } catch (error) {
      this.runtime.logger.error('a tool call answer could not be encoded', {
        error: (error as Error).message,
      })
      body = JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: 'Internal error' } })
      if (!this.#streaming) {
        res.writeHead(500, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
        res.end(body)
        return
      }
    }
    if (this.#streaming) {
      res.end(`event: message\ndata: ${body}\n\n`)
      return
    }
    // As the SDK answers: 200 with the JSON-RPC answer, except a missing client capability (400).
    const status = answer.error && encodedError(answer.error).code === -32021 ? 400 : 200
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    res.end(body)
  }

  #frame(text: string): void {
    if (!this.closed && !this.res.writableEnded) this.res.write(text)
  }
}
