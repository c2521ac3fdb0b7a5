import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  isInputRequiredResult,
  LOG_LEVEL_META_KEY,
  type McpServer,
  PROTOCOL_VERSION_META_KEY,
} from '@modelcontextprotocol/server'
import { type CallingContext, type CoreCallTool, coreCallToolOf } from './tool-call.js'

// Core's stdio fast path: after a 2025-era connection is initialized, the messages of a warm
// call loop (`tools/call`, `tools/list`, `ping`, `logging/setLevel`, and `notifications/cancelled`
// for a call served here) are read once, checked by hand and served at once: a call by core's own
// `tools/call` handler (the one the SDK would call), `tools/list` and `logging/setLevel` by the
// SDK's registered handlers. The SDK's per-message work is skipped: classifying each message with
// zod schemas (several times on the way in and out), the request and result parses of `tools/call`
// (the request twice), the era router's queue, the request's context and abort controller.
// Anything else, and anything unusual about one of these (a member the check does not know,
// `_meta` beyond a progress token, a task, a duplicate id), goes to the SDK unchanged.
//
// On a 2026-07-28 connection, once the SDK has pinned it (its first request after
// `server/discover`), the same holds for `tools/call` and the cancellation of a call served here.
// Every such request carries the `_meta` envelope (protocol version, client capabilities, client
// info, log level): the version must be the connection's, and the envelope must pass the SDK's own
// check (`checkInboundEnvelope`), run once per distinct envelope (clients repeat theirs). The call
// goes through the SDK's multi-round-trip seam (an `input_required` answer checked against the
// declared capabilities) and its result through the era's codec (`resultType`, the identity
// stamp), as the SDK does it. A retry (`inputResponses`, `requestState`) goes to the SDK.
// `KEEL_FAST_PATH=0` turns it off.

type Id = string | number
type Message = Record<string, unknown>

/** The environment variable that turns the fast path off (`0`). */
export const FAST_PATH_ENV = 'KEEL_FAST_PATH'

/** Whether the fast path is on in this environment (default: on). */
export function fastPathEnabled(env: NodeJS.ProcessEnv): boolean {
  return env[FAST_PATH_ENV] !== '0'
}

const REQUEST_MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params'])
const NOTIFICATION_MEMBERS = new Set(['jsonrpc', 'method', 'params'])
const CALL_PARAMS = new Set(['name', 'arguments', '_meta'])
/** 2026-07-28: the envelope's reserved keys, which a call's `_meta` carries besides its own. */
const ENVELOPE_KEYS = new Set([
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY,
  LOG_LEVEL_META_KEY,
])
const NO_ENVELOPE = new Set<string>()
/** The prefix of `_meta` keys the protocol reserves (the SDK gives some of them a meaning). */
const RESERVED_PREFIX = 'io.modelcontextprotocol/'
const CANCEL_PARAMS = new Set(['requestId', 'reason'])
/** The cancellation of a 2026-07-28 request may carry `_meta` (an envelope the SDK lifts and ignores). */
const MODERN_CANCEL_PARAMS = new Set(['requestId', 'reason', '_meta'])
/** Log levels by severity, as the SDK orders them. */
const LOG_SEVERITY: Record<string, number> = {
  debug: 0,
  info: 1,
  notice: 2,
  warning: 3,
  error: 4,
  critical: 5,
  alert: 6,
  emergency: 7,
}
const LEVEL_PARAMS = new Set(['level'])
const NO_MEMBERS = new Set<string>()
const RESULT_MEMBERS = new Set(['content', 'structuredContent', 'isError'])
/** Result members the SDK leaves alone when it gives a result without `content` an empty one. */
const FOREIGN_RESULT_MEMBERS = ['task', 'inputRequests', 'requestState']

const isRecord = (value: unknown): value is Message =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

// The same rule as the envelope check (jsonrpc.ts): a string or a safe integer.
const isId = (value: unknown): value is Id =>
  typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value))

/** Every own member of `record` is one of `allowed` (a `__proto__` member from JSON is not). */
function membersWithin(record: Message, allowed: ReadonlySet<string>): boolean {
  for (const key in record) if (!allowed.has(key)) return false
  return true
}

/**
 * A `tools/call` result the SDK's 2025 result schema passes unchanged: text blocks of exactly
 * `type` and `text`, a plain-object `structuredContent`, a boolean `isError`. Anything else is
 * checked by the SDK's own schema.
 */
function plainCallResult(result: unknown): boolean {
  if (!isRecord(result) || !membersWithin(result, RESULT_MEMBERS)) return false
  const { content, structuredContent, isError } = result
  if (!Array.isArray(content)) return false
  for (const block of content) {
    if (!isRecord(block) || block.type !== 'text' || typeof block.text !== 'string') return false
    let members = 0
    for (const _ in block) members++
    if (members !== 2) return false
  }
  return (
    (structuredContent === undefined || isRecord(structuredContent)) &&
    (isError === undefined || typeof isError === 'boolean')
  )
}

type CallParams = Parameters<CoreCallTool>[0] & { _meta?: Message }

/**
 * The `params` of a `tools/call` the fast path serves, or undefined. Its `_meta` may hold a
 * progress token, `envelope` keys, and keys the SDK passes through untouched (W3C trace context
 * such as `traceparent`, vendor keys): any key outside the protocol's reserved prefix.
 */
function callParams(params: unknown, envelope: ReadonlySet<string>): CallParams | undefined {
  if (!isRecord(params) || !membersWithin(params, CALL_PARAMS)) return undefined
  if (typeof params.name !== 'string') return undefined
  // The SDK's record parse drops a `__proto__` member of the arguments: leave such a call to it.
  const args = params.arguments
  if (args !== undefined && (!isRecord(args) || Object.hasOwn(args, '__proto__'))) return undefined
  const meta = params._meta
  if (meta !== undefined) {
    if (!isRecord(meta)) return undefined
    for (const key in meta) {
      if (key === '__proto__' || (key.startsWith(RESERVED_PREFIX) && !envelope.has(key))) return undefined
    }
    if (meta.progressToken !== undefined && !isId(meta.progressToken)) return undefined
  }
  return params as CallParams
}

/**
 * Whether two JSON values are the same value (JSON data only: plain objects, arrays, primitives),
 * compared to a bounded depth; deeper values count as different.
 */
function sameJson(a: unknown, b: unknown, depth = 0): boolean {
  if (a === b) return true
  if (depth > 8 || typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let index = 0; index < a.length; index++) if (!sameJson(a[index], b[index], depth + 1)) return false
    return true
  }
  if (Array.isArray(b)) return false
  let count = 0
  for (const key in a) {
    if (!Object.hasOwn(b, key) || !sameJson((a as Message)[key], (b as Message)[key], depth + 1)) return false
    count++
  }
  for (const _ in b) count--
  return count === 0
}

/** The era codec the SDK checks results with (the instance's negotiated protocol generation). */
interface ResultCodec {
  /** The era's encoding of a result for the wire (2025: tools/list wraps non-object output schemas). */
  encodeResult(method: string, result: unknown, serverInfo?: unknown): unknown
  validateResult(
    method: string,
    raw: unknown,
  ): { ok: true; value: unknown } | { ok: false; reason: string; message?: string }
  /** 2026-07-28: why a request's envelope (its reserved `_meta` keys) is refused, or undefined. */
  checkInboundEnvelope?(material: { envelope?: Record<string, unknown> }): string | undefined
  encodeErrorCode?(code: number): number
}

type CallError = { code?: unknown; message?: string; data?: unknown }

type RequestHandler = (request: { method: string; params?: unknown }, ctx: unknown) => Promise<unknown>

/** The SDK's multi-round-trip seam of a 2026-07-28 `tools/call` (private API, checked at attach). */
type InputRequiredSeam = (
  method: string,
  handler: (request: { params: CallParams }, ctx: CallingContext) => Promise<unknown>,
  request: { method: string; params: CallParams },
  ctx: CallingContext & { mcpReq: { requestState(): undefined } },
) => Promise<unknown>

/** A call served here, until it is answered or cancelled. */
interface Served {
  stop?: (reason: unknown) => void
  cancelled: boolean
  reason?: unknown
}

/** What the fast path uses of a 2026-07-28 instance. */
interface Modern {
  server: McpServer['server']
  revision: string
  seam: InputRequiredSeam
  serverInfo: () => unknown
  /** The last envelope the SDK's check accepted (reserved keys only). */
  accepted?: Message
}

const noRequestState = (): undefined => undefined

/**
 * Serves the warm call loop of one stdio connection. `claim` looks at each parsed line before the
 * SDK does and returns the work that serves it, or undefined to leave it to the SDK.
 */
export class StdioFastPath {
  readonly #send: (message: Message) => Promise<void>
  /** Sends an answer no one waits for (no promise); `#send` when not given. */
  readonly #post: (message: Message) => void
  #callTool: CoreCallTool | undefined
  #codec: (() => ResultCodec) | undefined
  /** The SDK's registered handlers (their checks, core's handlers inside) served at once. */
  #handlers: { 'logging/setLevel': RequestHandler; 'tools/list': RequestHandler } | undefined
  /** Set while a 2026-07-28 instance is attached. */
  #modern: Modern | undefined
  /** Set once the 2025 handshake is complete, or the SDK has pinned the 2026-07-28 instance. */
  #live = false
  readonly #served = new Map<Id, Served>()
  /** How many messages were served here (for tests and diagnostics). */
  served = 0

  constructor(send: (message: Message) => Promise<void>, post?: (message: Message) => void) {
    this.#send = send
    this.#post = post ?? ((message) => void send(message).catch(() => {}))
  }

  /**
   * The instance serving the connection, as the SDK's stdio entry pins it, and its era. A
   * 2025-era instance is served here once it is initialized; a 2026-07-28 one once the SDK has
   * delivered it a request other than `server/discover` (the entry pins the instance on it: until
   * then a 2025 `initialize` may still replace a probe instance). Until then every message goes to
   * the SDK.
   */
  attach(mcp: McpServer, era: string | undefined): void {
    this.#stopAll()
    this.#live = false
    this.#callTool = undefined
    this.#modern = undefined
    const callTool = era === 'legacy' || era === 'modern' ? coreCallToolOf(mcp) : undefined
    const server = mcp.server
    // The SDK's own result check for this era and its `logging/setLevel` handler (private API,
    // checked here: without them, no fast path).
    const internals = server as unknown as {
      _negotiatedWireCodec?: () => ResultCodec
      _requestHandlers?: Map<string, RequestHandler>
      _invokeInputRequiredCapableHandler?: InputRequiredSeam
      _outboundServerInfo?: () => unknown
      _onrequest?: (request: { method?: unknown }, extra: unknown) => void
    }
    const codecOf = internals._negotiatedWireCodec
    if (!callTool || typeof codecOf !== 'function') return
    if (era === 'modern') {
      if (!this.#attachModern(server, internals, callTool)) return
    } else {
      const setLevel = internals._requestHandlers?.get('logging/setLevel')
      const listTools = internals._requestHandlers?.get('tools/list')
      if (!setLevel || !listTools) return
      this.#handlers = { 'logging/setLevel': setLevel, 'tools/list': listTools }
      const initialized = server.oninitialized
      server.oninitialized = () => {
        initialized?.()
        if (this.#callTool === callTool) this.#live = true
      }
    }
    this.#callTool = callTool
    this.#codec = () => codecOf.call(server)
    const closed = server.onclose
    server.onclose = () => {
      closed?.()
      if (this.#callTool !== callTool) return
      this.#live = false
      this.#callTool = undefined
      this.#modern = undefined
      this.#stopAll()
    }
  }

  #attachModern(
    server: McpServer['server'],
    internals: {
      _invokeInputRequiredCapableHandler?: InputRequiredSeam
      _outboundServerInfo?: () => unknown
      _onrequest?: (request: { method?: unknown }, extra: unknown) => void
    },
    callTool: CoreCallTool,
  ): boolean {
    const {
      _invokeInputRequiredCapableHandler: seam,
      _outboundServerInfo: serverInfo,
      _onrequest: onrequest,
    } = internals
    if (typeof seam !== 'function' || typeof serverInfo !== 'function' || typeof onrequest !== 'function') {
      return false
    }
    const modern: Modern = {
      server,
      revision: '',
      seam: seam.bind(server) as InputRequiredSeam,
      serverInfo: () => serverInfo.call(server),
    }
    this.#modern = modern
    // The entry sets the instance's revision after making it, and delivers it a request other than
    // `server/discover` only once it has pinned it for the connection.
    internals._onrequest = (request, extra) => {
      if (!this.#live && request.method !== 'server/discover' && this.#callTool === callTool) {
        const revision = server.getNegotiatedProtocolVersion()
        const codec = (
          server as unknown as { _negotiatedWireCodec: () => ResultCodec }
        )._negotiatedWireCodec()
        if (typeof revision === 'string' && typeof codec.checkInboundEnvelope === 'function') {
          modern.revision = revision
          this.#live = true
        }
      }
      onrequest.call(server, request, extra)
    }
    return true
  }

  /** The work that serves `message` here, or undefined when the SDK serves it. */
  claim(message: unknown): (() => void) | undefined {
    if (!this.#live || !isRecord(message) || message.jsonrpc !== '2.0') return undefined
    const work = this.#modern ? this.#claimedModern(message, this.#modern) : this.#claimed(message)
    if (work) this.served++
    return work
  }

  #claimed(message: Message): (() => void) | undefined {
    const { method, id, params } = message
    if (method === 'notifications/cancelled') return this.#claimCancel(message, CANCEL_PARAMS)
    if (!isId(id) || this.#served.has(id) || !membersWithin(message, REQUEST_MEMBERS)) return undefined
    if (method === 'tools/call') {
      const call = callParams(params, NO_ENVELOPE)
      return call ? () => this.#call(id, call) : undefined
    }
    // Served here so that a level set just before a call counts for it, as it does when the SDK
    // serves both in order: the SDK's own handler (its check, core's state) runs at once.
    if (method === 'logging/setLevel') {
      if (!isRecord(params) || !membersWithin(params, LEVEL_PARAMS)) return undefined
      return () => this.#viaHandler(id, 'logging/setLevel', params)
    }
    if (method === 'tools/list') {
      if (params !== undefined && (!isRecord(params) || !membersWithin(params, NO_MEMBERS))) return undefined
      return () => this.#viaHandler(id, 'tools/list', params)
    }
    if (method === 'ping') {
      if (params !== undefined && (!isRecord(params) || !membersWithin(params, NO_MEMBERS))) return undefined
      return () => this.#answer(id, {})
    }
    return undefined
  }

  /** 2026-07-28: a `tools/call` whose envelope the SDK would accept, and cancellations. */
  #claimedModern(message: Message, modern: Modern): (() => void) | undefined {
    const { method, id, params } = message
    if (method === 'notifications/cancelled') return this.#claimCancel(message, MODERN_CANCEL_PARAMS)
    if (method !== 'tools/call' || !isId(id) || this.#served.has(id)) return undefined
    if (!membersWithin(message, REQUEST_MEMBERS)) return undefined
    const call = callParams(params, ENVELOPE_KEYS)
    const meta = call?._meta
    if (!call || meta === undefined || meta[PROTOCOL_VERSION_META_KEY] !== modern.revision) return undefined
    // The envelope and the rest of `_meta`, as the SDK lifts them apart.
    let envelope = meta
    let rest: Message | undefined
    for (const key in meta) {
      if (ENVELOPE_KEYS.has(key)) continue
      if (rest === undefined) {
        rest = {}
        envelope = {}
        for (const reserved of ENVELOPE_KEYS) if (reserved in meta) envelope[reserved] = meta[reserved]
      }
      rest[key] = meta[key]
    }
    if (!this.#envelopeAccepted(envelope, modern)) return undefined
    return () => this.#call(id, call, modern, envelope, rest)
  }

  /** The SDK's envelope check, run once for each envelope that differs from the last one accepted. */
  #envelopeAccepted(envelope: Message, modern: Modern): boolean {
    if (modern.accepted !== undefined && sameJson(envelope, modern.accepted)) return true
    const codec = (this.#codec as () => ResultCodec)()
    if (codec.checkInboundEnvelope?.({ envelope }) !== undefined) return false
    modern.accepted = envelope
    return true
  }

  /** Stops every call served here (the connection closed); none of them is answered. */
  close(): void {
    this.#live = false
    this.#callTool = undefined
    this.#modern = undefined
    this.#stopAll()
  }

  #claimCancel(message: Message, allowed: ReadonlySet<string>): (() => void) | undefined {
    const { params } = message
    if (!membersWithin(message, NOTIFICATION_MEMBERS) || !isRecord(params)) return undefined
    if (!membersWithin(params, allowed) || !isId(params.requestId)) return undefined
    if (params.reason !== undefined && typeof params.reason !== 'string') return undefined
    if (params._meta !== undefined && !isRecord(params._meta)) return undefined
    const served = this.#served.get(params.requestId)
    if (!served) return undefined
    // As the SDK does: the call's signal is aborted with the client's reason, and it is not answered.
    return () => {
      served.cancelled = true
      served.reason = params.reason ?? new DOMException('This operation was aborted', 'AbortError')
      served.stop?.(served.reason)
    }
  }

  #call(id: Id, params: CallParams, modern?: Modern, envelope?: Message, meta?: Message): void {
    const callTool = this.#callTool as CoreCallTool
    const served: Served = { cancelled: false }
    this.#served.set(id, served)
    // One reaction for both outcomes: no `finally` promise and closure per call.
    const settle = (result: Message | undefined, error?: CallError): void => {
      if (this.#served.get(id) === served) this.#served.delete(id)
      if (served.cancelled) return
      if (result !== undefined) this.#answerCall(id, result, modern)
      else this.#answerError(id, error as CallError)
    }
    const onStop = (stop: (reason: unknown) => void) => {
      served.stop = stop
      if (served.cancelled) stop(served.reason)
    }
    if (modern === undefined) {
      const mcpReq: CallingContext['mcpReq'] = { id, notify: this.#notify, log: this.#log }
      if (params._meta !== undefined) mcpReq._meta = params._meta
      callTool(params, { mcpReq }, onStop).then(settle, (error: CallError) => settle(undefined, error ?? {}))
      return
    }
    // The context the SDK gives a 2026-07-28 request: the envelope lifted out of `_meta`, no
    // request state (a retry that carries one is the SDK's), the seam around the handler.
    const mcpReq = {
      id,
      method: 'tools/call',
      envelope,
      requestState: noRequestState,
      notify: this.#notifyModern,
      log: (level: string, data: unknown, logger?: string) => this.#logModern(envelope, level, data, logger),
    } as CallingContext['mcpReq'] & { requestState(): undefined }
    if (meta !== undefined) mcpReq._meta = meta
    modern
      .seam(
        'tools/call',
        (request, ctx) => callTool(request.params, ctx, onStop),
        { method: 'tools/call', params },
        { mcpReq },
      )
      .then(settle as (result: unknown) => void, (error: CallError) => settle(undefined, error ?? {}))
  }

  /** A request the SDK's own registered handler serves, called at once and encoded as it encodes. */
  #viaHandler(id: Id, method: 'logging/setLevel' | 'tools/list', params: unknown): void {
    const handler = this.#handlers?.[method] as RequestHandler
    handler({ method, ...(params !== undefined ? { params } : {}) }, {}).then(
      (result) =>
        this.#answer(id, (this.#codec as () => ResultCodec)().encodeResult(method, result) as Message),
      (error: { code?: unknown; message?: string; data?: unknown }) => this.#answerError(id, error),
    )
  }

  /**
   * The result as the SDK's tools/call wrapper passes it: checked against the era's schema (an
   * `input_required` answer, already checked by the seam, is not), then encoded for a 2026-07-28
   * client as the SDK encodes it.
   */
  #answerCall(id: Id, result: Message, modern: Modern | undefined): void {
    const codec = (this.#codec as () => ResultCodec)()
    let value: Message = result
    if (!(modern && isInputRequiredResult(result)) && !plainCallResult(result)) {
      const normalized =
        result.content === undefined && !FOREIGN_RESULT_MEMBERS.some((key) => key in result)
          ? { ...result, content: [] }
          : result
      const checked = codec.validateResult('tools/call', normalized)
      if (!checked.ok) {
        this.#answerError(id, { code: -32602, message: `Invalid tools/call result: ${checked.message}` })
        return
      }
      value = checked.value as Message
    }
    if (modern === undefined) {
      this.#answer(id, value)
      return
    }
    let encoded: Message
    try {
      encoded = codec.encodeResult('tools/call', value, modern.serverInfo()) as Message
    } catch {
      this.#answerError(id, { code: -32603, message: 'Internal error' })
      return
    }
    this.#answer(id, encoded)
  }

  #answer(id: Id, result: Message): void {
    this.#post({ result, jsonrpc: '2.0', id })
  }

  #answerError(id: Id, error: { code?: unknown; message?: string; data?: unknown }): void {
    const code = Number.isSafeInteger(error.code) ? (error.code as number) : -32603
    this.#post({
      jsonrpc: '2.0',
      id,
      error: {
        // As the SDK encodes it (both eras): -32002 (resource not found) is -32602 on the wire.
        code: code === -32002 ? -32602 : code,
        message: error.message ?? 'Internal error',
        ...(error.data !== undefined ? { data: error.data } : {}),
      },
    })
  }

  readonly #notify = (notification: { method: string; params: Record<string, unknown> }): Promise<void> =>
    this.#callTool
      ? this.#send({ jsonrpc: '2.0', ...notification })
      : Promise.reject(new Error('Not connected'))

  readonly #log = (level: string, data: unknown, logger?: string): Promise<void> =>
    this.#notify({ method: 'notifications/message', params: { level, data, logger } })

  /** 2026-07-28: a call's notifications go the SDK's way (its era check, the listen router). */
  readonly #notifyModern = (notification: {
    method: string
    params: Record<string, unknown>
  }): Promise<void> =>
    this.#modern
      ? this.#modern.server.notification(notification as never)
      : Promise.reject(new Error('Not connected'))

  /** As the SDK logs for a 2026-07-28 request: only at or above the level its envelope opts in to. */
  #logModern(envelope: Message | undefined, level: string, data: unknown, logger?: string): Promise<void> {
    const threshold = envelope?.[LOG_LEVEL_META_KEY]
    const modern = this.#modern
    if (typeof threshold !== 'string' || !modern?.server.getCapabilities().logging) return Promise.resolve()
    if ((LOG_SEVERITY[level] ?? 0) < (LOG_SEVERITY[threshold] ?? 0)) return Promise.resolve()
    return this.#notifyModern({ method: 'notifications/message', params: { level, data, logger } })
  }

  #stopAll(): void {
    const closed = new Error('Connection closed')
    for (const served of this.#served.values()) {
      served.cancelled = true
      served.reason = closed
      served.stop?.(closed)
    }
    this.#served.clear()
  }
}
