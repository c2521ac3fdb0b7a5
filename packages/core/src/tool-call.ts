import {
  inputRequired,
  LOG_LEVEL_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
} from '@modelcontextprotocol/server'
import { assertWriteScope, requestAuthOf } from './auth/context.js'
import { InputNeeded, modernClientAccess, requestStateCodec, servesModernEra } from './client-access.js'
import type { AnyTool, ClientAccess, ContentBlock, HandleBinding, ToolContext } from './define.js'
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
import { type CallObservation, observer } from './observe/hooks.js'
import { redactor } from './redact.js'
import { RELATED_TASK_META_KEY, type TaskControl, type TaskRegistry } from './tasks.js'
import { describeIssues, planFor, type ToolPlan } from './tool-schema.js'

// The tool-call pipeline: tools/list, and tools/call from arguments to result (see
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

function onShutdown(signal: AbortSignal, stop: (reason: unknown) => void): () => void {
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
  return () => running.delete(stop)
}

class TimeoutError extends Error {
  override name = 'TimeoutError'
}

export function capContent(content: ContentBlock[]): ContentBlock[] {
  let budget = RESULT_TEXT_CEILING_BYTES
  return content.map((block) => {
    if (block.type !== 'text') return block
    const { text, truncated } = truncateUtf8(block.text, Math.max(0, budget))
    budget -= Buffer.byteLength(text)
    return truncated
      ? { type: 'text', text: `${text}\n[truncated: the result exceeded the server's output ceiling]` }
      : block
  })
}

/** A tools/call whose tool exists and whose arguments passed the schema. */
interface ValidatedCall {
  tool: AnyTool
  plan: ToolPlan
  args: unknown
}

/**
 * Where one call's side output goes and what it may reach: a plain call uses its own request's
 * stream; a task's call outlives its request and uses the connection.
 */
interface CallChannel<D> {
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
export function listedTools<D, C>(runtime: Runtime<D, C>, enabled: ReadonlySet<string>): AnyTool<D>[] {
  const hidden = runtime.spec.hiddenTools?.(runtime.deps)
  const shown = (tools: AnyTool<D>[]) =>
    hidden?.size ? tools.filter((tool) => !hidden.has(tool.name)) : tools
  if (!enabled.size || !runtime.available) return shown(runtime.tools)
  const configured = new Set(runtime.tools.map((tool) => tool.name))
  return shown([
    ...runtime.tools,
    ...runtime.available.filter((tool) => enabled.has(tool.name) && !configured.has(tool.name)),
  ])
}

function unknownTool(tools: AnyTool[], name: string): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `Unknown tool "${name}". Available tools: ${tools.map((candidate) => candidate.name).join(', ')}`,
  )
}

/** Arguments that do not match a tool's input schema: which fields, and what was expected. */
class InvalidArguments extends Error {
  constructor(
    readonly tool: string,
    readonly text: string,
    readonly issues: Array<{ path: string; message: string }>,
  ) {
    super(`Invalid arguments for tool ${tool}: ${text}`)
  }

  /**
   * The tool result the caller gets (SEP-1303, MCP 2025-11-25 and later): a validation failure is
   * a tool execution error the model can read and correct, not a protocol error a host may hide.
   */
  toResult(): Record<string, unknown> {
    const error = new ToolError('invalid_argument', this.message, {
      hint: `Call ${this.tool} again with arguments that match its input schema (see tools/list).`,
    })
    return {
      content: [{ type: 'text', text: formatToolError(error) }],
      isError: true,
      _meta: { 'keel/error': { kind: 'invalid_argument', issues: this.issues } },
    }
  }
}

/**
 * The tool and its parsed arguments. An unknown tool is a JSON-RPC error (-32602: the request
 * names nothing that exists); arguments that fail the schema throw {@link InvalidArguments}.
 */
function validateCall(tools: AnyTool[], name: string, raw: unknown): ValidatedCall {
  const tool = tools.find((candidate) => candidate.name === name)
  if (!tool) throw unknownTool(tools, name)
  const plan = planFor(tool)
  const parsed = plan.schema.safeParse(raw ?? {})
  if (!parsed.success) {
    const { text, issues } = describeIssues(parsed.error)
    throw new InvalidArguments(name, text, issues)
  }
  return { tool, plan, args: parsed.data }
}

/**
 * Runs one validated call to its result, observed (metrics, audit, rate limits, a span) when an
 * operations flag is set. Never throws.
 */
function executeCall<D, C>(
  parts: InstanceParts<D, C>,
  call: ValidatedCall,
  channel: CallChannel<D>,
): Promise<Record<string, unknown>> {
  const watching = observer()
  return watching ? observedCall(parts, call, channel, watching) : runCall(parts, call, channel)
}

async function observedCall<D, C>(
  parts: InstanceParts<D, C>,
  call: ValidatedCall,
  channel: CallChannel<D>,
  watching: NonNullable<ReturnType<typeof observer>>,
): Promise<Record<string, unknown>> {
  const { tool } = call
  const readOnly = tool.annotations.readOnlyHint === true
  const subject = channel.auth?.subject
  const args = (call.args ?? {}) as Record<string, unknown>
  const safe = tool.auditArguments?.filter((name) => args[name] !== undefined)
  const observation: CallObservation = watching.call({
    tool: tool.name,
    readOnly,
    transport: channel.transport,
    session: channel.session.id,
    subject,
    era: channel.era,
    argumentsBytes: Buffer.byteLength(JSON.stringify(args)),
    safeArguments: safe?.length ? Object.fromEntries(safe.map((name) => [name, args[name]])) : undefined,
  })
  // Over HTTP the front door has charged the call already (and answered 429 when over).
  if (channel.transport !== 'http' && watching.admit) {
    const admission = await watching.admit(subject ?? channel.session.id ?? 'stdio', readOnly)
    if (!admission.allowed) {
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
        resultBytes: Buffer.byteLength(text),
      })
      return { content: [{ type: 'text', text }], isError: true }
    }
  }
  let outcome = 'ok'
  const result = await observation.run(() =>
    runCall(parts, call, channel, (reported) => {
      outcome = reported
    }),
  )
  const kind = outcome.startsWith('error:') ? outcome.slice(6) : undefined
  observation.end({
    outcome: kind ? (kind === 'timeout' || kind === 'cancelled' ? kind : 'error') : outcome,
    ...(kind ? { errorKind: kind } : {}),
    resultBytes: Buffer.byteLength(JSON.stringify(result)),
  })
  return result
}

/**
 * What can stop one call: the caller's cancellation, its timeout and a process-wide shutdown. Each
 * aborts the call's own controller and settles the promise the tool's run is raced against, so a
 * tool that ignores its signal still yields a prompt result.
 */
class CallStop {
  readonly controller = new AbortController()
  #reject: ((reason: unknown) => void) | undefined
  readonly #timer: NodeJS.Timeout
  readonly #leaveShutdown: () => void
  readonly #caller: AbortSignal | undefined

  constructor(
    runtime: Runtime<unknown, unknown>,
    name: string,
    timeoutMs: number,
    channel: CallChannel<unknown>,
  ) {
    this.#leaveShutdown = onShutdown(runtime.shutdownSignal, this.stop)
    this.#caller = channel.signal
    if (channel.signal) {
      channel.signal.addEventListener('abort', this.#onCancel, { once: true })
      if (channel.signal.aborted) this.#onCancel()
    }
    channel.onStop?.(this.stop)
    this.#timer = setTimeout(
      () => this.stop(new TimeoutError(`${name} did not finish within ${timeoutMs} ms`)),
      timeoutMs,
    )
  }

  readonly stop = (reason: unknown): void => {
    const { signal } = this.controller
    if (!signal.aborted) this.controller.abort(reason)
    this.#reject?.(signal.reason)
  }

  readonly #onCancel = () => this.stop(this.#caller?.reason)

  /**
   * Runs the tool. A result it returns at once is taken as it is; a promise is raced against the
   * stop. A call stopped before it starts does not run.
   */
  run<T>(work: () => T | PromiseLike<T>): T | Promise<T> {
    const { signal } = this.controller
    if (signal.aborted) throw signal.reason
    const output = work()
    if (!isThenable(output)) return output
    const stopped = new Promise<never>((_, reject) => {
      this.#reject = reject
    })
    if (signal.aborted) this.#reject?.(signal.reason)
    return Promise.race([output, stopped])
  }

  release(): void {
    clearTimeout(this.#timer)
    this.#caller?.removeEventListener('abort', this.#onCancel)
    this.#leaveShutdown()
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

/** What a tool's run gets. Its logger is built on first use: most calls never log. */
function toolContextFor<D, C>(
  parts: InstanceParts<D, C>,
  channel: CallChannel<D>,
  name: string,
  signal: AbortSignal,
): ToolContext<D> & { handle?: HandleBinding } {
  const { runtime, mcp } = parts
  const progressToken = channel.progressToken
  let lastProgress = Number.NEGATIVE_INFINITY
  let log: Logger | undefined
  return {
    deps: runtime.deps,
    signal,
    get log() {
      log ??= callLogger(runtime.logger, name, channel)
      return log
    },
    client: channel.client,
    requestId: channel.requestId,
    session: channel.session,
    auth: channel.auth,
    async enableTools(names) {
      const listed = new Set(listedTools(runtime, parts.state.enabledTools).map((tool) => tool.name))
      const enabled = (runtime.available ?? runtime.tools)
        .filter((tool) => names.includes(tool.name) && !listed.has(tool.name))
        .map((tool) => tool.name)
      // A request served on its own has no connection to remember the change for.
      if (!runtime.spec.dynamicTools || channel.session.id === undefined) return { enabled, lasting: false }
      for (const tool of enabled) parts.state.enabledTools.add(tool)
      if (enabled.length && mcp.isConnected()) await mcp.sendToolListChanged()
      return { enabled, lasting: true }
    },
    async progress(progress, total, message) {
      // Progress must increase for one token; late or repeated values are dropped, not sent.
      if (progressToken === undefined || progress <= lastProgress || signal.aborted) return
      lastProgress = progress
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
    },
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

/** The tool error a failed call answers with: its timeout or cancellation, or the mapped error. */
function toolErrorOf(
  runtime: Runtime<unknown, unknown>,
  name: string,
  error: unknown,
  signal: AbortSignal,
): ToolError {
  if (signal.aborted && (isAbortError(error) || error === signal.reason)) {
    const reason = signal.reason
    return reason instanceof TimeoutError
      ? new ToolError('timeout', reason.message, {
          hint: 'Narrow the request (smaller range, fewer rows, a more specific pattern) and try again.',
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
async function runCall<D, C>(
  parts: InstanceParts<D, C>,
  call: ValidatedCall,
  channel: CallChannel<D>,
  report?: (outcome: string) => void,
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
  const { signal } = stop.controller
  const context = toolContextFor(parts, channel, name, signal)
  let outcome = 'ok'
  // A stateful tool's call is bound to its state first (handles.ts); a bad handle is a tool error.
  let binding: HandleBinding | undefined
  const handleSpec = tool.handle ? runtime.spec.handles?.[tool.handle.kind] : undefined
  try {
    binding = bindHandle(runtime, tool, {
      args: call.args as Record<string, unknown>,
      session: channel.session,
      subject: channel.auth?.subject,
    })
    if (binding) context.handle = binding
    const output = await stop.run(() => tool.run(call.args as never, context))
    const result = successResult(parts, plan, name, output)
    return (await settleHandle(binding, result as never, handleSpec as never)) as never
  } catch (error) {
    if (error instanceof InputNeeded) {
      outcome = 'input_required'
      // The tool runs again from the start on the client's retry: state it opened now is not kept.
      binding?.release()
      if (binding?.minted) await binding.close()
      const requestState = await requestStateCodec().mint({ answers: error.answers })
      return inputRequired({ inputRequests: error.requests, requestState }) as never
    }
    const toolError = toolErrorOf(runtime, name, error, signal)
    outcome = `error:${toolError.kind}`
    return settleHandle(binding, failureResult(toolError), handleSpec as never)
  } finally {
    stop.release()
    report?.(outcome)
    runtime.logger.debug('tool call', {
      tool: name,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
      outcome,
    })
  }
}

/**
 * A task's view of the client: while it waits on the client (sampling, elicitation) the task is
 * `input_required`, and the request carries the task's related-task key.
 */
function taskClientAccess(client: ClientAccess, control: TaskControl): ClientAccess {
  const related = { [RELATED_TASK_META_KEY]: { taskId: control.taskId } }
  const waiting = async <T>(ask: () => Promise<T>): Promise<T> => {
    control.setStatus('input_required', 'Waiting for the client')
    try {
      return await ask()
    } finally {
      control.setStatus('working')
    }
  }
  const withRelated = (params: unknown) => {
    const fields = params as Record<string, unknown>
    return { ...fields, _meta: { ...(fields._meta as object | undefined), ...related } } as never
  }
  return {
    get info() {
      return client.info
    },
    get capabilities() {
      return client.capabilities
    },
    roots: () => client.roots(),
    sample: (params, options) => waiting(() => client.sample(withRelated(params), options)),
    elicit: (params, options) => waiting(() => client.elicit(withRelated(params), options)),
  }
}

/** The parts of the SDK's request context a call reads. */
export interface CallRequestContext {
  sessionId?: string
  http?: { authInfo?: { token?: string; scopes?: string[] } }
  mcpReq: {
    id: string | number
    signal?: AbortSignal
    _meta?: Record<string, unknown>
    /** 2026-07-28: the reserved `_meta` keys of the request, lifted out by the SDK. */
    envelope?: Record<string, unknown>
  }
}

/** A request context that can also send a call's notifications and log messages. */
interface CallingContext extends CallRequestContext {
  mcpReq: CallRequestContext['mcpReq'] & {
    notify(notification: { method: string; params: Record<string, unknown> }): Promise<void>
    log(level: McpLogLevel, data: unknown, logger?: string): Promise<void>
  }
}

/**
 * Core's own `tools/call` handler of one instance, as the SDK calls it, for a front door that
 * serves calls itself (`fast-path.ts`): same validation, errors, pipeline and side output. With
 * `onStop`, the caller stops the call through the function it is handed instead of a signal.
 */
export type CoreCallTool = (
  params: { name: string; arguments?: Record<string, unknown> },
  ctx: CallingContext,
  onStop?: (stop: (reason: unknown) => void) => void,
) => Promise<Record<string, unknown>>

const callHandlers = new WeakMap<object, CoreCallTool>()

/** The `tools/call` handler core registered on this instance, if any. */
export function coreCallToolOf(mcp: object): CoreCallTool | undefined {
  return callHandlers.get(mcp)
}

type RawHandler = (request: { params?: unknown }, ctx: unknown) => unknown

/** Serves `tools/list` and `tools/call` on one instance (and task-augmented calls where offered). */
export function registerTools<D, C>(parts: InstanceParts<D, C>): void {
  const { runtime, mcp, state, client, sessionFor, tasks } = parts
  const server = mcp.server
  server.setRequestHandler('tools/list', () => {
    // Task support is 2025-11-25 vocabulary: listed only where this connection offers tasks.
    const withTasks = tasks !== undefined && !servesModernEra(server)
    return {
      tools: listedTools(runtime, state.enabledTools).map((tool) =>
        withTasks ? planFor(tool).listedWithTasks : planFor(tool).listed,
      ),
    } as never
  })
  const channelFor = (
    ctx: CallRequestContext,
    client: ClientAccess,
    side: Pick<CallChannel<D>, 'signal' | 'onStop' | 'meta' | 'notify' | 'log'>,
  ): CallChannel<D> => {
    const session = sessionFor(ctx.sessionId)
    return {
      ...side,
      requestId: ctx.mcpReq.id,
      session,
      transport: ctx.http ? 'http' : session.id === 'stdio' ? 'stdio' : 'memory',
      era: servesModernEra(server) ? 'modern' : 'legacy',
      auth: requestAuthOf(ctx.http?.authInfo),
      client,
      progressToken: ctx.mcpReq._meta?.progressToken as string | number | undefined,
      get logThreshold() {
        return logThresholdOf(ctx)
      },
    }
  }
  // 2026-07-28: a request opts in to log messages with its envelope's level (the SDK lifts it out
  // of `_meta`); without one it gets none. 2025: `logging/setLevel`, else warnings and errors.
  const logThresholdOf = (ctx: CallRequestContext): McpLogLevel | 'none' | undefined => {
    if (servesModernEra(server)) {
      const level = ctx.mcpReq.envelope?.[LOG_LEVEL_META_KEY]
      return typeof level === 'string' ? (level as McpLogLevel) : 'none'
    }
    const metaLevel = ctx.mcpReq._meta?.[LOG_LEVEL_META_KEY]
    return (typeof metaLevel === 'string' ? metaLevel : state.clientLevel) as McpLogLevel | undefined
  }

  const callTool: CoreCallTool = async (params, ctx, onStop) => {
    const name = params.name
    let call: ValidatedCall
    try {
      call = validateCall(listedTools(runtime, state.enabledTools), name, params.arguments)
    } catch (error) {
      if (!(error instanceof InvalidArguments)) throw error
      runtime.logger.debug('tool call', { tool: name, durationMs: 0, outcome: 'error:invalid_argument' })
      return error.toResult()
    }
    assertWriteScope(runtime.config.auth, call.tool, ctx.http)
    const modern = servesModernEra(server)
    if (tasks && !modern && call.tool.taskSupport === 'required') {
      throw new ProtocolError(
        ProtocolErrorCode.MethodNotFound,
        `Tool ${name} must be called as a task: add "task": {} to the tools/call params`,
      )
    }
    const { mcpReq } = ctx
    const result = await executeCall(
      parts,
      call,
      channelFor(ctx, modern ? modernClientAccess(client, mcpReq as never) : client.forRequest(mcpReq.id), {
        ...(onStop ? { onStop } : { signal: mcpReq.signal }),
        notify: (notification) => mcpReq.notify(notification),
        log: (level, data, logger) => mcpReq.log(level, data, logger),
      }),
    )
    // The call may have taught the server which tools to hide (a credential's scopes): say so.
    const hidden = runtime.spec.hiddenTools?.(runtime.deps)
    if (hidden !== state.hiddenSeen) {
      state.hiddenSeen = hidden
      if (mcp.isConnected() && !modern) mcp.sendToolListChanged()
    }
    return result
  }
  server.setRequestHandler(
    'tools/call',
    (request, ctx) => callTool(request.params, ctx as unknown as CallingContext) as never,
  )
  callHandlers.set(mcp, callTool)
  if (!tasks) return

  // The SDK serves no 2025-11-25 tasks: its tools/call wrapper refuses a CreateTaskResult. So a
  // task-augmented call on a connection that offers tasks is answered here, before that wrapper;
  // every other call goes through it unchanged.
  const handlers = (server as unknown as { _requestHandlers?: Map<string, RawHandler> })._requestHandlers
  const checked = handlers?.get('tools/call')
  if (!handlers || !checked) throw new Error('core: the MCP SDK no longer exposes its request handlers')
  handlers.set('tools/call', (request, ctx) => {
    const params = request.params as { name?: unknown; arguments?: unknown; task?: unknown } | undefined
    if (params?.task === undefined || servesModernEra(server)) return checked(request, ctx)
    return startTask(tasks, params, ctx as CallRequestContext)
  })

  function startTask(
    registry: TaskRegistry,
    params: { name?: unknown; arguments?: unknown; task?: unknown },
    ctx: CallRequestContext,
  ) {
    if (typeof params.name !== 'string') {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        'Invalid tools/call request: name must be a string',
      )
    }
    const task = params.task as { ttl?: unknown } | null
    if (
      typeof task !== 'object' ||
      task === null ||
      (task.ttl !== undefined && typeof task.ttl !== 'number')
    ) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        'Invalid tools/call request: task must be { ttl?: number }',
      )
    }
    let call: ValidatedCall
    try {
      call = validateCall(listedTools(runtime, state.enabledTools), params.name, params.arguments)
    } catch (error) {
      // A task-augmented call is answered with a task or a JSON-RPC error: the 2025-11-25 tasks
      // draft has no result to carry a validation failure before the task exists.
      if (!(error instanceof InvalidArguments)) throw error
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, error.message, {
        tool: error.tool,
        issues: error.issues,
      })
    }
    assertWriteScope(runtime.config.auth, call.tool, ctx.http)
    if (!call.tool.taskSupport) {
      throw new ProtocolError(
        ProtocolErrorCode.MethodNotFound,
        `Tool ${params.name} does not run as a task (no execution.taskSupport); call it without "task"`,
      )
    }
    const created = registry.start(task.ttl as number | undefined, (control) =>
      executeCall(
        parts,
        call,
        channelFor(ctx, taskClientAccess(client, control), {
          signal: control.signal,
          meta: { [RELATED_TASK_META_KEY]: { taskId: control.taskId } },
          // The call's request is answered already: its output goes to the connection.
          notify: (notification) => server.notification(notification as never),
          log: (level, data, logger) =>
            mcp.isConnected()
              ? mcp.sendLoggingMessage({ level, data, ...(logger ? { logger } : {}) })
              : Promise.resolve(),
        }),
      ),
    )
    return { task: created }
  }
}
