import type { z } from 'zod'
import type { CommonFlagName, OptionSpecs, ParsedConfig, PositionalSpec } from './config.js'
import type { ErrorMapper } from './errors.js'
import type { Logger } from './logger.js'

/** A zod object shape: the arguments (or structured output) of a tool. */
export type Shape = Record<string, z.ZodType>

/** Parsed arguments of a shape. */
export type Infer<S extends Shape> = z.output<z.ZodObject<S>>

/**
 * Behaviour hints a client uses to decide what to auto-approve. Keel requires the two that
 * matter most to be stated on every tool; the others default to the MCP defaults.
 */
export interface ToolAnnotations {
  /** The tool does not change its environment. */
  readOnlyHint: boolean
  /** A write may destroy data (ignored when read-only). */
  destructiveHint?: boolean
  /** Calling again with the same arguments has no further effect. */
  idempotentHint?: boolean
  /** The tool talks to an open world (the internet, a shared service) rather than a closed one. */
  openWorldHint: boolean
}

/** A content block a tool may return (text, image, audio, resource link, embedded resource). */
export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'audio'; data: string; mimeType: string }
  | {
      type: 'resource_link'
      uri: string
      name: string
      title?: string
      description?: string
      mimeType?: string
    }
  | {
      type: 'resource'
      resource:
        | { uri: string; mimeType?: string; text: string }
        | { uri: string; mimeType?: string; blob: string }
    }

/** What a tool's `run` returns. */
export type ToolOutput<O extends Shape | undefined> = (O extends Shape
  ? { /** The structured result, checked against the output schema. */ data: z.input<z.ZodObject<O>> }
  : { data?: undefined }) & {
  /** The text the model reads. Default: `data` as JSON. */
  text?: string
  /** Content blocks; replaces the text block (images, audio, links). */
  content?: ContentBlock[]
}

/** A root (allowed directory) the client offered. */
export interface ClientRoot {
  uri: string
  name?: string
}

/** What a handler can ask of the connected client. */
export interface ClientAccess {
  /** The client's name and version, when known. */
  readonly info: { name: string; version: string } | undefined
  /** The client's declared capabilities (roots, sampling, elicitation…). */
  readonly capabilities: Record<string, unknown> | undefined
  /** The client's roots, or `undefined` when it offers none. Cached until the client says they changed. */
  roots(): Promise<ClientRoot[] | undefined>
  /**
   * Asks the client's model for a completion (sampling). Rejects with a `ToolError`
   * (`unavailable`) when a 2025-era client did not declare sampling.
   */
  sample(params: Record<string, unknown>, options?: AskOptions): Promise<unknown>
  /**
   * Asks the user for input through the client (elicitation). Rejects with a `ToolError`
   * (`unavailable`) when a 2025-era client did not declare elicitation.
   */
  elicit(params: Record<string, unknown>, options?: AskOptions): Promise<unknown>
}

/** Options of {@link ClientAccess.sample} and {@link ClientAccess.elicit}. */
export interface AskOptions {
  /**
   * On 2026-07-28 requests, the name of the embedded request in the `input_required` result
   * (`[A-Za-z0-9_.-]`, at most 64 characters). Default: `keel_elicit_<n>` / `keel_sample_<n>`
   * for the n-th question of the call. Ignored on 2025-era connections.
   */
  key?: string
}

/** The per-call context a tool receives. */
export interface ToolContext<D> {
  /** The server's dependencies, built once per process by `createDeps`. */
  readonly deps: D
  /** The name of the tool this call runs (what a server names its upstream work after). */
  readonly tool: string
  /** Aborted when the client cancels, the call times out, or the server shuts down. */
  readonly signal: AbortSignal
  /** Logger for this call; warnings and errors are also forwarded to the client. */
  readonly log: Logger
  /** Sends `notifications/progress` when the client asked for progress; otherwise a no-op. */
  progress(progress: number, total?: number, message?: string): Promise<void>
  /** The connected client. */
  readonly client: ClientAccess
  /** The JSON-RPC id of this call. */
  readonly requestId: string | number
  /**
   * The state this call works on, for a tool that declares `handle` (see {@link ToolSpec.handle}):
   * the handle passed, the connection's own state, or a handle minted for this call.
   */
  readonly handle?: HandleBinding
  /** The client connection this call belongs to (for per-client state such as a browser context). */
  readonly session: SessionAccess
  /**
   * The bearer credential presented with this HTTP request, if any. Used by servers that act with
   * each caller's own credential (e.g. a GitHub token per request); never log it.
   */
  readonly auth: RequestAuth | undefined
  /**
   * Adds tools to this connection's list (tool search: a toolset not enabled at start, turned on
   * when the model asks for it) and tells the client the list changed. Only tools the server
   * offers are added, after `--read-only` and `--exclude-tools`; unknown names are ignored. On a
   * request served on its own (2026-07-28, `--stateless`) nothing lasts beyond it: `lasting` is
   * false. Needs `dynamicTools` in the server spec.
   */
  enableTools(names: readonly string[]): Promise<{ enabled: string[]; lasting: boolean }>
}

/** The client connection a call belongs to. */
export interface SessionAccess {
  /**
   * A stable id for the connection: `stdio` on stdio, the `Mcp-Session-Id` of a 2025-era HTTP
   * session, and `undefined` for a request served on its own (2026-07-28 or `--stateless` HTTP),
   * which belongs to no connection.
   */
  readonly id: string | undefined
  /**
   * Runs `callback` once when the connection ends (session closed or reaped, stdin closed, the
   * request answered for a request served on its own, or process shutdown). Errors are logged.
   */
  onClose(callback: () => void | Promise<void>): void
}

/**
 * The state a stateful call is bound to. Keep the state under `key`, never under the handle:
 * the handle is the caller's secret and stays out of maps, logs and errors.
 */
export interface HandleBinding {
  /** The handle kind (`session`). */
  readonly kind: string
  /**
   * What the server keeps this state under: `handle:<id>` for a handle, the connection's id
   * (`stdio`, a 2025-era session id) for the connection's own state.
   */
  readonly key: string
  /** The handle the model passes, or `undefined` for a connection's own state. */
  readonly token: string | undefined
  /** Minted by this call: core adds it to the result (structuredContent and text). */
  readonly minted: boolean
  /** Ends the handle (the kind's `close` frees the state); later calls with it are refused. */
  close(): Promise<void>
  /** Internal: the call is over (core calls it). */
  release(): void
}

/**
 * A kind of state handle a server mints (SEP-2567, "explicit state handles"): a 2026-07-28
 * request belongs to no connection, so the model carries the handle from call to call.
 */
export interface HandleKindSpec<D> {
  /** The tool that opens one (named in errors: "call open_session"). */
  opener: string
  /** The tool that ends one, if any (named when the cap is reached). */
  closer?: string
  /**
   * Handles one subject (the OAuth `sub`; without OAuth, everyone) keeps; past it the least
   * recently used idle one ends. Default 32. A function reads it from the deps (a configured limit).
   */
  maxPerSubject?: number | ((deps: D) => number)
  /**
   * Handles of this kind the process keeps, all subjects together; past it the least recently used
   * idle one ends. Default 1024. Set it at or below what the state can hold (e.g. browser contexts),
   * so an abandoned handle gives way before the server refuses new state.
   */
  maxTotal?: number | ((deps: D) => number)
  /** The text line a result with a new handle starts with (default: the handle and "pass it on"). */
  mintedText?(token: string): string
  /** Frees the state kept under `key` (on close, idle expiry, eviction, or a connection's end). */
  close(key: string, deps: D): Promise<void> | void
}

/** How a tool uses a handle kind. */
export interface ToolHandleUse {
  /** The kind, a key of {@link ServerSpec.handles}; the tool's input takes it as an argument of that name. */
  kind: string
  /**
   * `always`: the tool opens new state each call (`open_session`). `when-missing`: on a lone
   * request without the argument it opens new state (`navigate`). Unset: it needs existing state.
   */
  opens?: 'always' | 'when-missing'
}

/** An icon (MCP 2025-11-25 `Icon`). */
export interface Icon {
  /** An `https:` URL or a `data:` URI. Keel's servers ship theirs as data URIs. */
  src: string
  mimeType?: string
  /** `WxH` sizes, or `any` for scalable images. */
  sizes?: string[]
  theme?: 'light' | 'dark'
}

/** An SVG shipped with the server, as an icon served inline (a data URI: nothing is fetched). */
export function svgIcon(svg: string, theme?: 'light' | 'dark'): Icon {
  return {
    src: `data:image/svg+xml;base64,${Buffer.from(svg, 'utf8').toString('base64')}`,
    mimeType: 'image/svg+xml',
    sizes: ['any'],
    ...(theme ? { theme } : {}),
  }
}

/** A bearer credential presented on an HTTP request. */
/** Tools a server hides: names, or names with the reason a call is refused ({@link ServerSpec.hiddenTools}). */
export type HiddenTools = ReadonlySet<string> | ReadonlyMap<string, string>

export interface RequestAuth {
  /**
   * The raw token, exactly as presented after `Bearer ` — without OAuth only. With OAuth
   * (`--auth-issuer`) the token was issued for this server alone and must never be passed on to
   * another service (MCP forbids token passthrough), so it is not handed to tools.
   */
  readonly token?: string
  /**
   * With OAuth (`--auth-issuer`), the verified token's subject (`sub`): who the caller is, for
   * audit logs and per-user behaviour. Undefined without OAuth (the token is then unverified).
   */
  readonly subject?: string | undefined
  /** With OAuth: the issuer that vouched for the token. */
  readonly issuer?: string
  /** With OAuth: the OAuth client the token was issued to. */
  readonly clientId?: string | undefined
  /** With OAuth: the token's granted scopes. */
  readonly scopes?: readonly string[]
}

/** A tool definition. Create with {@link defineTool} or a {@link toolFactory}. */
export interface ToolSpec<I extends Shape, O extends Shape | undefined, D> {
  /** `snake_case`, verb first, `[a-z0-9_]`, at most 64 characters, no server prefix. */
  name: string
  /** Human-readable name. */
  title: string
  /** What it does, when to use it, what it returns, which tool instead. Short: it costs tokens. */
  description: string
  /**
   * Argument shape; every field documented with `.describe()`. May be a function that returns it,
   * called once when the shape is first needed ({@link shapeOf}): a start that lists the tool's
   * schemas from the bin's cache then builds none of them before the first call.
   */
  input: I | (() => I)
  /**
   * Structured output shape; results carry `structuredContent` and a text fallback. May be a
   * function that returns it, as `input`.
   */
  output?: O | (() => O)
  annotations: ToolAnnotations
  /** Toolset this tool belongs to (for `--toolsets`). Default `default`. */
  toolset?: string
  /** Per-call time limit in ms; default from `--tool-timeout` (60 s). */
  timeoutMs?: number
  /**
   * Lets clients run the tool as a task (MCP 2025-11-25): `optional` (either way) or `required`
   * (only as a task). Unset: never as a task. Opt in for calls that can take long.
   */
  taskSupport?: 'optional' | 'required'
  /** Icons shown next to the tool by clients that display them. */
  icons?: Icon[]
  /**
   * Arguments whose values the audit log (`--audit-log`) may record, e.g. `['path']` or
   * `['repo', 'issue_number']`. Others are recorded by size only. Never name one that can hold a
   * secret or a document's content. Replaces the server's {@link ServerSpec.auditArguments} for
   * this tool (`[]`: none recorded).
   */
  auditArguments?: readonly (keyof Infer<I> & string)[]
  /**
   * The tool works on state that spans calls: core binds each call to it (see
   * {@link HandleKindSpec}) and gives the tool `context.handle`.
   */
  handle?: ToolHandleUse
  run(args: Infer<I>, context: ToolContext<D>): Promise<ToolOutput<O>> | ToolOutput<O>
}

/** A tool of any shape, as servers list them. */
// biome-ignore lint/suspicious/noExplicitAny: a heterogeneous list of tools needs an existential type
export type AnyTool<D = any> = ToolSpec<any, any, D>

/** Shapes given as functions, built once each. */
const builtShapes = new WeakMap<() => Shape, Shape>()

/**
 * A tool's input or output shape: the shape itself, or what the function that builds it returns
 * (called once per process).
 */
export function shapeOf<S extends Shape>(shape: S | (() => S)): S {
  if (typeof shape !== 'function') return shape
  let built = builtShapes.get(shape)
  if (!built) {
    built = shape()
    builtShapes.set(shape, built)
  }
  return built as S
}

/**
 * Defines a tool. Identity at runtime; gives the `run` arguments their types from the shapes.
 * Use {@link toolFactory} when tools need typed `deps`.
 */
export function defineTool<I extends Shape, O extends Shape | undefined = undefined, D = unknown>(
  spec: ToolSpec<I, O, D>,
): ToolSpec<I, O, D> {
  return spec
}

/** Returns a `defineTool` whose tools receive `deps` of type `D`. */
export function toolFactory<D>() {
  return <I extends Shape, O extends Shape | undefined = undefined>(
    spec: ToolSpec<I, O, D>,
  ): ToolSpec<I, O, D> => spec
}

/** Context of resource and prompt handlers. */
export interface HandlerContext<D> {
  readonly deps: D
  readonly signal: AbortSignal
  readonly log: Logger
  readonly client: ClientAccess
}

/** Contents of one resource read. */
export type ResourceContents =
  | { uri: string; mimeType?: string; text: string }
  | { uri: string; mimeType?: string; blob: string }

/** A resource listed by a template's `list`. */
export interface ListedResource {
  uri: string
  name: string
  title?: string
  description?: string
  mimeType?: string
}

/** What a subscription hook returns: a function that stops watching, or nothing. */
export type Unsubscribe = (() => void) | undefined

/** A fixed resource. */
export interface ResourceSpec<D> {
  name: string
  uri: string
  title?: string
  description?: string
  mimeType?: string
  read(uri: URL, context: HandlerContext<D>): Promise<ResourceContents[]> | ResourceContents[]
  /**
   * Called when a client subscribes; call `notify()` when the resource changes; return a disposer.
   * Throw (a `ToolError`) to refuse the subscription: the client gets a JSON-RPC error.
   */
  subscribe?(uri: URL, notify: () => void, context: HandlerContext<D>): Unsubscribe | Promise<Unsubscribe>
}

/** A family of resources addressed by an RFC 6570 URI template. */
export interface ResourceTemplateSpec<D> {
  name: string
  uriTemplate: string
  title?: string
  description?: string
  mimeType?: string
  /** Lists concrete resources (paginated by the server as it sees fit). */
  list?(context: HandlerContext<D>): Promise<ListedResource[]> | ListedResource[]
  /**
   * Completions for template variables. `context.arguments` holds the values the client already
   * chose for the other variables (e.g. the schema when completing a table name).
   */
  complete?: Record<
    string,
    (
      value: string,
      context: HandlerContext<D> & { arguments: Record<string, string> },
    ) => Promise<string[]> | string[]
  >
  read(
    uri: URL,
    variables: Record<string, string | string[]>,
    context: HandlerContext<D>,
  ): Promise<ResourceContents[]> | ResourceContents[]
  /** As {@link ResourceSpec.subscribe}. */
  subscribe?(uri: URL, notify: () => void, context: HandlerContext<D>): Unsubscribe | Promise<Unsubscribe>
}

/** A message of a prompt. */
export interface PromptMessage {
  role: 'user' | 'assistant'
  content: ContentBlock
}

/** A prompt: a user-invoked template. Arguments are strings (MCP's rule). */
export interface PromptSpec<D> {
  name: string
  title?: string
  description?: string
  args?: Record<string, z.ZodType<string | undefined>>
  /** Completions for arguments. */
  complete?: Record<string, (value: string) => Promise<string[]> | string[]>
  run(
    args: Record<string, string | undefined>,
    context: HandlerContext<D>,
  ):
    | Promise<{ description?: string; messages: PromptMessage[] }>
    | { description?: string; messages: PromptMessage[] }
}

/** Everything a server's `createDeps` gets. */
export interface DepsContext<C> {
  /** The parsed configuration (common flags + the server's own options). */
  config: ParsedConfig<C>
  logger: Logger
  /** Registers a secret so it is redacted from every log line and error. */
  addSecret(value: string | undefined): void
  /**
   * The environment the configuration was read from, for values an option names at run time
   * (`--account work=GITHUB_TOKEN_WORK`). Register any secret read from it with `addSecret`.
   */
  env: NodeJS.ProcessEnv
}

/**
 * A server: data (name, options, tools, resources, prompts) plus domain hooks. Core turns it
 * into a command line, transports, error mapping, logging and a clean lifecycle.
 */
export interface ServerSpec<D, C = Record<string, unknown>> {
  /** Short server name (`fs`, `postgres`); `serverInfo.name` becomes `keel-<name>` unless it contains a dash. */
  name: string
  /** From the server's own package.json, so it never drifts. */
  version: string
  title?: string
  /** `serverInfo.icons`: shown in clients' server lists. Use {@link svgIcon} (no network fetch). */
  icons?: Icon[]
  /** One line shown in `--help`. */
  description: string
  /** The bin name shown in `--help` (`mcp-server-fs`). */
  bin?: string
  /** Instructions the client gives the model. May depend on the config. */
  instructions?: string | ((config: ParsedConfig<C>) => string)
  /** The server's own options (flags and env vars), validated with zod. */
  options?: OptionSpecs<C>
  /** Positional arguments (e.g. the fs server's directories). */
  positionals?: PositionalSpec
  /** Named toolsets and what they hold, for `--toolsets`. */
  toolsets?: Record<string, string>
  /** Toolsets enabled when `--toolsets` is not given (default: all). */
  defaultToolsets?: string[]
  /** Extra `--help` text (environment, examples). */
  helpFooter?: string
  /**
   * Common flags renamed for this server, when it needs the name for an option of its own
   * (`{ 'allowed-origins': 'http-allowed-origins' }`). Env vars keep their names.
   */
  renameFlags?: Partial<Record<CommonFlagName, string>>
  tools: AnyTool<D>[] | ((config: ParsedConfig<C>) => AnyTool<D>[])
  /**
   * Arguments whose values the audit log (`--audit-log`) records, by name, on every tool of the
   * server that takes them: what tells an operator what a call touched (a path, a repository and
   * an issue number, a channel id), never an argument that can hold a secret, a message or a
   * document's content. Values pass through the redactor. A tool's own `auditArguments` replaces
   * this list for that tool. Unset: no argument values are recorded, only their size.
   */
  auditArguments?: readonly string[]
  /**
   * Tools may add others to a connection's list at run time ({@link ToolContext.enableTools}):
   * the server then promises `tools.listChanged` and sends `notifications/tools/list_changed`.
   */
  dynamicTools?: boolean
  /**
   * Tools to hide from now on (e.g. those the credential turned out not to allow), asked at every
   * `tools/list` and `tools/call`: hidden tools are neither listed nor callable. Return the same
   * set object until it changes; after a call that changed it the connection gets
   * `notifications/tools/list_changed` (the server then promises `tools.listChanged`). `auth` is
   * the request's credential (undefined on stdio), so what is hidden can follow each caller's token.
   * A map gives the reason per tool: a call to a hidden tool is then answered with a
   * `permission_denied` tool error saying it, instead of an unknown-tool error.
   */
  hiddenTools?(deps: D, auth: RequestAuth | undefined): HiddenTools | undefined
  resources?: ResourceSpec<D>[]
  resourceTemplates?: ResourceTemplateSpec<D>[]
  prompts?: PromptSpec<D>[]
  /** Kinds of explicit state handles the server mints (SEP-2567), by argument name (`session`). */
  handles?: Record<string, HandleKindSpec<D>>
  /**
   * The server's start reads nothing but its configuration (no file, no network, no clock before
   * the first request), so its answers to a client's handshake and listings follow from its code,
   * its configuration and the requests alone: a bin may then answer them from the record of an
   * earlier start with the same inputs, before the server's code is compiled, and the server checks
   * those answers against its own (packages/core/src/replay.ts). Default false.
   */
  handshakeReplay?: boolean
  /** Builds dependencies once per process. Keep it cheap: open pools and clients lazily. */
  createDeps(context: DepsContext<C>): D | Promise<D>
  /**
   * Optional: work the first call would otherwise pay for (connect a pool, load a parser). Called
   * once per process, after the first client finished `initialize` (on `notifications/initialized`;
   * on the 2026-07-28 era, which has none, with the first request), off the start-up path and never
   * awaited by a request. A failure is logged at debug level and
   * the first call simply does the work itself. `signal` aborts when the process shuts down.
   */
  warmUp?(deps: D, signal: AbortSignal): Promise<void> | void
  /**
   * Optional: a call core runs after `warmUp` resolves, with the result discarded and nothing
   * observed (no metrics, audit line or rate budget). Over stdio with core's fast path it is
   * rehearsed 8 times on the way a client's `tools/call` takes there (the request's checks, core's
   * handler, the pipeline, the result's check and encoding); elsewhere it runs once through core's
   * tools/call pipeline (arguments checked, the tool run, its output checked and projected). The
   * first real call then finds that code run and its schemas built. It must be read-only and cheap;
   * a result that is an error ends the rehearsals, and a failure is ignored.
   */
  warmCall?: { readonly tool: string; readonly arguments: Record<string, unknown> }
  /** Releases what `createDeps` built (pools, browsers). Called once on shutdown, with a deadline. */
  dispose?(deps: D): Promise<void> | void
  /**
   * Readiness (`/readyz`): resolves when the server's upstream is usable now (database reachable,
   * browser launchable, API token valid); rejects with what is wrong. Cheap and side-effect free:
   * load balancers ask often. Unset: ready whenever the process serves.
   */
  ready?(deps: D): Promise<unknown>
  /** Maps domain errors to tool errors (pure). */
  mapError?: ErrorMapper
  /** Called when a client says its roots changed. */
  onRootsChanged?(context: HandlerContext<D>): void | Promise<void>
}

/** Defines a server. Identity at runtime; checks the shape at compile time. */
export function defineServer<D, C = Record<string, unknown>>(spec: ServerSpec<D, C>): ServerSpec<D, C> {
  return spec
}
