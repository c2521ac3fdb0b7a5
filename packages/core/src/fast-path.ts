import type { McpServer } from '@modelcontextprotocol/server'
import {
  answerMessage,
  CANCEL_PARAMS,
  type CallError,
  type CallParams,
  callParams,
  checkedCallResult,
  ENVELOPE_KEYS,
  encodedError,
  type Id,
  isId,
  isRecord,
  LEVEL_PARAMS,
  type Message,
  MODERN_CANCEL_PARAMS,
  type ModernAnswer,
  ModernCalls,
  membersWithin,
  NO_ENVELOPE,
  NO_MEMBERS,
  NOTIFICATION_MEMBERS,
  REQUEST_MEMBERS,
  type RequestHandler,
  type ResultCodec,
} from './fast-call.js'
import {
  type CallingContext,
  type CoreCallTool,
  coreCallToolOf,
  setRehearser,
  type WarmCall,
} from './tool-call.js'

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

/**
 * How many times the spec's warm call is rehearsed here (see `#rehearse`). V8 gives a function
 * feedback for its inline caches only after its first runs, and baseline code some runs later:
 * a client's first call should find the code it takes past both. On postgres, a first call after
 * 1, 8, 20 and 40 rehearsals cost about the same; 8 is where it levelled off.
 */
export const REHEARSALS = 8

/** The environment variable that turns the fast path off (`0`). */
export const FAST_PATH_ENV = 'KEEL_FAST_PATH'

/** Whether the fast path is on in this environment (default: on). */
export function fastPathEnabled(env: NodeJS.ProcessEnv): boolean {
  return env[FAST_PATH_ENV] !== '0'
}

/** A call served here, until it is answered or cancelled. */
interface Served {
  stop?: (reason: unknown) => void
  cancelled: boolean
  reason?: unknown
}

/** What the fast path uses of a 2026-07-28 instance: its calls, and the revision it was pinned to. */
interface Modern {
  calls: ModernCalls
  revision: string
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
    setRehearser(mcp, (warm) => this.#rehearse(callTool, warm))
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
    internals: { _onrequest?: (request: { method?: unknown }, extra: unknown) => void },
    callTool: CoreCallTool,
  ): boolean {
    const onrequest = internals._onrequest
    const calls = ModernCalls.of(server, callTool)
    if (!calls || typeof onrequest !== 'function') return false
    const modern: Modern = { calls, revision: '' }
    this.#modern = modern
    // The entry sets the instance's revision after making it, and delivers it a request other than
    // `server/discover` only once it has pinned it for the connection.
    internals._onrequest = (request, extra) => {
      if (!this.#live && request.method !== 'server/discover' && this.#callTool === callTool) {
        const revision = server.getNegotiatedProtocolVersion()
        if (typeof revision === 'string' && typeof calls.codec().checkInboundEnvelope === 'function') {
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
    if (!call || meta === undefined) return undefined
    const lifted = modern.calls.lift(meta, modern.revision)
    if (!lifted) return undefined
    return () => this.#callModern(id, call, modern.calls, lifted.envelope, lifted.rest)
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

  /** Registers a call served here; `settle` answers it unless it was cancelled. */
  #serve(id: Id): {
    settle: (answer: ModernAnswer) => void
    onStop: (stop: (reason: unknown) => void) => void
  } {
    const served: Served = { cancelled: false }
    this.#served.set(id, served)
    return {
      settle: (answer) => {
        if (this.#served.get(id) === served) this.#served.delete(id)
        if (served.cancelled) return
        this.#post(answerMessage(id, answer))
      },
      onStop: (stop) => {
        served.stop = stop
        if (served.cancelled) stop(served.reason)
      },
    }
  }

  /**
   * Runs `warm` {@link REHEARSALS} times as a client's `tools/call` is served here: the request's
   * checks, core's handler, the era's result check and the answer's encoding, with no answer
   * written. A warm call run through the call pipeline alone left a client's first call running
   * this door's code and core's handler for the first time: on postgres that first call cost 1.56×
   * a warm call after the same pause, and 1.32× once rehearsed here (docs/performance.md). Not
   * observed (no metrics, audit line or rate budget): no client made these calls. Stops early when
   * the connection goes or a rehearsal's result is an error (an unreachable database: the first
   * call does the work then). False when this door no longer serves the instance.
   */
  async #rehearse(callTool: CoreCallTool, warm: WarmCall): Promise<boolean> {
    if (this.#callTool !== callTool) return false
    for (let round = 0; round < REHEARSALS && this.#callTool === callTool; round++) {
      const modern = this.#modern !== undefined
      const params = { name: warm.tool, arguments: warm.arguments }
      const call = callParams(params, modern ? ENVELOPE_KEYS : NO_ENVELOPE)
      if (!call) return round > 0
      const answer = await new Promise<ModernAnswer>((settle) => {
        // A 2025-era call takes #call's way whole; a 2026-07-28 one needs its client's envelope for
        // the SDK's seam, so it is rehearsed from core's handler on, with its era's result check.
        if (!modern) return this.#call(round, call, { settle, onStop: ignoreStop })
        const mcpReq = { id: round, notify: quiet, log: quiet }
        callTool(call, { mcpReq, rehearsal: true }, ignoreStop).then(
          (result) => settle(checkedCallResult((this.#codec as () => ResultCodec)(), result, true)),
          (error: CallError) => settle({ error: error ?? {} }),
        )
      })
      JSON.stringify(answerMessage(round, answer))
      if (answer.error || answer.result?.isError === true) break
    }
    return true
  }

  /** Serves a 2025-era call here; a rehearsal's answer goes to its `settle`, not to the client. */
  #call(id: Id, params: CallParams, rehearsal?: Rehearsal): void {
    const callTool = this.#callTool as CoreCallTool
    const { settle, onStop } = rehearsal ?? this.#serve(id)
    const mcpReq: CallingContext['mcpReq'] = rehearsal
      ? { id, notify: quiet, log: quiet }
      : { id, notify: this.#notify, log: this.#log }
    if (params._meta !== undefined) mcpReq._meta = params._meta
    // One reaction for both outcomes: no `finally` promise and closure per call.
    callTool(params, rehearsal ? { mcpReq, rehearsal: true } : { mcpReq }, onStop).then(
      (result) => settle(checkedCallResult((this.#codec as () => ResultCodec)(), result, false)),
      (error: CallError) => settle({ error: error ?? {} }),
    )
  }

  #callModern(
    id: Id,
    params: CallParams,
    calls: ModernCalls,
    envelope: Message,
    rest: Message | undefined,
  ): void {
    const { settle, onStop } = this.#serve(id)
    const log = (level: string, data: unknown, logger?: string) =>
      this.#logModern(envelope, level, data, logger)
    void calls.call(id, params, envelope, rest, { notify: this.#notifyModern, log }, onStop).then(settle)
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

  #answer(id: Id, result: Message): void {
    this.#post({ result, jsonrpc: '2.0', id })
  }

  #answerError(id: Id, error: CallError): void {
    this.#post({ jsonrpc: '2.0', id, error: encodedError(error) })
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
      ? this.#modern.calls.server.notification(notification as never)
      : Promise.reject(new Error('Not connected'))

  /** As the SDK logs for a 2026-07-28 request: only at or above the level its envelope opts in to. */
  #logModern(envelope: Message, level: string, data: unknown, logger?: string): Promise<void> {
    if (!this.#modern?.calls.logs(envelope, level)) return Promise.resolve()
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

/** A rehearsal's notifications and log messages: sent nowhere. */
const quiet = (): Promise<void> => Promise.resolve()

/** A rehearsal is stopped by the server's shutdown signal only: no client can cancel it. */
const ignoreStop = (): void => {}

/** Where a rehearsed call's answer goes, in place of the client (see `#rehearse`). */
interface Rehearsal {
  settle: (answer: ModernAnswer) => void
  onStop: (stop: (reason: unknown) => void) => void
}
