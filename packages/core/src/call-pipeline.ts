import { inputRequired } from '@modelcontextprotocol/server'
import { InputNeeded, requestStateCodec } from './client-access.js'
import { cancelDeadline, type Expiring, setDeadline } from './deadline.js'
import type {
  AnyTool,
  ClientAccess,
  ContentBlock,
  HandleBinding,
  RequestAuth,
  ToolContext,
} from './define.js'
import { errorReference, formatToolError, isAbortError, ToolError } from './errors.js'
import { bindHandle, settleHandle } from './handles.js'
import { type InstanceParts, mapError, type Runtime } from './instance.js'
import { truncateUtf8 } from './limits.js'
import {
  type Logger,
  type LogRecord,
  logData,
  type McpLogLevel,
  mcpLevelAtLeast,
  toMcpLevel,
} from './logger.js'
import { type Admission, type CallObservation, observer } from './observe/hooks.js'
import { redactor } from './redact.js'
import { describeIssues, type ToolPlan } from './tool-schema.js'

// A validated tool call from its start to its result: what stops it (cancellation, timeout,
// shutdown), what the tool gets, the output checks, error mapping and the per-call log line, and
// the operations hooks around it. How a call arrives and is validated is tool-call.ts's part (see
// docs/architecture.md, "A tool call, from the wire to the tool and back").

/** Hard ceiling on the text a single result may carry: below the official client's 10 MiB message limit. */
export const RESULT_TEXT_CEILING_BYTES = 8 * 1024 * 1024

function internalResult(runtime: Runtime<unknown, unknown>, tool: string, error: unknown) {
  const ref = errorReference()
  runtime.logger.error(`tool ${tool} failed unexpectedly (ref ${ref})`, { tool, ref, error })
  return new ToolError(
    'internal',
    `${tool} failed unexpectedly (ref ${ref}); the details are in the server log`,
  )
}

/**
 * Running calls to stop when a process-wide shutdown signal aborts: one listener on each such
 * signal for the life of the process, instead of one added and removed per call (EventTarget
 * listeners are a measurable share of a cheap call).
 */
const stopOnShutdown = new WeakMap<AbortSignal, Set<(reason: unknown) => void>>()

function onShutdown(signal: AbortSignal, stop: (reason: unknown) => void): Set<(reason: unknown) => void> {
  let running = stopOnShutdown.get(signal)
  if (!running) {
    const calls = new Set<(reason: unknown) => void>()
    signal.addEventListener(
      'abort',
      () => {
        for (const call of [...calls]) call(signal.reason)
      },
      { once: true },
    )
    stopOnShutdown.set(signal, calls)
    running = calls
  }
  running.add(stop)
  // The set itself, not a closure to leave it: one object fewer per call.
  return running
}

class TimeoutError extends Error {
  override name = 'TimeoutError'
}

export function capContent(content: ContentBlock[]): ContentBlock[] {
  let budget = RESULT_TEXT_CEILING_BYTES
  // The common case, nothing over the ceiling, returns the blocks as they are, with no copy.
  let capped: ContentBlock[] | undefined
  for (const [index, block] of content.entries()) {
    if (block.type !== 'text') continue
    const bytes = Buffer.byteLength(block.text)
    if (bytes <= budget) {
      budget -= bytes
      continue
    }
    const { text } = truncateUtf8(block.text, Math.max(0, budget))
    budget -= Buffer.byteLength(text)
    capped ??= content.slice()
    capped[index] = {
      type: 'text',
      text: `${text}\n[truncated: the result exceeded the server's output ceiling]`,
    }
  }
  return capped ?? content
}

/** A tools/call whose tool exists and whose arguments passed the schema. */
export interface ValidatedCall {
  tool: AnyTool
  plan: ToolPlan
  /** The arguments as the schema parsed them (defaults filled in, transforms applied). */
  args: unknown
  /** The arguments as the client sent them (they passed the schema): what the audit log records. */
  sent?: unknown
}

/**
 * Where one call's side output goes and what it may reach: a plain call uses its own request's
 * stream; a task's call outlives its request and uses the connection.
 */
export interface CallChannel<D> {
  /** Aborted when the caller gives up (the request is cancelled, or the task is). */
  signal?: AbortSignal
  /**
   * Instead of a signal, a front door that tracks its own requests (core's stdio fast path) is
   * handed the call's stop function: no signal and listener per call.
   */
  onStop?: (stop: (reason: unknown) => void) => void
  requestId: string | number
  session: ToolContext<D>['session']
  auth: ToolContext<D>['auth']
  client: ClientAccess
  progressToken: string | number | undefined
  /** Extra `_meta` for every notification of this call (a task's related-task key). */
  meta?: Record<string, unknown>
  /**
   * The lowest level forwarded to the caller; `none` forwards nothing; unset means warnings and
   * errors. Read when a record is logged, so a `logging/setLevel` that arrives first counts.
   */
  readonly logThreshold: McpLogLevel | 'none' | undefined
  /** How the call arrived, for the operations hooks (metrics, audit, rate limits). */
  transport: 'stdio' | 'http' | 'memory'
  era: 'modern' | 'legacy'
  notify(notification: { method: string; params: Record<string, unknown> }): Promise<void>
  log(level: McpLogLevel, data: unknown, logger: string | undefined): Promise<void>
}

/**
 * The tools one connection lists: the configured ones, then those it enabled (by name), less
 * those the server hides now.
 */
export function listedTools<D, C>(
  runtime: Runtime<D, C>,
  enabled: ReadonlySet<string>,
  auth: RequestAuth | undefined,
): AnyTool<D>[] {
  const hidden = runtime.spec.hiddenTools?.(runtime.deps, auth)
  const shown = (tools: AnyTool<D>[]) =>
    hidden?.size ? tools.filter((tool) => !hidden.has(tool.name)) : tools
  if (!enabled.size || !runtime.available) return shown(runtime.tools)
  const configured = new Set(runtime.tools.map((tool) => tool.name))
  return shown([
    ...runtime.tools,
    ...runtime.available.filter((tool) => enabled.has(tool.name) && !configured.has(tool.name)),
  ])
}

/**
 * Runs one validated call to its result, observed (metrics, audit, rate limits, a span) when an
 * operations flag is set. Never throws.
 */
export function executeCall<D, C>(
  parts: InstanceParts<D, C>,
  call: ValidatedCall,
  channel: CallChannel<D>,
): Promise<Record<string, unknown>> {
  const watching = observer()
  return watching ? observedCall(parts, call, channel, watching) : runCall(parts, call, channel)
}

function observedCall<D, C>(
  parts: InstanceParts<D, C>,
  call: ValidatedCall,
  channel: CallChannel<D>,
  watching: NonNullable<ReturnType<typeof observer>>,
): Promise<Record<string, unknown>> {
  const { tool } = call
  const readOnly = tool.annotations.readOnlyHint === true
  const subject = channel.auth?.subject
  const args = (call.args ?? {}) as Record<string, unknown>
  // Sizes: the arguments are kept for the audit line, which serializes them when it is written (the
  // result's size comes from the bytes the transport writes where it can), and argument values a
  // lookup: both only when the audit log records them.
  const sizes = watching.sizes
  const observation: CallObservation = watching.call({
    tool: tool.name,
    readOnly,
    transport: channel.transport,
    session: channel.session.id,
    subject,
    era: channel.era,
    sent: sizes ? (call.sent ?? args) : undefined,
    safeArguments: sizes
      ? valuesOf(tool.auditArguments ?? parts.runtime.spec.auditArguments, call.sent ?? args)
      : undefined,
  })
  // Over HTTP the front door has charged the call already (and answered 429 when over).
  if (channel.transport !== 'http' && watching.admit) {
    // A budget held in process answers at once: no await (and no promise) on the way.
    const decision = watching.admit(rateKeyOf(channel, subject), readOnly)
    if (decision instanceof Promise)
      return decision.then((admission) =>
        admission.allowed
          ? observedRun(parts, call, channel, observation, sizes)
          : refused(admission, observation, sizes),
      )
    if (!decision.allowed) return Promise.resolve(refused(decision, observation, sizes))
  }
  return observedRun(parts, call, channel, observation, sizes)
}

/** The arguments of `names` a call was given, for its audit line; undefined when it was given none. */
function valuesOf(names: readonly string[] | undefined, sent: unknown): Record<string, unknown> | undefined {
  if (!names || typeof sent !== 'object' || sent === null) return undefined
  const args = sent as Record<string, unknown>
  let values: Record<string, unknown> | undefined
  for (const name of names) {
    if (!Object.hasOwn(args, name) || args[name] === undefined) continue
    values ??= {}
    values[name] = args[name]
  }
  return values
}

/** A call the rate limit holds back: a rate_limited tool error naming the wait. */
function refused(
  admission: Admission,
  observation: CallObservation,
  sizes: boolean,
): Record<string, unknown> {
  const seconds = Math.max(1, Math.ceil(admission.retryAfterMs / 1000))
  const error = new ToolError(
    'rate_limited',
    `Too many calls: the ${admission.budget ?? 'call'} rate limit allows more in ${seconds} s`,
    { hint: `Wait ${seconds} s before calling again.` },
  )
  const text = formatToolError(error)
  observation.end({
    outcome: 'rate_limited',
    errorKind: 'rate_limited',
    resultBytes: sizes ? Buffer.byteLength(text) : 0,
  })
  return { content: [{ type: 'text', text }], isError: true }
}

/** Runs an admitted call in its observation, and ends the observation with the call's outcome. */
function observedRun<D, C>(
  parts: InstanceParts<D, C>,
  call: ValidatedCall,
  channel: CallChannel<D>,
  observation: CallObservation,
  sizes: boolean,
): Promise<Record<string, unknown>> {
  const report = new OutcomeReport()
  return observation
    .run(() => runCall(parts, call, channel, report))
    .then((result) => {
      const kind = report.outcome.startsWith('error:') ? report.outcome.slice(6) : undefined
      observation.end({
        outcome: kind ? (kind === 'timeout' || kind === 'cancelled' ? kind : 'error') : report.outcome,
        ...(kind ? { errorKind: kind } : {}),
        ...(report.handle ? { handle: report.handle } : {}),
        // Measured from the bytes the transport writes for it (stdio), not serialized twice.
        ...(sizes ? { result } : { resultBytes: 0 }),
      })
      return result
    })
}

/** Where {@link runCall} reports how a call ended, for the operations hooks. */
class OutcomeReport {
  outcome = 'ok'
  /** The state handle the call was bound to, carried or minted (hashed before it is recorded). */
  handle: string | undefined = undefined
}

/**
 * The client whose rate budget a call off HTTP pays from: the OAuth subject, else the connection's
 * session (one stdio process is one client), else `stdio`. docs/observability.md, "Rate limits",
 * says why a state handle is not a key.
 */
function rateKeyOf<D>(channel: CallChannel<D>, subject: string | undefined): string {
  return subject ?? channel.session.id ?? 'stdio'
}

/**
 * What can stop one call: the caller's cancellation, its timeout and a process-wide shutdown. Each
 * aborts the call's own controller and settles the promise the tool's run is raced against, so a
 * tool that ignores its signal still yields a prompt result.
 */
class CallStop implements Expiring {
  /** Made when the tool first reads its signal: a call that never does needs none. */
  #controller: AbortController | undefined
  #stopped = false
  #reason: unknown
  #reject: ((reason: unknown) => void) | undefined
  readonly #name: string
  readonly #timeoutMs: number
  readonly #shutdown: Set<(reason: unknown) => void>
  readonly #caller: AbortSignal | undefined

  constructor(
    runtime: Runtime<unknown, unknown>,
    name: string,
    timeoutMs: number,
    channel: CallChannel<unknown>,
  ) {
    this.#shutdown = onShutdown(runtime.shutdownSignal, this.stop)
    this.#caller = channel.signal
    if (channel.signal) {
      channel.signal.addEventListener('abort', this.#onCancel, { once: true })
      if (channel.signal.aborted) this.#onCancel()
    }
    channel.onStop?.(this.stop)
    this.#name = name
    this.#timeoutMs = timeoutMs
    // One shared timer per duration, not a timer and closure per call (deadline.ts).
    setDeadline(this, timeoutMs)
  }

  /** The signal the tool gets: aborted with the first reason the call was stopped for. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      if (this.#stopped) this.#controller.abort(this.#reason)
    }
    return this.#controller.signal
  }

  get stopped(): boolean {
    return this.#stopped
  }

  get reason(): unknown {
    return this.#reason
  }

  readonly stop = (reason: unknown): void => {
    if (!this.#stopped) {
      this.#stopped = true
      // As AbortController does: no reason is an AbortError.
      this.#reason = reason ?? new DOMException('This operation was aborted', 'AbortError')
      this.#controller?.abort(this.#reason)
    }
    this.#reject?.(this.#reason)
  }

  readonly #onCancel = () => this.stop(this.#caller?.reason)

  /**
   * Runs the tool. A result it returns at once is taken as it is; a promise is raced against the
   * stop. A call stopped before it starts does not run.
   */
  run<T>(
    tool: { run(args: never, context: never): T | PromiseLike<T> },
    args: unknown,
    context: unknown,
  ): T | Promise<T> {
    if (this.#stopped) throw this.#reason
    // The tool and its arguments, not a closure over them: one object fewer per call.
    const output = tool.run(args as never, context as never)
    if (!isThenable(output)) return output
    // The race of the tool's promise and the stop, as one promise (not a second one and a
    // Promise.race): whichever settles it first wins.
    return new Promise<T>((resolve, reject) => {
      this.#reject = reject
      output.then(resolve, reject)
      // Stopped while the tool started (rare): as Promise.race did, an output already settled
      // still comes first.
      if (this.#stopped) void Promise.resolve().then(() => reject(this.#reason))
    })
  }

  /** The call's timeout passed. */
  expire(): void {
    this.stop(new TimeoutError(`${this.#name} did not finish within ${this.#timeoutMs} ms`))
  }

  release(): void {
    cancelDeadline(this, this.#timeoutMs)
    this.#caller?.removeEventListener('abort', this.#onCancel)
    this.#shutdown.delete(this.stop)
  }
}

const isThenable = <T>(value: T | PromiseLike<T>): value is PromiseLike<T> =>
  value !== null &&
  (typeof value === 'object' || typeof value === 'function') &&
  typeof (value as { then?: unknown }).then === 'function'

/**
 * The call's logger: only the levels this caller asked for are forwarded (warnings and errors by
 * default); records below that and below the stderr level are never built.
 */
function callLogger<D>(logger: Logger, name: string, channel: CallChannel<D>): Logger {
  return logger.childWithForwarder(
    name,
    { tool: name },
    (record: LogRecord) => {
      void channel.log(toMcpLevel(record.level), logData(record), record.logger).catch(() => {})
    },
    (level) =>
      channel.logThreshold !== 'none' &&
      mcpLevelAtLeast(toMcpLevel(level), channel.logThreshold ?? 'warning'),
  )
}

/**
 * What a tool's run gets. Its signal, logger and client are made on first use (most calls never
 * log nor ask for the client, and many never read the signal). They are own enumerable accessors,
 * as an object literal's getters were, so a wrapper that spreads the context (`{ ...context,
 * deps }`) still gets them; but the accessor functions are shared by every call's context, made
 * once (getters in an object literal are new functions, and a slow literal, on every call).
 */
class CallContext<D, C> implements ToolContext<D> {
  readonly deps!: D
  readonly tool!: string
  readonly requestId!: string | number
  readonly session!: ToolContext<D>['session']
  readonly auth!: ToolContext<D>['auth']
  readonly progress!: ToolContext<D>['progress']
  readonly enableTools!: ToolContext<D>['enableTools']
  declare handle?: HandleBinding
  declare readonly signal: AbortSignal
  declare readonly log: Logger
  declare readonly client: ClientAccess
  readonly #parts: InstanceParts<D, C>
  readonly #channel: CallChannel<D>
  readonly #name: string
  readonly #stop: CallStop
  #log: Logger | undefined
  #lastProgress = Number.NEGATIVE_INFINITY

  static readonly #accessors: PropertyDescriptorMap = {
    signal: {
      get(this: CallContext<unknown, unknown>) {
        return this.#stop.signal
      },
      enumerable: true,
      configurable: true,
    },
    log: {
      get(this: CallContext<unknown, unknown>) {
        this.#log ??= callLogger(this.#parts.runtime.logger, this.#name, this.#channel)
        return this.#log
      },
      enumerable: true,
      configurable: true,
    },
    client: {
      get(this: CallContext<unknown, unknown>) {
        return this.#channel.client
      },
      enumerable: true,
      configurable: true,
    },
  }

  constructor(parts: InstanceParts<D, C>, channel: CallChannel<D>, name: string, stop: CallStop) {
    this.#parts = parts
    this.#channel = channel
    this.#name = name
    this.#stop = stop
    Object.defineProperties(this, CallContext.#accessors)
    this.deps = parts.runtime.deps
    this.tool = name
    this.requestId = channel.requestId
    this.session = channel.session
    this.auth = channel.auth
    // Own functions, not methods: tools destructure them (`{ progress }`).
    this.enableTools = (names) => this.#enableTools(names)
    this.progress = (progress, total, message) => this.#progress(progress, total, message)
  }

  async #enableTools(names: readonly string[]): Promise<{ enabled: string[]; lasting: boolean }> {
    const { runtime, mcp } = this.#parts
    const channel = this.#channel
    const listed = new Set(
      listedTools(runtime, this.#parts.state.enabledTools, channel.auth).map((tool) => tool.name),
    )
    const enabled = (runtime.available ?? runtime.tools)
      .filter((tool) => names.includes(tool.name) && !listed.has(tool.name))
      .map((tool) => tool.name)
    // A request served on its own has no connection to remember the change for.
    if (!runtime.spec.dynamicTools || channel.session.id === undefined) return { enabled, lasting: false }
    for (const tool of enabled) this.#parts.state.enabledTools.add(tool)
    if (enabled.length && mcp.isConnected()) await mcp.sendToolListChanged()
    return { enabled, lasting: true }
  }

  async #progress(progress: number, total?: number, message?: string): Promise<void> {
    // Progress must increase for one token; late or repeated values are dropped, not sent.
    const channel = this.#channel
    const progressToken = channel.progressToken
    if (progressToken === undefined || progress <= this.#lastProgress || this.#stop.stopped) return
    this.#lastProgress = progress
    await channel
      .notify({
        method: 'notifications/progress',
        params: {
          progressToken,
          progress,
          ...(total !== undefined ? { total } : {}),
          ...(message ? { message } : {}),
          ...(channel.meta ? { _meta: channel.meta } : {}),
        },
      })
      .catch(() => {})
  }
}

/** A tool's output as a tools/call result: the output schema checked, text capped, projected. */
function successResult<D, C>(
  parts: InstanceParts<D, C>,
  plan: ToolPlan,
  name: string,
  output: { data?: unknown; text?: string; content?: ContentBlock[] },
): Record<string, unknown> {
  let structured: Record<string, unknown> | undefined
  if (plan.output) {
    const checked = plan.output.safeParse(output.data)
    if (!checked.success) {
      throw new Error(
        `tool ${name} returned data that does not match its output schema: ${describeIssues(checked.error).text}`,
      )
    }
    structured = checked.data as Record<string, unknown>
  }
  const content: ContentBlock[] = output.content ?? [
    { type: 'text', text: output.text ?? (structured !== undefined ? JSON.stringify(structured) : '') },
  ]
  const result: Record<string, unknown> = { content: capContent(content) }
  if (structured !== undefined) result.structuredContent = structured
  return parts.mcp.server.projectCallToolResult(result as never, plan.outputJson as never) as never
}

/** The timeout hint of a tool that only reads: calling it again changes nothing. */
const TIMEOUT_HINT = 'Narrow the request (smaller range, fewer rows, a more specific pattern) and try again.'

/**
 * The timeout hint of a tool that may change something: it was stopped while it ran, and what it
 * had sent (a message, a write, a click) may have taken effect, so "try again" could do it twice.
 */
const WRITE_TIMEOUT_HINT =
  'This tool makes changes, and what it started may have taken effect before it was stopped: ' +
  'look (read what it changes) before calling it again.'

/** The tool error a failed call answers with: its timeout or cancellation, or the mapped error. */
function toolErrorOf(
  runtime: Runtime<unknown, unknown>,
  tool: { annotations: { readOnlyHint?: boolean | undefined } },
  name: string,
  error: unknown,
  stop: CallStop,
): ToolError {
  if (stop.stopped && (isAbortError(error) || error === stop.reason)) {
    const reason = stop.reason
    const readOnly = tool.annotations.readOnlyHint === true
    return reason instanceof TimeoutError
      ? new ToolError('timeout', reason.message, {
          hint: readOnly ? TIMEOUT_HINT : WRITE_TIMEOUT_HINT,
          ...(readOnly ? {} : { details: { unconfirmed: true } }),
        })
      : new ToolError(
          'cancelled',
          runtime.shutdownSignal.aborted ? 'The server is shutting down' : 'The call was cancelled',
        )
  }
  const toolError = mapError(runtime, error) ?? internalResult(runtime, name, error)
  if (toolError.cause !== undefined && toolError.kind !== 'internal') {
    runtime.logger.debug(`tool ${name} error cause`, { tool: name, error: toolError.cause })
  }
  return toolError
}

function failureResult(toolError: ToolError): Record<string, unknown> {
  return {
    content: [{ type: 'text', text: formatToolError(toolError) }],
    isError: true,
    ...(toolError.details
      ? {
          _meta: {
            'keel/error': { kind: toolError.kind, ...(redactor.redactValue(toolError.details) as object) },
          },
        }
      : {}),
  }
}

/**
 * Runs one validated call to its result: signal (caller ∪ timeout ∪ shutdown), progress, log
 * forwarding, output schema check, error mapping and the per-call log line. Never throws.
 */
export async function runCall<D, C>(
  parts: InstanceParts<D, C>,
  call: ValidatedCall,
  channel: CallChannel<D>,
  report?: OutcomeReport,
): Promise<Record<string, unknown>> {
  const runtime = parts.runtime as Runtime<unknown, unknown>
  const { tool, plan } = call
  const name = tool.name
  const started = performance.now()
  const stop = new CallStop(
    runtime,
    name,
    tool.timeoutMs ?? runtime.config.toolTimeoutMs,
    channel as CallChannel<unknown>,
  )
  const context = new CallContext(parts, channel, name, stop)
  let outcome = 'ok'
  // A stateful tool's call is bound to its state first (handles.ts); a bad handle is a tool error.
  let binding: HandleBinding | undefined
  const handleSpec = tool.handle ? runtime.spec.handles?.[tool.handle.kind] : undefined
  try {
    if (tool.handle) {
      binding = bindHandle(runtime, tool, {
        args: call.args as Record<string, unknown>,
        session: channel.session,
        subject: channel.auth?.subject,
      })
      if (binding) context.handle = binding
    }
    const output = await stop.run(tool, call.args, context)
    const result = successResult(parts, plan, name, output)
    return binding ? ((await settleHandle(binding, result as never, handleSpec as never)) as never) : result
  } catch (error) {
    if (error instanceof InputNeeded) {
      outcome = 'input_required'
      // The tool runs again from the start on the client's retry: state it opened now is not kept.
      binding?.release()
      if (binding?.minted) await binding.close()
      const requestState = await requestStateCodec().mint({ answers: error.answers })
      return inputRequired({ inputRequests: error.requests, requestState }) as never
    }
    const toolError = toolErrorOf(runtime, tool, name, error, stop)
    outcome = `error:${toolError.kind}`
    return settleHandle(binding, failureResult(toolError), handleSpec as never)
  } finally {
    stop.release()
    if (report) {
      report.outcome = outcome
      report.handle = binding?.token
    }
    // The fields are built only when someone takes the line (off at the default level).
    if (runtime.logger.wants('debug'))
      runtime.logger.debug('tool call', {
        tool: name,
        durationMs: Math.round((performance.now() - started) * 100) / 100,
        outcome,
      })
  }
}
