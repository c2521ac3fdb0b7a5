import type { McpServer } from '@modelcontextprotocol/server'
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
const CALL_META = new Set(['progressToken'])
const CANCEL_PARAMS = new Set(['requestId', 'reason'])
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

/** The `params` of a `tools/call` the fast path serves, or undefined. */
function callParams(params: unknown): CallParams | undefined {
  if (!isRecord(params) || !membersWithin(params, CALL_PARAMS)) return undefined
  if (typeof params.name !== 'string') return undefined
  // The SDK's record parse drops a `__proto__` member of the arguments: leave such a call to it.
  const args = params.arguments
  if (args !== undefined && (!isRecord(args) || Object.hasOwn(args, '__proto__'))) return undefined
  const meta = params._meta
  if (meta !== undefined) {
    if (!isRecord(meta) || !membersWithin(meta, CALL_META)) return undefined
    if (meta.progressToken !== undefined && !isId(meta.progressToken)) return undefined
  }
  return params as CallParams
}

/** The era codec the SDK checks results with (the instance's negotiated protocol generation). */
interface ResultCodec {
  /** The era's encoding of a result for the wire (2025: tools/list wraps non-object output schemas). */
  encodeResult(method: string, result: unknown, serverInfo?: unknown): unknown
  validateResult(
    method: string,
    raw: unknown,
  ): { ok: true; value: unknown } | { ok: false; reason: string; message?: string }
}

type CallError = { code?: unknown; message?: string; data?: unknown }

type RequestHandler = (request: { method: string; params?: unknown }, ctx: unknown) => Promise<unknown>

/** A call served here, until it is answered or cancelled. */
interface Served {
  stop?: (reason: unknown) => void
  cancelled: boolean
  reason?: unknown
}

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
  /** Set once the 2025 handshake is complete on the attached instance. */
  #live = false
  readonly #served = new Map<Id, Served>()
  /** How many messages were served here (for tests and diagnostics). */
  served = 0

  constructor(send: (message: Message) => Promise<void>, post?: (message: Message) => void) {
    this.#send = send
    this.#post = post ?? ((message) => void send(message).catch(() => {}))
  }

  /**
   * The instance serving the connection, as the SDK's stdio entry pins it, and its era. Only a
   * 2025-era instance is served here, and only once it is initialized; until then, and for a
   * 2026-07-28 connection, every message goes to the SDK.
   */
  attach(mcp: McpServer, era: string | undefined): void {
    this.#stopAll()
    this.#live = false
    this.#callTool = undefined
    const callTool = era === 'legacy' ? coreCallToolOf(mcp) : undefined
    const server = mcp.server
    // The SDK's own result check for this era and its `logging/setLevel` handler (private API,
    // checked here: without them, no fast path).
    const internals = server as unknown as {
      _negotiatedWireCodec?: () => ResultCodec
      _requestHandlers?: Map<string, RequestHandler>
    }
    const codecOf = internals._negotiatedWireCodec
    const setLevel = internals._requestHandlers?.get('logging/setLevel')
    const listTools = internals._requestHandlers?.get('tools/list')
    if (!callTool || typeof codecOf !== 'function' || !setLevel || !listTools) return
    this.#callTool = callTool
    this.#codec = () => codecOf.call(server)
    this.#handlers = { 'logging/setLevel': setLevel, 'tools/list': listTools }
    const initialized = server.oninitialized
    server.oninitialized = () => {
      initialized?.()
      if (this.#callTool === callTool) this.#live = true
    }
    const closed = server.onclose
    server.onclose = () => {
      closed?.()
      if (this.#callTool !== callTool) return
      this.#live = false
      this.#callTool = undefined
      this.#stopAll()
    }
  }

  /** The work that serves `message` here, or undefined when the SDK serves it. */
  claim(message: unknown): (() => void) | undefined {
    if (!this.#live || !isRecord(message) || message.jsonrpc !== '2.0') return undefined
    const work = this.#claimed(message)
    if (work) this.served++
    return work
  }

  #claimed(message: Message): (() => void) | undefined {
    const { method, id, params } = message
    if (method === 'notifications/cancelled') return this.#claimCancel(message)
    if (!isId(id) || this.#served.has(id) || !membersWithin(message, REQUEST_MEMBERS)) return undefined
    if (method === 'tools/call') {
      const call = callParams(params)
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

  /** Stops every call served here (the connection closed); none of them is answered. */
  close(): void {
    this.#live = false
    this.#callTool = undefined
    this.#stopAll()
  }

  #claimCancel(message: Message): (() => void) | undefined {
    const { params } = message
    if (!membersWithin(message, NOTIFICATION_MEMBERS) || !isRecord(params)) return undefined
    if (!membersWithin(params, CANCEL_PARAMS) || !isId(params.requestId)) return undefined
    if (params.reason !== undefined && typeof params.reason !== 'string') return undefined
    const served = this.#served.get(params.requestId)
    if (!served) return undefined
    // As the SDK does: the call's signal is aborted with the client's reason, and it is not answered.
    return () => {
      served.cancelled = true
      served.reason = params.reason ?? new DOMException('This operation was aborted', 'AbortError')
      served.stop?.(served.reason)
    }
  }

  #call(id: Id, params: CallParams): void {
    const callTool = this.#callTool as CoreCallTool
    const served: Served = { cancelled: false }
    this.#served.set(id, served)
    const mcpReq: CallingContext['mcpReq'] = { id, notify: this.#notify, log: this.#log }
    if (params._meta !== undefined) mcpReq._meta = params._meta
    // One reaction for both outcomes: no `finally` promise and closure per call.
    const settle = (result: Message | undefined, error?: CallError): void => {
      if (this.#served.get(id) === served) this.#served.delete(id)
      if (served.cancelled) return
      if (result !== undefined) this.#answerCall(id, result)
      else this.#answerError(id, error as CallError)
    }
    callTool(params, { mcpReq }, (stop) => {
      served.stop = stop
      if (served.cancelled) stop(served.reason)
    }).then(settle, (error: CallError) => settle(undefined, error ?? {}))
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

  /** The result as the SDK's tools/call wrapper passes it: checked against the era's schema. */
  #answerCall(id: Id, result: Message): void {
    if (plainCallResult(result)) {
      this.#answer(id, result)
      return
    }
    const normalized =
      result.content === undefined && !FOREIGN_RESULT_MEMBERS.some((key) => key in result)
        ? { ...result, content: [] }
        : result
    const checked = (this.#codec as () => ResultCodec)().validateResult('tools/call', normalized)
    if (checked.ok) this.#answer(id, checked.value as Message)
    else this.#answerError(id, { code: -32602, message: `Invalid tools/call result: ${checked.message}` })
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
        // As the SDK encodes it: -32002 (resource not found) is -32602 on the wire.
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
