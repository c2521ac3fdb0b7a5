import { randomBytes } from 'node:crypto'
import {
  CLIENT_CAPABILITIES_META_KEY,
  completable,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  LOG_LEVEL_META_KEY,
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  ResourceTemplate,
  UriTemplate,
} from '@modelcontextprotocol/server'
import { z } from 'zod'
import type { ParsedConfig } from './config.js'
import type {
  AnyTool,
  AskOptions,
  ClientAccess,
  ClientRoot,
  ContentBlock,
  HandlerContext,
  PromptSpec,
  ResourceContents,
  ServerSpec,
  SessionAccess,
  ToolContext,
} from './define.js'
import { errorReference, formatToolError, isAbortError, mapSystemError, ToolError } from './errors.js'
import { truncateUtf8 } from './limits.js'
import { type Logger, type LogRecord, type McpLogLevel, mcpLevelAtLeast, toMcpLevel } from './logger.js'
import { redactor } from './redact.js'

/** Hard ceiling on the text a single result may carry: below the official client's 10 MiB message limit. */
export const RESULT_TEXT_CEILING_BYTES = 8 * 1024 * 1024

/** What every server instance of one process shares. */
export interface Runtime<D, C> {
  spec: ServerSpec<D, C>
  config: ParsedConfig<C>
  deps: D
  logger: Logger
  /** The tools left after toolsets, read-only and allow/deny filtering. */
  tools: AnyTool<D>[]
  /** Aborted when the process shuts down: running calls stop. */
  shutdownSignal: AbortSignal
}

/** Options of one server instance. */
export interface InstanceOptions {
  /** Forward process-wide warnings and errors to this client (stdio: there is only one). */
  forwardProcessLogs?: boolean
  /**
   * What one instance serves: the stdio connection, a 2025-era HTTP session, or a single HTTP
   * request (2026-07-28 or stateless). Decides `ToolContext.session.id`. Default `request`.
   */
  connection?: 'stdio' | 'session' | 'request'
  /** The id of a `stdio` connection (default `stdio`); in-memory test connections set their own. */
  connectionId?: string
}

interface ToolPlan {
  tool: AnyTool
  schema: z.ZodObject
  output: z.ZodObject | undefined
  listed: Record<string, unknown>
  outputJson: Record<string, unknown> | undefined
}

const plans = new WeakMap<AnyTool, ToolPlan>()

function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>
  delete json.$schema
  return stripSafeIntegerBounds(json) as Record<string, unknown>
}

// z.number().int() states ±(2^53-1) bounds: true but noise, and every schema word costs tokens.
function stripSafeIntegerBounds(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(stripSafeIntegerBounds)
  if (!node || typeof node !== 'object') return node
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if (
      (key === 'minimum' && value === Number.MIN_SAFE_INTEGER) ||
      (key === 'maximum' && value === Number.MAX_SAFE_INTEGER)
    )
      continue
    out[key] = stripSafeIntegerBounds(value)
  }
  return out
}

function planFor(tool: AnyTool): ToolPlan {
  let plan = plans.get(tool)
  if (!plan) {
    // Unknown keys are refused rather than silently dropped: a misspelt argument must not turn into a default.
    const schema = z.object(tool.input).strict()
    const output = tool.output ? z.object(tool.output) : undefined
    const outputJson = output ? jsonSchemaOf(output, 'output') : undefined
    const listed: Record<string, unknown> = {
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: jsonSchemaOf(schema, 'input'),
      annotations: { title: tool.title, ...tool.annotations },
    }
    if (outputJson) listed.outputSchema = outputJson
    plan = { tool, schema, output, listed, outputJson }
    plans.set(tool, plan)
  }
  return plan
}

/** Formats zod issues as `field: problem` items the model can act on. */
export function describeIssues(error: z.ZodError): {
  text: string
  issues: Array<{ path: string; message: string }>
} {
  const issues = error.issues.map((issue) => ({
    path: issue.path.length ? issue.path.join('.') : '(arguments)',
    message:
      issue.code === 'unrecognized_keys' ? `unknown argument(s): ${issue.keys.join(', ')}` : issue.message,
  }))
  return { text: issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '), issues }
}

/** Applies toolsets, read-only and allow/deny lists. Throws on unknown tool names in the lists. */
export function selectTools<D, C>(spec: ServerSpec<D, C>, config: ParsedConfig<C>): AnyTool<D>[] {
  const all = typeof spec.tools === 'function' ? spec.tools(config) : spec.tools
  const names = new Set(all.map((tool) => tool.name))
  for (const name of [...config.tools, ...config.excludeTools]) {
    if (!names.has(name)) {
      throw new ToolError(
        'invalid_argument',
        `unknown tool "${name}" in --tools/--exclude-tools; known: ${[...names].join(', ')}`,
      )
    }
  }
  const wanted = config.toolsets.length ? config.toolsets : (spec.defaultToolsets ?? ['all'])
  return all.filter((tool) => {
    if (!wanted.includes('all') && !wanted.includes(tool.toolset ?? 'default')) return false
    // Read-only removes writers from the list entirely, whatever else was asked for.
    if (config.readOnly && !tool.annotations.readOnlyHint) return false
    if (config.tools.length && !config.tools.includes(tool.name)) return false
    return !config.excludeTools.includes(tool.name)
  })
}

function notOffered(capability: 'sampling' | 'elicitation'): ToolError {
  return new ToolError(
    'unavailable',
    `The client does not offer ${capability} (it did not declare the capability)`,
  )
}

/**
 * Thrown inside a 2026-07-28 tool call when the tool needs an answer from the client: the call
 * ends with an `input_required` result carrying the requests, the client answers and retries,
 * and the tool runs again from the start with the answers available.
 */
class InputNeeded extends Error {
  constructor(
    readonly requests: Record<string, ReturnType<typeof inputRequired.elicit>>,
    readonly answers: Record<string, unknown>,
  ) {
    super('input required')
  }
}

/**
 * Earlier rounds' answers ride along in `requestState` (the client only echoes the latest round's
 * `inputResponses`). The state is HMAC-signed with a per-process key so it cannot be altered;
 * it is not secret, and holds nothing the client did not send. Replicas behind a load balancer
 * each have their own key: a multi-question tool call must return to the same process.
 */
let stateCodec: ReturnType<typeof createRequestStateCodec<{ answers: Record<string, unknown> }>> | undefined
function requestStateCodec() {
  stateCodec ??= createRequestStateCodec<{ answers: Record<string, unknown> }>({
    key: randomBytes(32),
    ttlSeconds: 900,
  })
  return stateCodec
}

/** True when the instance serves the 2026-07-28 (or later) revision: no server-to-client pushes. */
function servesModernEra(server: McpServer['server']): boolean {
  const version = server.getNegotiatedProtocolVersion()
  return version !== undefined && version >= '2026-07-28'
}

/**
 * The client access of one 2026-07-28 tool call. Sampling and elicitation become embedded
 * requests of an `input_required` result; on the retry the tool runs again from the start and
 * each question finds its answer by key (the n-th question of the run by default). Tools therefore
 * ask before they act: everything before the question runs again on the retry. Every
 * `input_required` result carries a signed `requestState` holding the answers to the questions
 * asked so far, and only those: keys the tool never asked for are not carried.
 */
function modernClientAccess(
  base: ClientAccess,
  mcpReq: {
    envelope?: Record<string, unknown>
    inputResponses?: Record<string, unknown>
    requestState?: () => { answers?: Record<string, unknown> } | undefined
  },
): ClientAccess {
  const capabilities = mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY] as Record<string, unknown> | undefined
  const answers: Record<string, unknown> = { ...mcpReq.requestState?.()?.answers, ...mcpReq.inputResponses }
  const carried: Record<string, unknown> = {}
  const used = new Set<string>()
  let asked = 0
  const keyFor = (kind: 'sample' | 'elicit', options: AskOptions | undefined): string => {
    const key = options?.key ?? `keel_${kind}_${asked}`
    asked++
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(key)) {
      throw new ToolError('internal', `invalid question key "${key.slice(0, 80)}"`)
    }
    if (used.has(key)) throw new ToolError('internal', `question key "${key}" used twice in one call`)
    used.add(key)
    return key
  }
  return {
    get info() {
      return base.info
    },
    capabilities,
    // Roots are not offered to servers on 2026-07-28 requests (SEP-2577): the configured roots apply.
    roots: async () => undefined,
    // A question for a capability the request did not declare still goes out as an embedded
    // request: the SDK refuses it with -32021 (missing client capability), as 2026-07-28 requires.
    async sample(params, options) {
      const key = keyFor('sample', options)
      const view = inputResponse(answers, key)
      if (view.kind === 'sampling') {
        carried[key] = answers[key]
        return view.result
      }
      throw new InputNeeded({ [key]: inputRequired.createMessage(params as never) }, carried)
    },
    async elicit(params, options) {
      const key = keyFor('elicit', options)
      const view = inputResponse(answers, key)
      if (view.kind === 'elicit') {
        carried[key] = answers[key]
        return { action: view.action, ...(view.content ? { content: view.content } : {}) }
      }
      throw new InputNeeded({ [key]: inputRequired.elicit(params as never) }, carried)
    },
  }
}

function mapError<D, C>(runtime: Runtime<D, C>, error: unknown): ToolError | undefined {
  if (ToolError.is(error)) return error
  return runtime.spec.mapError?.(error) ?? mapSystemError(error)
}

function internalResult(runtime: Runtime<unknown, unknown>, tool: string, error: unknown) {
  const ref = errorReference()
  runtime.logger.error(`tool ${tool} failed unexpectedly (ref ${ref})`, { tool, ref, error })
  return new ToolError(
    'internal',
    `${tool} failed unexpectedly (ref ${ref}); the details are in the server log`,
  )
}

function abortPromise(signal: AbortSignal): { promise: Promise<never>; cancel: () => void } {
  let cancel = () => {}
  const promise = new Promise<never>((_, reject) => {
    const onAbort = () => reject(signal.reason)
    if (signal.aborted) onAbort()
    signal.addEventListener('abort', onAbort, { once: true })
    cancel = () => signal.removeEventListener('abort', onAbort)
  })
  promise.catch(() => {})
  return { promise, cancel }
}

class TimeoutError extends Error {
  override name = 'TimeoutError'
}

function capContent(content: ContentBlock[]): ContentBlock[] {
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

interface InstanceState {
  clientLevel: McpLogLevel | undefined
  roots: Promise<ClientRoot[] | undefined> | undefined
  subscriptions: Map<string, () => void>
}

/**
 * Builds one `McpServer` for a connection (stdio, an HTTP session) or a single stateless
 * request. Tool calls are served by core's own `tools/list` and `tools/call` handlers so that
 * argument errors are JSON-RPC -32602, domain errors are tool results, and every call gets a
 * timeout, a signal, progress and a log line.
 */
export function createInstance<D, C>(runtime: Runtime<D, C>, options: InstanceOptions = {}): McpServer {
  const { spec, config, logger } = runtime
  const resources = spec.resources ?? []
  const templates = spec.resourceTemplates ?? []
  const prompts = spec.prompts ?? []
  const subscribable = [...resources, ...templates].some((resource) => resource.subscribe)
  const instructions = typeof spec.instructions === 'function' ? spec.instructions(config) : spec.instructions
  const mcp = new McpServer(
    {
      name: spec.name.includes('-') ? spec.name : `keel-${spec.name}`,
      version: spec.version,
      ...(spec.title ? { title: spec.title } : {}),
    },
    {
      capabilities: {
        // The lists are fixed for the life of the process, so no list-changed notifications are promised.
        tools: {},
        logging: {},
        ...(resources.length || templates.length
          ? { resources: subscribable ? { subscribe: true } : {} }
          : {}),
        ...(prompts.length ? { prompts: {} } : {}),
        ...(templates.some((template) => template.complete) || prompts.some((prompt) => prompt.complete)
          ? { completions: {} }
          : {}),
      },
      ...(instructions ? { instructions } : {}),
      requestState: { verify: requestStateCodec().verify },
    },
  )
  const server = mcp.server
  const state: InstanceState = { clientLevel: undefined, roots: undefined, subscriptions: new Map() }
  const connection = options.connection ?? 'request'
  const closers: Array<() => void | Promise<void>> = []
  const closedBefore = server.onclose
  server.onclose = () => {
    closedBefore?.()
    for (const closer of closers.splice(0)) {
      Promise.resolve()
        .then(closer)
        .catch((error: unknown) => logger.warn('a connection cleanup failed', { error }))
    }
  }
  const sessionFor = (sessionId: string | undefined): SessionAccess => ({
    id:
      connection === 'stdio'
        ? (options.connectionId ?? 'stdio')
        : connection === 'session'
          ? sessionId
          : undefined,
    onClose(callback) {
      closers.push(callback)
    },
  })

  const client: ClientAccess = {
    get info() {
      const version = server.getClientVersion()
      return version ? { name: version.name, version: version.version } : undefined
    },
    get capabilities() {
      return server.getClientCapabilities() as Record<string, unknown> | undefined
    },
    roots() {
      if (!server.getClientCapabilities()?.roots) return Promise.resolve(undefined)
      state.roots ??= server.listRoots().then(
        (result) =>
          result.roots.map((root) => ({ uri: root.uri, ...(root.name ? { name: root.name } : {}) })),
        (error: unknown) => {
          state.roots = undefined
          logger.debug('the client did not answer roots/list', { error: (error as Error).message })
          return undefined
        },
      )
      return state.roots
    },
    // MCP: no request for a capability the client did not declare. The SDK does not check sampling,
    // and a stateless request has no declared capabilities and no way back for an answer: without
    // these checks such a call waits for the tool timeout instead of failing at once.
    sample: async (params) => {
      if (!server.getClientCapabilities()?.sampling) throw notOffered('sampling')
      return server.createMessage(params as never)
    },
    elicit: async (params) => {
      if (!server.getClientCapabilities()?.elicitation) throw notOffered('elicitation')
      return server.elicitInput(params as never)
    },
  }

  const handlerContext = (signal: AbortSignal): HandlerContext<D> => ({
    deps: runtime.deps,
    signal,
    log: logger,
    client,
  })

  server.setNotificationHandler('notifications/roots/list_changed', async () => {
    state.roots = undefined
    logger.debug('client roots changed')
    await spec.onRootsChanged?.(handlerContext(runtime.shutdownSignal))
  })

  // Keel tracks the client's level itself: by default only warnings and errors are forwarded.
  server.setRequestHandler('logging/setLevel', (request) => {
    state.clientLevel = request.params.level as McpLogLevel
    return {}
  })

  if (options.forwardProcessLogs) {
    const remove = logger.addForwarder((record) => {
      const level = toMcpLevel(record.level)
      if (!mcpLevelAtLeast(level, state.clientLevel ?? 'warning') || !mcp.isConnected()) return
      void mcp.sendLoggingMessage({ level, logger: record.logger, data: logData(record) }).catch(() => {})
    })
    const previous = server.onclose
    server.onclose = () => {
      remove()
      previous?.()
    }
  }

  // ---- tools
  server.setRequestHandler(
    'tools/list',
    () => ({ tools: runtime.tools.map((tool) => planFor(tool).listed) }) as never,
  )
  server.setRequestHandler('tools/call', async (request, ctx) => {
    const name = request.params.name
    const tool = runtime.tools.find((candidate) => candidate.name === name)
    if (!tool) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Unknown tool "${name}". Available tools: ${runtime.tools.map((candidate) => candidate.name).join(', ')}`,
      )
    }
    const plan = planFor(tool)
    const parsed = plan.schema.safeParse(request.params.arguments ?? {})
    if (!parsed.success) {
      const { text, issues } = describeIssues(parsed.error)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Invalid arguments for tool ${name}: ${text}`,
        {
          tool: name,
          issues,
        },
      )
    }
    const started = performance.now()
    const timeoutMs = tool.timeoutMs ?? config.toolTimeoutMs
    const controller = new AbortController()
    const forwardAbort = (source: AbortSignal) => () => controller.abort(source.reason)
    const abortOnCancel = forwardAbort(ctx.mcpReq.signal)
    const abortOnShutdown = forwardAbort(runtime.shutdownSignal)
    ctx.mcpReq.signal.addEventListener('abort', abortOnCancel, { once: true })
    runtime.shutdownSignal.addEventListener('abort', abortOnShutdown, { once: true })
    const timer = setTimeout(
      () => controller.abort(new TimeoutError(`${name} did not finish within ${timeoutMs} ms`)),
      timeoutMs,
    )
    const metaLevel = (ctx.mcpReq._meta as Record<string, unknown> | undefined)?.[LOG_LEVEL_META_KEY]
    const threshold = (typeof metaLevel === 'string' ? metaLevel : state.clientLevel) as
      | McpLogLevel
      | undefined
    const callLogger = logger.child(name, { tool: name }).withForwarder((record: LogRecord) => {
      const level = toMcpLevel(record.level)
      if (!mcpLevelAtLeast(level, threshold ?? 'warning')) return
      void ctx.mcpReq.log(level, logData(record), record.logger).catch(() => {})
    })
    const progressToken = ctx.mcpReq._meta?.progressToken
    let lastProgress = Number.NEGATIVE_INFINITY
    const toolContext: ToolContext<D> = {
      deps: runtime.deps,
      signal: controller.signal,
      log: callLogger,
      client: servesModernEra(server) ? modernClientAccess(client, ctx.mcpReq as never) : client,
      requestId: ctx.mcpReq.id,
      session: sessionFor(ctx.sessionId),
      auth: ctx.http?.authInfo?.token ? { token: ctx.http.authInfo.token } : undefined,
      async progress(progress, total, message) {
        // Progress must increase for one token; late or repeated values are dropped, not sent.
        if (progressToken === undefined || progress <= lastProgress || controller.signal.aborted) return
        lastProgress = progress
        await ctx.mcpReq
          .notify({
            method: 'notifications/progress',
            params: {
              progressToken,
              progress,
              ...(total !== undefined ? { total } : {}),
              ...(message ? { message } : {}),
            },
          })
          .catch(() => {})
      },
    }
    const aborted = abortPromise(controller.signal)
    let outcome = 'ok'
    try {
      const output = await Promise.race([
        Promise.resolve().then(() => tool.run(parsed.data, toolContext)),
        aborted.promise,
      ])
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
      return server.projectCallToolResult(result as never, plan.outputJson as never) as never
    } catch (error) {
      if (error instanceof InputNeeded) {
        outcome = 'input_required'
        const requestState = await requestStateCodec().mint({ answers: error.answers })
        return inputRequired({
          inputRequests: error.requests,
          requestState,
        }) as never
      }
      let toolError: ToolError
      if (controller.signal.aborted && (isAbortError(error) || error === controller.signal.reason)) {
        const reason = controller.signal.reason
        toolError =
          reason instanceof TimeoutError
            ? new ToolError('timeout', reason.message, {
                hint: 'Narrow the request (smaller range, fewer rows, a more specific pattern) and try again.',
              })
            : new ToolError(
                'cancelled',
                runtime.shutdownSignal.aborted ? 'The server is shutting down' : 'The call was cancelled',
              )
      } else {
        toolError =
          mapError(runtime, error) ?? internalResult(runtime as Runtime<unknown, unknown>, name, error)
        if (toolError.cause !== undefined && toolError.kind !== 'internal') {
          logger.debug(`tool ${name} error cause`, { tool: name, error: toolError.cause })
        }
      }
      outcome = `error:${toolError.kind}`
      return {
        content: [{ type: 'text', text: formatToolError(toolError) }],
        isError: true,
        ...(toolError.details
          ? {
              _meta: {
                'keel/error': {
                  kind: toolError.kind,
                  ...(redactor.redactValue(toolError.details) as object),
                },
              },
            }
          : {}),
      } as never
    } finally {
      clearTimeout(timer)
      aborted.cancel()
      ctx.mcpReq.signal.removeEventListener('abort', abortOnCancel)
      runtime.shutdownSignal.removeEventListener('abort', abortOnShutdown)
      logger.debug('tool call', {
        tool: name,
        durationMs: Math.round((performance.now() - started) * 100) / 100,
        outcome,
      })
    }
  })

  // ---- resources
  const readErrors = (error: unknown, uri: string): never => {
    if (error instanceof ProtocolError) throw error
    const mapped = mapError(runtime, error)
    if (mapped?.kind === 'not_found') throw new ResourceNotFoundError(uri)
    if (mapped && mapped.kind !== 'internal') {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, formatToolError(mapped))
    }
    const ref = errorReference()
    logger.error(`reading ${uri} failed unexpectedly (ref ${ref})`, { ref, error })
    throw new ProtocolError(ProtocolErrorCode.InternalError, `Reading the resource failed (ref ${ref})`)
  }
  const toContents = (contents: ResourceContents[]) => ({ contents })

  for (const resource of resources) {
    mcp.registerResource(
      resource.name,
      resource.uri,
      {
        ...(resource.title ? { title: resource.title } : {}),
        description: resource.description,
        mimeType: resource.mimeType,
      },
      async (uri, ctx) => {
        try {
          return toContents(await resource.read(uri, handlerContext(ctx.mcpReq.signal)))
        } catch (error) {
          return readErrors(error, uri.href)
        }
      },
    )
  }
  for (const template of templates) {
    const complete: Record<
      string,
      (value: string, completionContext?: { arguments?: Record<string, string> }) => Promise<string[]>
    > = {}
    for (const [variable, completer] of Object.entries(template.complete ?? {})) {
      complete[variable] = async (value, completionContext) => {
        try {
          const context = {
            ...handlerContext(runtime.shutdownSignal),
            arguments: completionContext?.arguments ?? {},
          }
          return (await completer(value, context)).slice(0, 100)
        } catch {
          return []
        }
      }
    }
    const list = template.list
    mcp.registerResource(
      template.name,
      new ResourceTemplate(template.uriTemplate, {
        list: list
          ? async (ctx) => ({ resources: await list(handlerContext(ctx.mcpReq.signal)) })
          : undefined,
        complete,
      }),
      {
        ...(template.title ? { title: template.title } : {}),
        description: template.description,
        mimeType: template.mimeType,
      },
      async (uri, variables, ctx) => {
        try {
          return toContents(
            await template.read(
              uri,
              variables as Record<string, string | string[]>,
              handlerContext(ctx.mcpReq.signal),
            ),
          )
        } catch (error) {
          return readErrors(error, uri.href)
        }
      },
    )
  }
  if (subscribable) {
    const matchers = templates
      .filter((template) => template.subscribe)
      .map((template) => ({ template, matcher: new UriTemplate(template.uriTemplate) }))
    server.setRequestHandler('resources/subscribe', async (request) => {
      const uri = request.params.uri
      if (state.subscriptions.has(uri)) return {}
      const fixed = resources.find((resource) => resource.uri === uri && resource.subscribe)
      const matched = fixed ? undefined : matchers.find(({ matcher }) => matcher.match(uri))
      const subscribe = fixed?.subscribe ?? matched?.template.subscribe
      if (!subscribe)
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `Resource ${uri} does not support subscriptions`,
        )
      let url: URL
      try {
        url = new URL(uri)
      } catch {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid resource URI: ${uri}`)
      }
      const notify = () => {
        if (mcp.isConnected()) void server.sendResourceUpdated({ uri }).catch(() => {})
      }
      // Reserve the slot first so a second subscribe while this one resolves is not doubled.
      state.subscriptions.set(uri, () => {})
      let dispose: (() => void) | undefined
      try {
        dispose = await subscribe.call(
          fixed ?? matched?.template,
          url,
          notify,
          handlerContext(runtime.shutdownSignal),
        )
      } catch (error) {
        state.subscriptions.delete(uri)
        return readErrors(error, uri)
      }
      if (state.subscriptions.has(uri)) state.subscriptions.set(uri, dispose ?? (() => {}))
      else dispose?.()
      return {}
    })
    server.setRequestHandler('resources/unsubscribe', (request) => {
      state.subscriptions.get(request.params.uri)?.()
      state.subscriptions.delete(request.params.uri)
      return {}
    })
    const previous = server.onclose
    server.onclose = () => {
      for (const dispose of state.subscriptions.values()) dispose()
      state.subscriptions.clear()
      previous?.()
    }
  }

  // ---- prompts
  for (const prompt of prompts) {
    const argsSchema = promptArgsSchema(prompt)
    mcp.registerPrompt(
      prompt.name,
      {
        ...(prompt.title ? { title: prompt.title } : {}),
        ...(prompt.description ? { description: prompt.description } : {}),
        ...(argsSchema ? { argsSchema } : {}),
      } as never,
      (async (...callArgs: unknown[]) => {
        const ctx = callArgs[callArgs.length - 1] as { mcpReq: { signal: AbortSignal } }
        const args = (prompt.args ? callArgs[0] : {}) as Record<string, string | undefined>
        try {
          return await prompt.run(args, handlerContext(ctx.mcpReq.signal))
        } catch (error) {
          if (error instanceof ProtocolError) throw error
          const mapped = mapError(runtime, error)
          if (mapped && mapped.kind !== 'internal')
            throw new ProtocolError(ProtocolErrorCode.InvalidParams, formatToolError(mapped))
          const ref = errorReference()
          logger.error(`prompt ${prompt.name} failed unexpectedly (ref ${ref})`, { ref, error })
          throw new ProtocolError(ProtocolErrorCode.InternalError, `The prompt failed (ref ${ref})`)
        }
      }) as never,
    )
  }
  // The SDK promises list-changed notifications when resources or prompts are registered; Keel's
  // lists are fixed for the life of the process, so it promises none.
  server.registerCapabilities({
    tools: { listChanged: false },
    ...(resources.length || templates.length ? { resources: { listChanged: false } } : {}),
    ...(prompts.length ? { prompts: { listChanged: false } } : {}),
  })
  return mcp
}

const promptSchemas = new WeakMap<PromptSpec<unknown>, z.ZodObject>()

// completable() marks a schema in place, so each prompt's argument schema is built once per process.
function promptArgsSchema(prompt: PromptSpec<unknown>): z.ZodObject | undefined {
  if (!prompt.args) return undefined
  let schema = promptSchemas.get(prompt)
  if (!schema) {
    const shape: Record<string, z.ZodType> = {}
    for (const [argument, argumentSchema] of Object.entries(prompt.args)) {
      const completer = prompt.complete?.[argument]
      shape[argument] = completer
        ? (completable(
            argumentSchema as never,
            (async (value: string) => (await completer(value)).slice(0, 100)) as never,
          ) as never)
        : argumentSchema
    }
    schema = z.object(shape)
    promptSchemas.set(prompt, schema)
  }
  return schema
}

function logData(record: LogRecord): unknown {
  const { time: _time, level: _level, logger: _logger, msg, ...fields } = record
  for (const [key, value] of Object.entries(fields)) {
    // Stacks stay on stderr: the client gets the message only.
    if (value && typeof value === 'object' && 'stack' in value) {
      fields[key] = {
        name: (value as { name?: unknown }).name,
        message: (value as { message?: unknown }).message,
      }
    }
  }
  return Object.keys(fields).length ? { message: msg, ...fields } : msg
}
