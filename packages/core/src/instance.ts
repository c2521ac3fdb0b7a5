import type { McpServer } from '@modelcontextprotocol/server'
import type { ConnectionClientAccess } from './client-access.js'
import type { ParsedConfig } from './config.js'
import type { AnyTool, ClientRoot, HandlerContext, HiddenTools, ServerSpec, SessionAccess } from './define.js'
import { mapSystemError, ToolError } from './errors.js'
import type { Logger, McpLogLevel } from './logger.js'
import type { Operations } from './observe/start.js'
import type { HandshakeContext, LauncherReplay } from './replay.js'
import type { TaskRegistry } from './tasks.js'

/** What every server instance of one process shares. */
export interface Runtime<D, C> {
  spec: ServerSpec<D, C>
  config: ParsedConfig<C>
  deps: D
  logger: Logger
  /** The tools left after toolsets, read-only and allow/deny filtering. */
  tools: AnyTool<D>[]
  /**
   * What `enableTools` may add (`dynamicTools` servers): every tool of the server after
   * `--read-only` and `--exclude-tools`, whatever the toolsets. Default: `tools`.
   */
  available?: AnyTool<D>[]
  /** Aborted when the process shuts down: running calls stop. */
  shutdownSignal: AbortSignal
  /** Metrics, audit, rate limits and tracing, when an operations flag is set (see observe/). */
  operations?: Operations
  /** What the bin's launcher handed over: lines it read, requests it answered (see replay.ts). */
  replay?: LauncherReplay
  /** Where this start records its handshake, when the server takes part (see replay.ts). */
  handshake?: HandshakeContext
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
  /**
   * The connection has no `initialize` to wait for (a 2026-07-28 stdio connection): the spec's
   * warm-up starts once the instance is made. A lone request always starts it so.
   */
  uninitialized?: boolean
}

/** Per-connection state of one instance. */
export interface InstanceState {
  clientLevel: McpLogLevel | undefined
  roots: Promise<ClientRoot[] | undefined> | undefined
  subscriptions: Map<string, () => void>
  /** Tools this connection enabled at run time, beyond `runtime.tools`. */
  enabledTools: Set<string>
  /** The hidden set (`spec.hiddenTools`) this connection's list last reflected. */
  hiddenSeen: HiddenTools | undefined
}

/** What the tool, resource and prompt registrations of one instance share. */
export interface InstanceParts<D, C> {
  runtime: Runtime<D, C>
  mcp: McpServer
  state: InstanceState
  /** The client of this connection (2025-era access; a 2026-07-28 call wraps it per request). */
  client: ConnectionClientAccess
  handlerContext(signal: AbortSignal): HandlerContext<D>
  sessionFor(sessionId: string | undefined): SessionAccess
  /** This connection's tasks, when it offers them (a connection, not a lone request, with task tools). */
  tasks: TaskRegistry | undefined
}

/** A server's own mapping first, then errno codes; `undefined` when nothing recognises the error. */
export function mapError<D, C>(runtime: Runtime<D, C>, error: unknown): ToolError | undefined {
  if (ToolError.is(error)) return error
  return runtime.spec.mapError?.(error) ?? mapSystemError(error)
}
