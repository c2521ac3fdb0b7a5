import type { IncomingMessage, ServerResponse } from 'node:http'
import { isJsonContentType, type McpServer, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server'
import { createInstance } from '../build-server.js'
import type { SessionAccess } from '../define.js'
import {
  callParams,
  ENVELOPE_KEYS,
  encodedError,
  isId,
  isRecord,
  type Message,
  type ModernAnswer,
  ModernCalls,
  membersWithin,
  REQUEST_MEMBERS,
} from '../fast-call.js'
import type { Runtime } from '../instance.js'
import { coreCallToolOf } from '../tool-call.js'
import { verifiedAuth } from './context.js'

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
// on. Everything else goes to the SDK unchanged.
// `KEEL_FAST_PATH=0` turns it off.

/**
 * The revisions served here: the one 2026-era revision of this SDK line. A request naming another
 * goes to the SDK, which serves it or refuses it.
 */
const SERVED_REVISIONS = new Set(['2026-07-28'])

/** A tool name the `Mcp-Name` header carries as it is (no Base64 sentinel, no whitespace). */
const PLAIN_NAME = /^[A-Za-z0-9_.-]{1,128}$/

/** 2026-07-28 tool calls served over HTTP without the SDK's per-request work. */
export class HttpFastCalls {
  readonly #runtime: Runtime<unknown, unknown>
  /** Per revision: the calls of one long-lived instance of that era; null when it cannot serve. */
  readonly #byRevision = new Map<string, ModernCalls | null>()
  /** How many calls were served here (for tests and diagnostics). */
  served = 0

  constructor(runtime: Runtime<unknown, unknown>) {
    this.#runtime = runtime
  }

  /**
   * Serves `message` when it qualifies (see the module comment) and resolves once it is answered;
   * undefined when the SDK serves it.
   */
  serve(req: IncomingMessage, res: ServerResponse, message: unknown): Promise<void> | undefined {
    if (!isRecord(message) || message.jsonrpc !== '2.0' || !membersWithin(message, REQUEST_MEMBERS))
      return undefined
    const { id, method, params } = message
    if (method !== 'tools/call' || !isId(id)) return undefined
    const call = callParams(params, ENVELOPE_KEYS)
    const meta = call?._meta
    // The SDK classifies a request by its body: an envelope naming a 2026 revision (checked below
    // with the SDK's own envelope check) whose headers agree with it is a 2026-07-28 request.
    const revision = meta?.[PROTOCOL_VERSION_META_KEY]
    if (!call || !meta || typeof revision !== 'string' || !SERVED_REVISIONS.has(revision)) return undefined
    const { headers } = req
    if (
      !isJsonContentType(headers['content-type']) ||
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
    return this.#answer(req, res, id, calls, call, lifted.envelope, lifted.rest)
  }

  async #answer(
    req: IncomingMessage,
    res: ServerResponse,
    id: string | number,
    calls: ModernCalls,
    call: NonNullable<ReturnType<typeof callParams>>,
    envelope: Message,
    rest: Message | undefined,
  ): Promise<void> {
    const exchange = new Exchange(res, id, this.#runtime)
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
    const notify = (notification: { method: string; params: Record<string, unknown> }) =>
      exchange.notify({ jsonrpc: '2.0', ...notification })
    const answer: ModernAnswer = await calls.call(
      id,
      call,
      envelope,
      rest,
      {
        http: { authInfo: verifiedAuth(req) },
        session,
        notify,
        log: (level, data, logger) =>
          calls.logs(envelope, level)
            ? notify({ method: 'notifications/message', params: { level, data, logger } })
            : Promise.resolve(),
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

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
}

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
  ) {}

  notify(message: Message): Promise<void> {
    if (this.closed || this.res.writableEnded) return Promise.resolve()
    if (!this.#streaming) {
      this.#streaming = true
      this.res.writeHead(200, SSE_HEADERS)
      this.#keepAlive = setInterval(() => this.#frame(': keepalive\n\n'), KEEP_ALIVE_MS)
      this.#keepAlive.unref()
    }
    this.#frame(`event: message\ndata: ${JSON.stringify(message)}\n\n`)
    return Promise.resolve()
  }

  answer(answer: ModernAnswer): void {
    clearInterval(this.#keepAlive)
    const { res, id } = this
    if (this.closed || res.destroyed || res.writableEnded) return
    let body: string
    try {
      body = answer.error
        ? JSON.stringify({ jsonrpc: '2.0', id, error: encodedError(answer.error) })
        : JSON.stringify({ result: answer.result, jsonrpc: '2.0', id })
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
