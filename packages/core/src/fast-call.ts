import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  isInputRequiredResult,
  LOG_LEVEL_META_KEY,
  type McpServer,
  PROTOCOL_VERSION_META_KEY,
} from '@modelcontextprotocol/server'
import type { SessionAccess } from './define.js'
import { isRecord, membersWithin, validId } from './jsonrpc.js'
import { type McpLogLevel, mcpLevelAtLeast } from './logger.js'
import type { CallingContext, CoreCallTool } from './tool-call.js'

// What core's fast paths (stdio: fast-path.ts; Streamable HTTP: http/fast-call.ts) share: the
// hand checks of a `tools/call` message, and the serving of a 2026-07-28 call the way the SDK
// serves it (the envelope lifted out of `_meta` and checked by the SDK's own check, the call inside
// the SDK's multi-round-trip seam, the result checked and encoded by the era's codec).

export type Id = string | number
export type Message = Record<string, unknown>

export const REQUEST_MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params'])
export const NOTIFICATION_MEMBERS = new Set(['jsonrpc', 'method', 'params'])
const CALL_PARAMS = new Set(['name', 'arguments', '_meta'])
/** 2026-07-28: the envelope's reserved keys, which a call's `_meta` carries besides its own. */
export const ENVELOPE_KEYS = new Set([
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY,
  LOG_LEVEL_META_KEY,
])
export const NO_ENVELOPE = new Set<string>()
/** The prefix of `_meta` keys the protocol reserves (the SDK gives some of them a meaning). */
const RESERVED_PREFIX = 'io.modelcontextprotocol/'
export const CANCEL_PARAMS = new Set(['requestId', 'reason'])
/** The cancellation of a 2026-07-28 request may carry `_meta` (an envelope the SDK lifts and ignores). */
export const MODERN_CANCEL_PARAMS = new Set(['requestId', 'reason', '_meta'])
export const LEVEL_PARAMS = new Set(['level'])
export const NO_MEMBERS = new Set<string>()
const RESULT_MEMBERS = new Set(['content', 'structuredContent', 'isError'])
/** Result members the SDK leaves alone when it gives a result without `content` an empty one. */
export const FOREIGN_RESULT_MEMBERS = ['task', 'inputRequests', 'requestState']

/** The envelope check's rules (jsonrpc.ts): a JSON object, its members, an id (a string or a safe integer). */
export { isRecord, membersWithin }
export const isId = validId

/**
 * A `tools/call` result the SDK's 2025 result schema passes unchanged: text blocks of exactly
 * `type` and `text`, a plain-object `structuredContent`, a boolean `isError`. Anything else is
 * checked by the SDK's own schema.
 */
export function plainCallResult(result: unknown): boolean {
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

export type CallParams = Parameters<CoreCallTool>[0] & { _meta?: Message }

/**
 * The `params` of a `tools/call` the fast path serves, or undefined. Its `_meta` may hold a
 * progress token, `envelope` keys, and keys the SDK passes through untouched (W3C trace context
 * such as `traceparent`, vendor keys): any key outside the protocol's reserved prefix.
 */
export function callParams(params: unknown, envelope: ReadonlySet<string>): CallParams | undefined {
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
export interface ResultCodec {
  /** The era's encoding of a result for the wire (2025: tools/list wraps non-object output schemas). */
  encodeResult(method: string, result: unknown, serverInfo?: unknown): unknown
  validateResult(
    method: string,
    raw: unknown,
  ): { ok: true; value: unknown } | { ok: false; reason: string; message?: string }
  /** 2026-07-28: why a request's envelope (its reserved `_meta` keys) is refused, or undefined. */
  checkInboundEnvelope?(material: { envelope?: Record<string, unknown> }): string | undefined
}

export type CallError = { code?: unknown; message?: string; data?: unknown }

export type RequestHandler = (request: { method: string; params?: unknown }, ctx: unknown) => Promise<unknown>

/** The SDK's multi-round-trip seam of a 2026-07-28 `tools/call` (private API, checked at attach). */
export type InputRequiredSeam = (
  method: string,
  handler: (request: { params: CallParams }, ctx: CallingContext) => Promise<unknown>,
  request: { method: string; params: CallParams },
  ctx: CallingContext & { mcpReq: { requestState(): undefined } },
) => Promise<unknown>

const noRequestState = (): undefined => undefined

/** How many accepted envelopes {@link ModernCalls} remembers. */
const ACCEPTED_ENVELOPES = 8

/** What a 2026-07-28 call's context carries besides its id and envelope. */
export interface ModernCallExtras {
  /** Over Streamable HTTP: the request's verified credential. */
  http?: { authInfo?: unknown }
  /** Over Streamable HTTP: the request's own session access (see `CallRequestContext.keelSession`). */
  session?: SessionAccess
  notify: CallingContext['mcpReq']['notify']
  log: CallingContext['mcpReq']['log']
}

/** A served call's answer: its encoded result, or the error to answer with. */
export type ModernAnswer = { result: Message; error?: undefined } | { result?: undefined; error: CallError }

/**
 * The 2026-07-28 calls of one SDK instance, served as the SDK serves them. Uses SDK internals (the
 * seam, the identity stamp, the era codec), checked by {@link ModernCalls.of}: without them there
 * is no fast path and the SDK serves every call.
 */
export class ModernCalls {
  /**
   * The last few envelopes the SDK's check accepted (reserved keys only), newest first: a stdio
   * client repeats one; an HTTP endpoint serves a few clients at a time.
   */
  readonly #accepted: Message[] = []

  private constructor(
    readonly server: McpServer['server'],
    readonly callTool: CoreCallTool,
    readonly seam: InputRequiredSeam,
    readonly serverInfo: () => unknown,
    readonly codec: () => ResultCodec,
  ) {}

  static of(server: McpServer['server'], callTool: CoreCallTool): ModernCalls | undefined {
    const internals = server as unknown as {
      _invokeInputRequiredCapableHandler?: InputRequiredSeam
      _outboundServerInfo?: () => unknown
      _negotiatedWireCodec?: () => ResultCodec
    }
    const seam = internals._invokeInputRequiredCapableHandler
    const serverInfo = internals._outboundServerInfo
    const codec = internals._negotiatedWireCodec
    if (typeof seam !== 'function' || typeof serverInfo !== 'function' || typeof codec !== 'function')
      return undefined
    return new ModernCalls(
      server,
      callTool,
      seam.bind(server) as InputRequiredSeam,
      () => serverInfo.call(server),
      () => codec.call(server),
    )
  }

  /**
   * The envelope of a call's `_meta` and the rest of it, as the SDK lifts them apart, when the
   * envelope names `revision` and passes the SDK's check; undefined otherwise (the SDK answers).
   */
  lift(meta: Message, revision: string): { envelope: Message; rest: Message | undefined } | undefined {
    if (meta[PROTOCOL_VERSION_META_KEY] !== revision) return undefined
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
    return this.#accepts(envelope) ? { envelope, rest } : undefined
  }

  /** The SDK's envelope check, run once for each envelope that differs from those last accepted. */
  #accepts(envelope: Message): boolean {
    for (const known of this.#accepted) if (sameJson(envelope, known)) return true
    const check = this.codec().checkInboundEnvelope
    if (typeof check !== 'function' || check({ envelope }) !== undefined) return false
    this.#accepted.unshift(envelope)
    if (this.#accepted.length > ACCEPTED_ENVELOPES) this.#accepted.pop()
    return true
  }

  /**
   * Whether a log message at `level` goes to the client of a request with this envelope, as the
   * SDK decides for a 2026-07-28 request: only when the server offers logging and the envelope
   * opts in, at or above its level.
   */
  logs(envelope: Message, level: string): boolean {
    const threshold = envelope[LOG_LEVEL_META_KEY]
    if (typeof threshold !== 'string' || !this.server.getCapabilities().logging) return false
    return mcpLevelAtLeast(level as McpLogLevel, threshold as McpLogLevel)
  }

  /**
   * Serves one call: core's handler inside the SDK's seam, with the context the SDK would give it
   * (the envelope lifted out of `_meta`, no request state: a retry that carries one is the SDK's).
   * Never rejects: a failure is the answer's error.
   */
  async call(
    id: Id,
    params: CallParams,
    envelope: Message,
    rest: Message | undefined,
    extras: ModernCallExtras,
    onStop: (stop: (reason: unknown) => void) => void,
  ): Promise<ModernAnswer> {
    const mcpReq = {
      id,
      method: 'tools/call',
      envelope,
      requestState: noRequestState,
      notify: extras.notify,
      log: extras.log,
    } as CallingContext['mcpReq'] & { requestState(): undefined }
    if (rest !== undefined) mcpReq._meta = rest
    const ctx = { mcpReq } as CallingContext & { mcpReq: { requestState(): undefined } }
    if (extras.http !== undefined) ctx.http = extras.http as CallingContext['http']
    if (extras.session !== undefined) ctx.keelSession = extras.session
    const callTool = this.callTool
    try {
      const result = (await this.seam(
        'tools/call',
        (request, context) => callTool(request.params, context, onStop),
        { method: 'tools/call', params },
        ctx,
      )) as Message
      return this.answer(result)
    } catch (error) {
      return { error: (error ?? {}) as CallError }
    }
  }

  /**
   * The result as the SDK's tools/call wrapper passes it (an `input_required` answer, already
   * checked by the seam, is not checked again), encoded by the era's codec.
   */
  answer(result: Message): ModernAnswer {
    const codec = this.codec()
    const checked = checkedCallResult(codec, result, true)
    if (checked.error) return checked
    try {
      return { result: codec.encodeResult('tools/call', checked.result, this.serverInfo()) as Message }
    } catch {
      return { error: { code: -32603, message: 'Internal error' } }
    }
  }
}

/**
 * A `tools/call` result as the SDK's wrapper passes it: plain text results as they are, anything
 * else checked against the era's result schema (a result without `content` gets an empty one).
 */
export function checkedCallResult(codec: ResultCodec, result: Message, modern: boolean): ModernAnswer {
  if ((modern && isInputRequiredResult(result)) || plainCallResult(result)) return { result }
  const normalized =
    result.content === undefined && !FOREIGN_RESULT_MEMBERS.some((key) => key in result)
      ? { ...result, content: [] }
      : result
  const checked = codec.validateResult('tools/call', normalized)
  if (!checked.ok)
    return { error: { code: -32602, message: `Invalid tools/call result: ${checked.message}` } }
  return { result: checked.value as Message }
}

/** A JSON-RPC error response's `error` member, as the SDK encodes it (both eras). */
export function encodedError(error: CallError): { code: number; message: string; data?: unknown } {
  const code = Number.isSafeInteger(error.code) ? (error.code as number) : -32603
  return {
    // -32002 (resource not found) is -32602 on the wire.
    code: code === -32002 ? -32602 : code,
    message: error.message ?? 'Internal error',
    ...(error.data !== undefined ? { data: error.data } : {}),
  }
}

/** The JSON-RPC answer to request `id`, members in the SDK's order (a result, or an error). */
export function answerMessage(id: Id, answer: ModernAnswer): Message {
  return answer.error
    ? { jsonrpc: '2.0', id, error: encodedError(answer.error) }
    : { result: answer.result, jsonrpc: '2.0', id }
}

/** A 2025-era call's answer: its result as the SDK's tools/call wrapper passes it, or its error. */
export function legacyAnswer(call: Promise<Message>, codec: () => ResultCodec): Promise<ModernAnswer> {
  return call.then(
    (result) => checkedCallResult(codec(), result, false),
    (error: CallError) => ({ error: error ?? {} }),
  )
}
