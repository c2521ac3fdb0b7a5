import { McpServer, SERVER_INFO_META_KEY } from '@modelcontextprotocol/server'
import { createClientAccess, requestStateCodec, servesModernEra } from './client-access.js'
import type { HandlerContext, SessionAccess } from './define.js'
import type { InstanceOptions, InstanceParts, InstanceState, Runtime } from './instance.js'
import { logData, type McpLogLevel, mcpLevelAtLeast, toMcpLevel } from './logger.js'
import { registerPrompts } from './prompts.js'
import { registerResources } from './resources.js'
import { registerTaskHandlers, TASKS_CAPABILITY, TaskRegistry } from './tasks.js'
import { registerTools, runWarmCall } from './tool-call.js'

// One McpServer per connection (or per lone request), assembled from the pieces that serve it:
// the tool-call pipeline (tool-call.ts), resources and subscriptions (resources.ts), prompts
// (prompts.ts) and what a tool may ask of the client (client-access.ts).

export type { InstanceOptions, Runtime } from './instance.js'
export { RESULT_TEXT_CEILING_BYTES } from './tool-call.js'
export { describeIssues, selectTools, useSchemaCache } from './tool-schema.js'

/** Runtimes whose `spec.warmUp` has been started: once per process, whatever the connections. */
const warmedUp = new WeakSet<object>()

function warmUpOnce<D, C>(runtime: Runtime<D, C>, warmCall: () => Promise<void>): void {
  const warmUp = runtime.spec.warmUp
  if ((warmUp === undefined && runtime.spec.warmCall === undefined) || warmedUp.has(runtime)) return
  warmedUp.add(runtime)
  // On the next turn: the initialize exchange is over, and nothing waits for this.
  setImmediate(() => {
    const started = performance.now()
    Promise.resolve()
      .then(() => warmUp?.(runtime.deps, runtime.shutdownSignal))
      .then(warmCall)
      .then(() => runtime.logger.debug('warmed up', { durationMs: Math.round(performance.now() - started) }))
      .catch((error: unknown) =>
        runtime.logger.debug('warm-up failed; the first call does the work', {
          error: error instanceof Error ? error.message : String(error),
        }),
      )
  }).unref()
}

/** How long a 2026-07-28 client may reuse a listing, in ms (SEP-2549 `ttlMs`). */
export const LISTING_TTL_MS = 5 * 60_000

/**
 * Cache hints for the 2026-07-28 listings that are fixed for the life of the process: the tools
 * (unless the server hides tools as it learns), prompts and resource templates, and
 * `server/discover`. Resource lists and reads change with
 * what they show, so they keep the SDK's `ttlMs: 0`. Behind authentication an answer is the
 * caller's (`private`); otherwise any cache may keep it (`public`).
 */
function listingCacheHints(config: Runtime<unknown, unknown>['config'], toolsChange: boolean) {
  const hint = {
    ttlMs: LISTING_TTL_MS,
    cacheScope: config.authToken || config.auth.issuer ? ('private' as const) : ('public' as const),
  }
  return {
    // A server that hides tools as it learns (hiddenTools) has a tool list that is not fixed.
    'tools/list': toolsChange ? { ...hint, ttlMs: 0 } : hint,
    'prompts/list': hint,
    'resources/templates/list': hint,
    'server/discover': hint,
  }
}

/**
 * Builds one `McpServer` for a connection (stdio, an HTTP session) or a single stateless
 * request. Tool calls are served by core's own `tools/list` and `tools/call` handlers so that
 * argument and domain errors are tool results (SEP-1303), an unknown tool is JSON-RPC -32602, and every call gets a
 * timeout, a signal, progress and a log line.
 */
export function createInstance<D, C>(runtime: Runtime<D, C>, options: InstanceOptions = {}): McpServer {
  const { spec, config, logger } = runtime
  const resources = spec.resources ?? []
  const templates = spec.resourceTemplates ?? []
  const prompts = spec.prompts ?? []
  const subscribable = [...resources, ...templates].some((resource) => resource.subscribe)
  const instructions = typeof spec.instructions === 'function' ? spec.instructions(config) : spec.instructions
  const connection = options.connection ?? 'request'
  // Tasks need a connection to poll on: a lone request (2026-07-28, --stateless) has none.
  const offersTasks = connection !== 'request' && runtime.tools.some((tool) => tool.taskSupport)
  const identity = {
    name: spec.name.includes('-') ? spec.name : `keel-${spec.name}`,
    version: spec.version,
    ...(spec.title ? { title: spec.title } : {}),
  }
  const serverInfo = { ...identity, ...(spec.icons?.length ? { icons: spec.icons } : {}) }
  const mcp = new McpServer(serverInfo, {
    capabilities: {
      // The lists are fixed for the life of the process, so no list-changed notifications are promised.
      tools: {},
      logging: {},
      ...(resources.length || templates.length ? { resources: subscribable ? { subscribe: true } : {} } : {}),
      ...(prompts.length ? { prompts: {} } : {}),
      ...(offersTasks ? { tasks: TASKS_CAPABILITY } : {}),
      ...(templates.some((template) => template.complete) || prompts.some((prompt) => prompt.complete)
        ? { completions: {} }
        : {}),
    },
    ...(instructions ? { instructions } : {}),
    cacheHints: listingCacheHints(config, spec.hiddenTools !== undefined),
    // The codec (Web Crypto, a key) is made on the first state to check or mint: a start that
    // never sees one does not load Web Crypto.
    requestState: { verify: (state, context) => requestStateCodec().verify(state, context) },
  })
  const server = mcp.server
  stampIdentityOnly(server, identity, serverInfo)
  const initializedBefore = server.oninitialized
  // The warm call runs on this instance, whose parts exist by the time the warm-up gets to it.
  let parts: InstanceParts<D, C> | undefined
  const warmCall = () => (parts === undefined ? Promise.resolve() : runWarmCall(parts, sessionFor))
  server.oninitialized = () => {
    initializedBefore?.()
    warmUpOnce(runtime, warmCall)
  }
  // A lone request (2026-07-28, --stateless) and a 2026-07-28 stdio connection have no initialize:
  // making the instance for their first request starts it.
  if (connection === 'request' || options.uninitialized) warmUpOnce(runtime, warmCall)
  const state: InstanceState = {
    clientLevel: undefined,
    roots: undefined,
    subscriptions: new Map(),
    enabledTools: new Set(),
    hiddenSeen: spec.hiddenTools?.(runtime.deps, undefined),
  }
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

  const client = createClientAccess(server, state, logger)

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
    const remove = logger.addForwarder(
      (record) => {
        if (!mcp.isConnected()) return
        const level = toMcpLevel(record.level)
        void mcp.sendLoggingMessage({ level, logger: record.logger, data: logData(record) }).catch(() => {})
      },
      // Asked before a record is built: below the client's level nothing is built for it. A
      // 2026-07-28 client gets log messages only on the requests that ask for them, never these.
      (level) =>
        !servesModernEra(server) && mcpLevelAtLeast(toMcpLevel(level), state.clientLevel ?? 'warning'),
    )
    const previous = server.onclose
    server.onclose = () => {
      remove()
      previous?.()
    }
  }

  let tasks: TaskRegistry | undefined
  if (offersTasks) {
    const registry = new TaskRegistry((task) => {
      if (mcp.isConnected()) {
        void server
          .notification({ method: 'notifications/tasks/status', params: task } as never)
          .catch(() => {})
      }
    })
    registerTaskHandlers(server as never, registry)
    closers.push(() => registry.close())
    tasks = registry
  }

  parts = { runtime, mcp, state, client, handlerContext, sessionFor, tasks }
  registerTools(parts)
  registerResources(parts)
  registerPrompts(parts)
  // The SDK promises list-changed notifications when resources or prompts are registered; Keel's
  // lists are fixed for the life of the process, so it promises none, except for tools on a
  // server whose tools enable others (tool search), and for every list where a bin's launcher may
  // answer the first listings from the record of an earlier start: a listing of this start that
  // differs from the one sent is followed by its notification (replay.ts).
  const replayed = runtime.handshake !== undefined
  server.registerCapabilities({
    tools: { listChanged: replayed || spec.dynamicTools === true || spec.hiddenTools !== undefined },
    ...(resources.length || templates.length ? { resources: { listChanged: replayed } } : {}),
    ...(prompts.length ? { prompts: { listChanged: replayed } } : {}),
  })
  return mcp
}

/**
 * 2026-07-28: the SDK stamps the server's identity into every result's `_meta`
 * (`io.modelcontextprotocol/serverInfo`) through the server's `_outboundServerInfo` hook, which
 * gives the whole `serverInfo`, icons included: a data URI of several hundred bytes written and
 * parsed on every call (692 bytes for a six-byte file read on fs, against 130 to a 2025 client).
 * The stamp on a call identifies the software that answered, and name, version and title do that.
 * The icons are for a client's server list, which a 2026-07-28 client reads off the
 * `server/discover` result's stamp: that result carries the whole `serverInfo` itself (the SDK
 * keeps a stamp a result already has). Both are SDK internals, checked here: without them the SDK
 * stamps the whole `serverInfo` everywhere, as before.
 */
function stampIdentityOnly(
  server: McpServer['server'],
  identity: { name: string; version: string },
  serverInfo: Record<string, unknown>,
): void {
  const hooks = server as unknown as {
    _outboundServerInfo?: () => unknown
    _ondiscover?: () => Record<string, unknown>
  }
  const discover = hooks._ondiscover
  if (typeof hooks._outboundServerInfo !== 'function' || typeof discover !== 'function') return
  hooks._outboundServerInfo = () => identity
  hooks._ondiscover = () => {
    const result = discover.call(server)
    return {
      ...result,
      _meta: { ...(result._meta as object | undefined), [SERVER_INFO_META_KEY]: serverInfo },
    }
  }
}
