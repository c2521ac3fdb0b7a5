import type { McpServer } from '@modelcontextprotocol/server'
import { LOG_LEVEL_META_KEY, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server'
import { assertWriteScope, requestAuthOf } from './auth/context.js'
import { type CallChannel, executeCall, listedTools, runCall, type ValidatedCall } from './call-pipeline.js'
import { type ConnectionClientAccess, modernClientAccess, servesModernEra } from './client-access.js'
import type { AnyTool, ClientAccess, RequestAuth, SessionAccess } from './define.js'
import { formatToolError, ToolError } from './errors.js'
import type { InstanceParts, Runtime } from './instance.js'
import type { McpLogLevel } from './logger.js'
import { noteServed, SERVED_STAGE } from './schema-cache.js'
import { RELATED_TASK_META_KEY, type TaskControl, type TaskRegistry } from './tasks.js'
import { describeIssues, planFor } from './tool-schema.js'

// How a tool call arrives: tools/list, tools/call (and task-augmented calls) registered on an
// instance, the call's tool and arguments validated; the pipeline from there to the result is
// call-pipeline.ts (see docs/architecture.md, "A tool call, from the wire to the tool and back").

export { capContent, listedTools, RESULT_TEXT_CEILING_BYTES } from './call-pipeline.js'

/**
 * The answer to a call of a tool the server hides with a reason (the credential lacks a
 * permission): a tool error saying why, where a tool that does not exist is a JSON-RPC error.
 */
function hiddenReason<D, C>(
  runtime: Runtime<D, C>,
  name: string,
  auth: RequestAuth | undefined,
): Record<string, unknown> | undefined {
  const hidden = runtime.spec.hiddenTools?.(runtime.deps, auth)
  if (!(hidden instanceof Map)) return undefined
  const reason = hidden.get(name)
  if (reason === undefined) return undefined
  const error = new ToolError('permission_denied', reason)
  return {
    content: [{ type: 'text', text: formatToolError(error) }],
    isError: true,
    _meta: { 'keel/error': { kind: 'permission_denied' } },
  }
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
  return { tool, plan, args: parsed.data, sent: raw }
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
  /**
   * Core's HTTP fast path (http/fast-call.ts): the request's own session access, whose `onClose`
   * runs once the request is answered, where the SDK's per-request instance would close.
   */
  keelSession?: SessionAccess
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
export interface CallingContext extends CallRequestContext {
  mcpReq: CallRequestContext['mcpReq'] & {
    notify(notification: { method: string; params: Record<string, unknown> }): Promise<void>
    log(level: McpLogLevel, data: unknown, logger?: string): Promise<void>
  }
  /**
   * A rehearsal of the spec's `warmCall` ({@link Rehearse}), which no client made: not observed
   * (no metrics, audit line or rate budget) and teaching no hidden tools.
   */
  rehearsal?: true
}

/** The spec's warm call, as a front door runs it. */
export type WarmCall = { readonly tool: string; readonly arguments: Record<string, unknown> }

/**
 * Runs the warm call on the way a client's call takes through a front door (its checks, core's
 * handler, the result's check and encoding), the answers discarded. Resolves once it is done, with
 * false when the door no longer serves the instance and nothing ran.
 */
export type Rehearse = (warm: WarmCall) => Promise<boolean>

const rehearsers = new WeakMap<object, Rehearse>()

/** A front door serving this instance's calls itself (`fast-path.ts`) rehearses its warm call. */
export function setRehearser(mcp: McpServer, rehearse: Rehearse): void {
  rehearsers.set(mcp, rehearse)
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

/**
 * Runs the spec's `warmCall` on this instance through the same pipeline as a real call (input
 * schema, the tool, output schema, result projection) and discards the result. Not observed: no
 * metrics, audit line or rate budget, since no one made the call. Where a front door serves the
 * instance's calls itself (core's stdio fast path), the call is rehearsed on that door's way
 * instead, which a client's first call takes too. Rejects only when the call is refused (a warm
 * call that does not fit its tool); the warm-up logs that.
 */
export async function runWarmCall<D, C>(
  parts: InstanceParts<D, C>,
  sessionFor: (key: undefined) => SessionAccess,
): Promise<void> {
  const { runtime } = parts
  const warm = runtime.spec.warmCall
  if (warm === undefined || runtime.shutdownSignal.aborted) return
  const rehearse = rehearsers.get(parts.mcp)
  if (rehearse && (await rehearse(warm))) return
  const call = validateCall(
    listedTools(runtime, parts.state.enabledTools, undefined),
    warm.tool,
    warm.arguments,
  )
  const channel: CallChannel<D> = {
    signal: runtime.shutdownSignal,
    requestId: 'warm-up',
    session: sessionFor(undefined),
    auth: undefined,
    get client(): ClientAccess {
      throw new Error('core: a warm-up call has no client')
    },
    progressToken: undefined,
    logThreshold: 'none',
    transport: 'memory',
    era: 'legacy',
    notify: async () => {},
    log: async () => {},
  }
  await runCall(parts, call, channel)
}

/** Serves `tools/list` and `tools/call` on one instance (and task-augmented calls where offered). */
export function registerTools<D, C>(parts: InstanceParts<D, C>): void {
  const { runtime, mcp, state, client, sessionFor, tasks } = parts
  const server = mcp.server
  server.setRequestHandler('tools/list', (_request, ctx) => {
    // Task support is 2025-11-25 vocabulary: listed only where this connection offers tasks.
    const withTasks = tasks !== undefined && !servesModernEra(server)
    const auth = requestAuthOf((ctx as CallRequestContext).http?.authInfo)
    // What this list reflects: a later call that changes it says so (list_changed).
    if (runtime.spec.hiddenTools) state.hiddenSeen = runtime.spec.hiddenTools(runtime.deps, auth)
    noteServed(SERVED_STAGE.toolsListed)
    return {
      tools: listedTools(runtime, state.enabledTools, auth).map((tool) =>
        withTasks ? planFor(tool).listedWithTasks : planFor(tool).listed,
      ),
    } as never
  })
  // One instance serves one connection (or one request): its calls share their session access.
  let session: { key: string | undefined; access: SessionAccess } | undefined
  const sessionOf = (key: string | undefined) => {
    if (!session || session.key !== key) session = { key, access: sessionFor(key) }
    return session.access
  }
  const channelFor: ChannelFor<D> = (ctx, clientOf, side) =>
    Object.assign(
      new RequestChannel<D>(ctx, sessionOf(ctx.sessionId), server, logThresholdOf, clientOf),
      side,
    )
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
    const auth = requestAuthOf(ctx.http?.authInfo)
    const refused = hiddenReason(runtime, name, auth)
    if (refused) return refused
    let call: ValidatedCall
    try {
      call = validateCall(listedTools(runtime, state.enabledTools, auth), name, params.arguments)
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
    const result = await (ctx.rehearsal ? runCall : executeCall)(
      parts,
      call,
      new RequestChannel<D>(
        ctx,
        ctx.keelSession ?? sessionOf(ctx.sessionId),
        server,
        logThresholdOf,
        undefined,
        modern,
        client,
        onStop,
      ),
    )
    noteServed(SERVED_STAGE.callAnswered)
    if (ctx.rehearsal) return result
    // The call may have taught the server which tools to hide (a credential's scopes): say so.
    const hidden = runtime.spec.hiddenTools?.(runtime.deps, auth)
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
    return startTask(parts, tasks, channelFor, params, ctx as CallRequestContext)
  })
}

/**
 * The channel of one call on its request: its fields read from the request's context once, its
 * side output sent on the request's stream. A class, so a call builds one object and no closures
 * (a cheap call's allocations are a measurable share of its CPU). A task's channel takes its
 * own client, signal and side output in place of the request's.
 */
class RequestChannel<D> implements CallChannel<D> {
  readonly requestId: string | number
  readonly session: SessionAccess
  readonly transport: CallChannel<D>['transport']
  readonly era: CallChannel<D>['era']
  readonly auth: RequestAuth | undefined
  readonly progressToken: string | number | undefined
  signal?: AbortSignal
  onStop?: (stop: (reason: unknown) => void) => void
  meta?: Record<string, unknown>
  readonly #ctx: CallRequestContext
  readonly #logThresholdOf: (ctx: CallRequestContext) => McpLogLevel | 'none' | undefined
  readonly #clientOf: (() => ClientAccess) | undefined
  readonly #connection: ConnectionClientAccess | undefined
  #client: ClientAccess | undefined

  constructor(
    ctx: CallRequestContext,
    session: SessionAccess,
    server: McpServer['server'],
    logThresholdOf: (ctx: CallRequestContext) => McpLogLevel | 'none' | undefined,
    clientOf: (() => ClientAccess) | undefined,
    modern = servesModernEra(server),
    connection?: ConnectionClientAccess,
    onStop?: (stop: (reason: unknown) => void) => void,
  ) {
    this.#ctx = ctx
    this.#logThresholdOf = logThresholdOf
    this.#clientOf = clientOf
    this.#connection = connection
    this.requestId = ctx.mcpReq.id
    this.session = session
    this.transport = ctx.http ? 'http' : session.id === 'stdio' ? 'stdio' : 'memory'
    this.era = modern ? 'modern' : 'legacy'
    this.auth = requestAuthOf(ctx.http?.authInfo)
    this.progressToken = ctx.mcpReq._meta?.progressToken as string | number | undefined
    if (onStop) this.onStop = onStop
    else this.signal = ctx.mcpReq.signal
  }

  /** Made when the tool first asks for the client: most calls never do. */
  get client(): ClientAccess {
    if (this.#client === undefined) {
      const { mcpReq } = this.#ctx
      this.#client = this.#clientOf
        ? this.#clientOf()
        : this.era === 'modern'
          ? modernClientAccess(this.#connection as ConnectionClientAccess, mcpReq as never)
          : (this.#connection as ConnectionClientAccess).forRequest(mcpReq.id)
    }
    return this.#client
  }

  get logThreshold(): McpLogLevel | 'none' | undefined {
    return this.#logThresholdOf(this.#ctx)
  }

  notify(notification: { method: string; params: Record<string, unknown> }): Promise<void> {
    return (this.#ctx as CallingContext).mcpReq.notify(notification)
  }

  log(level: McpLogLevel, data: unknown, logger: string | undefined): Promise<void> {
    return (this.#ctx as CallingContext).mcpReq.log(level, data, logger)
  }
}

/** A channel for a call of one instance (`registerTools`' own). */
type ChannelFor<D> = (
  ctx: CallRequestContext,
  client: () => ClientAccess,
  side: Pick<CallChannel<D>, 'signal' | 'onStop' | 'meta' | 'notify' | 'log'>,
) => CallChannel<D>

/** A task-augmented call (2025-11-25): validated now, run as a task, answered with the task. */
function startTask<D, C>(
  parts: InstanceParts<D, C>,
  registry: TaskRegistry,
  channelFor: ChannelFor<D>,
  params: { name?: unknown; arguments?: unknown; task?: unknown },
  ctx: CallRequestContext,
) {
  const { runtime, state, client, mcp } = parts
  const server = mcp.server
  if (typeof params.name !== 'string') {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      'Invalid tools/call request: name must be a string',
    )
  }
  const task = params.task as { ttl?: unknown } | null
  if (typeof task !== 'object' || task === null || (task.ttl !== undefined && typeof task.ttl !== 'number')) {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      'Invalid tools/call request: task must be { ttl?: number }',
    )
  }
  let call: ValidatedCall
  try {
    call = validateCall(
      listedTools(runtime, state.enabledTools, requestAuthOf(ctx.http?.authInfo)),
      params.name,
      params.arguments,
    )
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
      channelFor(ctx, () => taskClientAccess(client, control), {
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
