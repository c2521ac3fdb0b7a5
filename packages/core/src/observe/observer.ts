import { AsyncLocalStorage } from 'node:async_hooks'
import { createHash } from 'node:crypto'
import diagnostics from 'node:diagnostics_channel'
import type { Logger } from '../logger.js'
import { type ObserveConfig, otlpUrls } from '../observe-config.js'
import { redactor } from '../redact.js'
import { AuditSink, isoNow, type PendingLine } from './audit.js'
import type {
  Admission,
  CallEnd,
  CallObservation,
  CallStart,
  ObserverHooks,
  RequestObservation,
  SentResult,
} from './hooks.js'
import { Counter, Gauge, Histogram, type HistogramValue, Registry, type SeriesEntry } from './metrics.js'
import type { OtelSpan, OtelTracing } from './otel.js'
import type { Bucket, RateLimiter } from './rate-limit.js'

// The observer behind core's hooks when an operations flag is set: Prometheus metrics, the audit
// log, per-client rate limits and (with an OTLP endpoint) OpenTelemetry spans. One request span per
// JSON-RPC request, the tool call's attributes on it, and a child span per upstream call: explicit
// (traceUpstream) or seen on Node's diagnostics channels for fetch (undici) and node:http clients.
//
// What a call pays for (docs/observability.md, "What it costs"): without tracing, no
// AsyncLocalStorage is ever entered (on Node 20 one that has run installs promise hooks that tax
// every promise of the process), a call's metrics are additions to series handles kept per tool
// and outcome, and an audit line is one string written with the others of the same turn.

interface Scope {
  span: OtelSpan | undefined
  tool: string | undefined
  /**
   * A request's scope whose tool call has not started yet: that call enriches the request span
   * (no second span for the tool) and clears this.
   */
  request: boolean
}

/** A request span's name and its attributes that do not change from one request to the next. */
interface RequestKind {
  name: string
  attributes: Record<string, string>
}

/** MCP methods counted by name; anything else is `other` (method names come from clients). */
const KNOWN_METHODS = new Set([
  'initialize',
  'ping',
  'server/discover',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'subscriptions/listen',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'logging/setLevel',
  'tasks/get',
  'tasks/list',
  'tasks/result',
  'tasks/cancel',
])

export interface ObserverOptions {
  config: ObserveConfig
  serviceName: string
  serviceVersion: string
  logger: Logger
  /** Per-replica or shared rate limiter (Redis) when a limit is set. */
  limiter: RateLimiter | undefined
  tracing: OtelTracing | undefined
}

export const hashId = (id: string) => createHash('sha256').update(id).digest('hex').slice(0, 16)

/**
 * The longest argument value an audit line holds, in characters (Linux's longest path): a longer
 * one is cut there and marked, so that no call can make the log grow by its arguments' size.
 */
export const AUDIT_VALUE_CHARS = 4096

/** A string longer than {@link AUDIT_VALUE_CHARS}, cut there and marked; a shorter one as it is. */
const cutLong = (value: string) =>
  value.length > AUDIT_VALUE_CHARS
    ? `${value.slice(0, AUDIT_VALUE_CHARS)}…[${value.length - AUDIT_VALUE_CHARS} more characters]`
    : value

/**
 * Audit argument values up to this length are redacted once and remembered, at most
 * {@link REDACTED_COUNT} of them: a path, a repository or a channel comes back call after call,
 * and each redaction is ten scans.
 */
const REDACTED_LENGTH = 256
const REDACTED_COUNT = 512

/** Hashed ids remembered at most (sessions and handles repeat across calls). */
const MAX_HASHED = 4096

/** A tool's metric series, made on first use (a series appears once it has counted something). */
interface ToolSeries {
  outcomes: Map<string, SeriesEntry<number>>
  errors: Map<string, SeriesEntry<number>>
  duration: SeriesEntry<HistogramValue> | undefined
  /** The tool's name as a JSON string, redacted once (audit lines). */
  json: string
}

type Settle = (start: CallStart, result: CallEnd, series: ToolSeries, began: number) => number

/** A request observed without tracing: counted when it ends, run as it is. */
class CountedRequest implements RequestObservation {
  #ended = false
  constructor(
    readonly requests: Counter,
    readonly series: RequestSeries,
    readonly method: string,
    readonly sized: ((sent: SentResult) => void) | undefined,
  ) {}
  run<T>(work: () => T): T {
    return work()
  }
  end(errorCode?: number, sent?: SentResult): void {
    if (this.#ended) return
    this.#ended = true
    countRequest(this.requests, this.series, this.method, errorCode)
    if (sent) this.sized?.(sent)
  }
}

/** The request counter's series of one method, by outcome, kept: counting builds no label key. */
type RequestSeries = Map<
  string,
  { ok: SeriesEntry<number> | undefined; error: SeriesEntry<number> | undefined }
>

function countRequest(
  requests: Counter,
  series: RequestSeries,
  method: string,
  errorCode: number | undefined,
): void {
  let kept = series.get(method)
  if (!kept) {
    kept = { ok: undefined, error: undefined }
    series.set(method, kept)
  }
  if (errorCode === undefined) {
    kept.ok ??= requests.series({ method, outcome: 'ok' })
    kept.ok.value += 1
  } else {
    kept.error ??= requests.series({ method, outcome: 'error' })
    kept.error.value += 1
  }
}

/** A call observed without tracing: run as it is, its metrics and audit line at its end. */
class CountedCall implements CallObservation {
  #ended = false
  constructor(
    readonly settle: Settle,
    readonly start: CallStart,
    readonly series: ToolSeries,
    readonly began: number,
  ) {}
  run<T>(work: () => Promise<T>): Promise<T> {
    return work()
  }
  end(result: CallEnd): void {
    if (this.#ended) return
    this.#ended = true
    this.settle(this.start, result, this.series, this.began)
  }
}

/** The scope of a request whose trace is not sampled, entered when other requests run beside it. */
const UNSAMPLED: Scope = Object.freeze({ span: undefined, tool: undefined, request: false }) as Scope

const ADMITTED: Admission = Object.freeze({ allowed: true, retryAfterMs: 0 })

/**
 * A call's audit line before it is text: what the call reported, kept until the log is written
 * (at most 50 ms, see audit.ts), when the lines of that write are made one after the other.
 */
class AuditLine implements PendingLine {
  readonly outcome: string
  readonly errorKind: string | undefined
  readonly handle: string | undefined
  #bytes: number | undefined
  /** The result until its size is known: only this line holds it, and lets it go once sized. */
  #result: unknown
  constructor(
    readonly at: number,
    readonly start: CallStart,
    end: CallEnd,
    readonly seconds: number,
    readonly series: ToolSeries,
    readonly format: (line: AuditLine) => string,
  ) {
    this.outcome = end.outcome
    this.errorKind = end.errorKind
    this.handle = end.handle
    this.#bytes = end.resultBytes
    this.#result = end.resultBytes === undefined ? end.result : undefined
  }
  /** The transport wrote the result: its size, and the result is no longer held. */
  sized(bytes: number): void {
    this.#bytes = bytes
    this.#result = undefined
  }
  /** The result whose size is still to be measured (the transport has not given it), if any. */
  get unsized(): object | undefined {
    return this.#bytes === undefined ? (this.#result as object) : undefined
  }
  resultBytes(): number {
    return this.#bytes ?? Buffer.byteLength(JSON.stringify(this.#result) ?? '')
  }
  text(): string {
    return this.format(this)
  }
}

export class Observer implements ObserverHooks {
  readonly registry = new Registry()
  readonly #scope = new AsyncLocalStorage<Scope>()
  readonly #options: ObserverOptions
  readonly #audit: AuditSink | undefined
  readonly #tools = new Map<string, ToolSeries>()
  readonly #requestSeries: RequestSeries = new Map()
  readonly #hashed = new Map<string, string>()
  readonly #requestKinds = new Map<string, RequestKind>()
  /** The request kind found last, and what it was found for (a run of calls of one tool asks again and again). */
  #lastKind: { method: string; tool: string | undefined; transport: string; kind: RequestKind } | undefined
  /** Audit lines waiting for their result's size, by result: the transport gives it (see {@link #sized}). */
  readonly #unsized = new Map<object, AuditLine>()
  /** Short argument values and their redaction, as of the redactor's {@link #redactedVersion}. */
  readonly #redacted = new Map<string, string>()
  #redactedVersion = -1
  /** Tool calls running now: without tracing, what tells an HTTP request it serves a call. */
  #running = 0
  /** Whether a span is made for requests, calls and upstream requests (an OTLP endpoint is set). */
  readonly #traced: boolean
  /** With tracing: requests (and calls outside any request) running now, sampled or not. */
  #open = 0
  /**
   * With tracing: the scope of the recorded request that runs with no context entered, because no
   * other request was running when it began. Only one can be (any request that begins while it
   * runs enters a context of its own), so what runs with no context is either its work or none.
   */
  #lone: Scope | undefined
  /** Whether a context has been entered since none was last open (see {@link #leave}). */
  #entered = false
  /** Contexts open now: of requests and calls that entered one, and of traced upstream calls. */
  #enteredOpen = 0
  readonly sizes: boolean
  /** {@link #sized} when sizes are recorded. */
  readonly #sizedBy: ((sent: SentResult) => void) | undefined
  readonly #buckets: { call: Bucket[]; write: Bucket[] }
  readonly #unsubscribe: Array<() => void> = []
  readonly #excludedOrigins: string[]

  readonly requests = this.registry.register(
    new Counter('mcp_requests_total', 'JSON-RPC requests served, by method and outcome.'),
  )
  readonly calls = this.registry.register(
    new Counter('mcp_tool_calls_total', 'Tool calls, by tool and outcome.'),
  )
  readonly errors = this.registry.register(
    new Counter('mcp_tool_errors_total', 'Failed tool calls, by tool and error kind.'),
  )
  readonly durations = this.registry.register(
    new Histogram('mcp_tool_call_duration_seconds', 'Tool call duration, by tool.'),
  )
  readonly inFlight = this.registry.register(new Gauge('mcp_tool_calls_in_flight', 'Tool calls running now.'))
  readonly limited = this.registry.register(
    new Counter('mcp_rate_limited_total', 'Calls refused by a rate limit, by budget.'),
  )
  readonly upstreamCalls = this.registry.register(
    new Counter(
      'mcp_upstream_requests_total',
      'Upstream requests (database, HTTP APIs, browser), by system and outcome.',
    ),
  )
  readonly upstreamDurations = this.registry.register(
    new Histogram('mcp_upstream_request_duration_seconds', 'Upstream request duration, by system.'),
  )
  readonly #gauges = new Map<string, Gauge>()
  readonly #inFlight = this.inFlight.series({})

  constructor(options: ObserverOptions) {
    this.#options = options
    this.#traced = options.tracing !== undefined
    const { config } = options
    this.sizes = Boolean(config.auditLog)
    this.#sizedBy = this.sizes ? this.#sized : undefined
    // A bucket holds one second's worth of calls (at least one); --rate-limit-burst sizes the
    // general budget's.
    const secondsWorth = (rate: { count: number; perMs: number }) =>
      Math.max(1, Math.ceil((rate.count * 1000) / rate.perMs))
    const call = config.rateLimit
      ? [
          {
            budget: 'call',
            rate: config.rateLimit,
            burst: config.rateLimitBurst ?? secondsWorth(config.rateLimit),
          },
        ]
      : []
    const write = config.writeRateLimit
      ? [{ budget: 'write', rate: config.writeRateLimit, burst: secondsWorth(config.writeRateLimit) }]
      : []
    this.#buckets = { call, write: [...call, ...write] }
    if (config.auditLog) {
      this.#audit = new AuditSink(config.auditLog, (error: Error) =>
        options.logger.error('the audit log cannot be written', { error: error.message }),
      )
    }
    this.#excludedOrigins = Object.values(otlpUrls(config)).flatMap((url) =>
      url ? [new URL(url).origin] : [],
    )
    this.registry.register(
      new Gauge('process_resident_memory_bytes', 'Resident set size of the server process.', () => [
        { value: process.memoryUsage.rss() },
      ]),
    )
    this.registry.register(
      new Gauge('nodejs_heap_used_bytes', 'V8 heap in use.', () => [
        { value: process.memoryUsage().heapUsed },
      ]),
    )
    this.registry.register(
      new Gauge('process_cpu_seconds_total', 'User and system CPU time of the process.', () => {
        const usage = process.cpuUsage()
        return [{ value: (usage.user + usage.system) / 1e6 }]
      }),
    )
    const started = Date.now() / 1000 - process.uptime()
    this.registry.register(
      new Gauge('process_start_time_seconds', 'Start time of the process, in Unix seconds.', () => [
        { value: started },
      ]),
    )
    this.#watchHttpClients()
  }

  /**
   * Whether a context is entered now (and with it, on Node 20, promise hooks on every promise of
   * the process): only while a recorded request overlaps others, a call of its own runs or an
   * upstream call is traced.
   */
  get contextEntered(): boolean {
    return this.#entered
  }

  /** A gauge read at scrape time (sessions, handles), registered once by name. */
  gauge(name: string, help: string, read: () => number): void {
    if (this.#gauges.has(name)) return
    this.#gauges.set(name, this.registry.register(new Gauge(name, help, () => [{ value: read() }])))
  }

  request(info: {
    method: string
    id: string | number
    transport: 'stdio' | 'http'
    params: unknown
  }): RequestObservation {
    const method = KNOWN_METHODS.has(info.method) ? info.method : 'other'
    const tracing = this.#options.tracing
    if (!tracing) return new CountedRequest(this.requests, this.#requestSeries, method, this.#sizedBy)
    const tool =
      info.method === 'tools/call' && typeof (info.params as { name?: unknown })?.name === 'string'
        ? ((info.params as { name: string }).name as string)
        : undefined
    const meta = (info.params as { _meta?: Record<string, unknown> } | undefined)?._meta
    const kind = this.#requestKind(info.method, tool, info.transport)
    // The sampler decides on the trace alone (the standard ones, all Keel reads from the
    // environment, never look at attributes): a span not recorded is given none.
    const span = tracing.startSpan(kind.name, {
      kind: 'server',
      parent: meta ? tracing.remoteParent(meta.traceparent, meta.tracestate) : undefined,
    })
    // The context a request runs in: none when it is the only one running (what runs with no
    // context is then its own, #current), else its scope. A request whose trace is not sampled is
    // no span, and neither is anything in it (its call and upstream requests are counted, never
    // traced: a child is only made under a recorded span, and code with no scope makes none); it
    // enters a scope that says so only while a recorded request runs with no context (#lone),
    // whose scope its code would otherwise take. So requests that are not sampled never turn
    // contexts (and their promise hooks) on by themselves, however many overlap.
    const alone = this.#open === 0
    this.#open += 1
    let scope: Scope | undefined
    if (span.recording) {
      span.setAttributes(kind.attributes)
      span.setAttribute('jsonrpc.request.id', String(info.id))
      scope = { span, tool, request: true }
      if (alone) this.#lone = scope
    } else if (!alone && this.#lone !== undefined) scope = UNSAMPLED
    const entered = alone ? undefined : scope
    if (entered) this.#enteredOpen += 1
    let ended = false
    return {
      run: (work) => (entered ? this.#enter(entered, work) : work()),
      end: (errorCode, sent) => {
        if (ended) return
        ended = true
        this.#close(scope, entered !== undefined)
        countRequest(this.requests, this.#requestSeries, method, errorCode)
        if (sent) this.#sizedBy?.(sent)
        if (!span.recording) return
        if (errorCode !== undefined) {
          span.setAttribute('error.type', String(errorCode))
          span.setAttribute('rpc.response.status_code', String(errorCode))
          span.setError(`JSON-RPC error ${errorCode}`)
        }
        span.end()
      },
    }
  }

  /** A request span's name and its attributes that do not change from one request to the next, made once. */
  #requestKind(method: string, tool: string | undefined, transport: 'stdio' | 'http'): RequestKind {
    const last = this.#lastKind
    if (last && last.method === method && last.tool === tool && last.transport === transport) return last.kind
    const kind = this.#findKind(method, tool, transport)
    this.#lastKind = { method, tool, transport, kind }
    return kind
  }

  #findKind(method: string, tool: string | undefined, transport: 'stdio' | 'http'): RequestKind {
    const key = tool === undefined ? `${transport} ${method}` : `${transport} ${method}\u0000${tool}`
    let kind = this.#requestKinds.get(key)
    if (!kind) {
      kind = {
        name: tool ? `${method} ${tool}` : method,
        attributes: Object.freeze({
          'mcp.method.name': method,
          'network.transport': transport === 'stdio' ? 'pipe' : 'tcp',
          ...(tool ? { 'gen_ai.tool.name': tool, 'gen_ai.operation.name': 'execute_tool' } : {}),
        }),
      }
      // Method and tool names come from clients: what is kept is bounded.
      if (this.#requestKinds.size >= MAX_HASHED) this.#requestKinds.clear()
      this.#requestKinds.set(key, kind)
    }
    return kind
  }

  call(start: CallStart): CallObservation {
    const began = performance.now()
    const series = this.#toolSeries(start.tool)
    this.#inFlight.value += 1
    this.#running += 1
    const tracing = this.#options.tracing
    const outer = tracing ? this.#current() : undefined
    // Without tracing, or in a request whose trace is not sampled (a request over stdio or HTTP
    // always has a scope when it is recorded), the call is counted and not traced.
    if (!tracing || (outer ? !outer.span : start.transport !== 'memory'))
      return new CountedCall(this.#settle, start, series, began)
    const era = start.era === 'modern' ? '2026-07-28' : '2025'
    const session = start.session ? this.#hash(start.session) : undefined
    // A tool call served through a request span (stdio, HTTP) enriches that span and runs in the
    // request's scope (no second context entered), which it claims: a call the tool makes in
    // process then sees no request of its own, and gets a span of its own, as a call made outside
    // any request does.
    let span: OtelSpan
    let run: CallObservation['run']
    if (outer?.request && outer.tool === start.tool && outer.span) {
      outer.request = false
      span = outer.span
      span.setAttribute('mcp.protocol.generation', era)
      run = (work) => work()
    } else {
      span = tracing.startSpan(`tools/call ${start.tool}`, {
        kind: 'internal',
        parent: outer?.span,
        attributes: {
          'mcp.method.name': 'tools/call',
          'gen_ai.tool.name': start.tool,
          'gen_ai.operation.name': 'execute_tool',
          'mcp.protocol.generation': era,
        },
      })
      if (!span.recording) return new CountedCall(this.#settle, start, series, began)
      // A call of its own (outside any request, or one a tool makes in process) always enters its
      // context, and counts as open until it ends.
      const scope: Scope = { span, tool: start.tool, request: false }
      this.#open += 1
      this.#enteredOpen += 1
      run = (work) => this.#enter(scope, work)
    }
    if (session) span.setAttribute('mcp.session.id', session)
    if (start.subject) span.setAttribute('enduser.id', start.subject)
    let ended = false
    return {
      run,
      end: (result: CallEnd) => {
        if (ended) return
        ended = true
        this.#settle(start, result, series, began)
        span.setAttribute('keel.tool.outcome', result.outcome)
        if (result.handle) span.setAttribute('keel.handle.id', this.#hash(result.handle))
        if (result.errorKind) {
          span.setAttribute('error.type', result.errorKind)
          span.setError(result.errorKind)
        }
        if (span !== outer?.span) {
          span.end()
          this.#close(undefined, true)
        }
      },
    }
  }

  /** The scope of the running code: its context's, else the lone request's (see {@link #lone}). */
  #current(): Scope | undefined {
    return this.#scope.getStore() ?? this.#lone
  }

  #enter<T>(scope: Scope, work: () => T): T {
    this.#entered = true
    return this.#scope.run(scope, work)
  }

  /** A request (or a call of its own) ended; `entered` when it ran in a context of its own. */
  #close(scope: Scope | undefined, entered: boolean) {
    this.#open -= 1
    if (scope !== undefined && this.#lone === scope) this.#lone = undefined
    if (entered) this.#leave()
  }

  /**
   * A context closed. Once none is open, contexts are switched off: on Node 20 an
   * AsyncLocalStorage that has run keeps promise hooks on every promise of the process until it is
   * disabled. Requests that run with no context of their own (one alone, or not sampled) may still
   * run: their code has no context either way. The next context entered switches them on again.
   */
  #leave() {
    this.#enteredOpen -= 1
    if (this.#enteredOpen === 0 && this.#entered) {
      this.#entered = false
      this.#scope.disable()
    }
  }

  /** A call's end: its metrics and audit line. Returns its duration in seconds. */
  readonly #settle: Settle = (start, result, series, began) => {
    const seconds = (performance.now() - began) / 1000
    this.#inFlight.value -= 1
    this.#running -= 1
    let outcome = series.outcomes.get(result.outcome)
    if (!outcome) {
      outcome = this.calls.series({ tool: start.tool, outcome: result.outcome })
      series.outcomes.set(result.outcome, outcome)
    }
    outcome.value += 1
    if (result.errorKind) {
      let errors = series.errors.get(result.errorKind)
      if (!errors) {
        errors = this.errors.series({ tool: start.tool, kind: result.errorKind })
        series.errors.set(result.errorKind, errors)
      }
      errors.value += 1
    }
    series.duration ??= this.durations.series({ tool: start.tool })
    this.durations.record(series.duration, seconds)
    // OpenTelemetry's metrics count every call, sampled or not.
    this.#options.tracing?.recordCall(start.tool, result.outcome, seconds)
    if (this.#audit) this.#writeAudit(start, result, seconds, series)
    return seconds
  }

  #toolSeries(tool: string): ToolSeries {
    let series = this.#tools.get(tool)
    if (!series) {
      series = {
        outcomes: new Map(),
        errors: new Map(),
        duration: undefined,
        json: JSON.stringify(redactor.redact(tool)),
      }
      this.#tools.set(tool, series)
    }
    return series
  }

  /** {@link hashId}, remembered: a session's or handle's id comes back on every call. */
  #hash(id: string): string {
    let hashed = this.#hashed.get(id)
    if (hashed === undefined) {
      if (this.#hashed.size >= MAX_HASHED) this.#hashed.clear()
      hashed = hashId(id)
      this.#hashed.set(id, hashed)
    }
    return hashed
  }

  admit(client: string, readOnly: boolean): Admission | Promise<Admission> {
    const buckets = readOnly ? this.#buckets.call : this.#buckets.write
    const limiter = this.#options.limiter
    if (!limiter || !buckets.length) return ADMITTED
    if (limiter.takeNow) return this.#counted(limiter.takeNow(client, buckets))
    return limiter.take(client, buckets).then((decision) => this.#counted(decision))
  }

  #counted(decision: Admission): Admission {
    if (!decision.allowed) this.limited.inc({ budget: decision.budget ?? 'call' })
    return decision
  }

  async upstream<T>(
    system: string,
    operation: string,
    work: () => Promise<T>,
    attributes: Record<string, string | number> = {},
  ): Promise<T> {
    const began = performance.now()
    const tracing = this.#options.tracing
    // An upstream span is only ever a child of a recorded one: without tracing, outside a call, or
    // in a call whose trace is not sampled, the request is counted and not traced.
    const outer = tracing ? this.#current() : undefined
    if (!tracing || !outer?.span) {
      try {
        const result = await work()
        this.#upstreamDone(system, 'ok', began, undefined)
        return result
      } catch (error) {
        this.#upstreamDone(system, 'error', began, undefined, (error as Error)?.name ?? 'Error')
        throw error
      }
    }
    const span = tracing.startSpan(`${system} ${operation}`, {
      kind: 'client',
      parent: outer.span,
      attributes: { 'keel.upstream.system': system, ...attributes },
    })
    const inner: Scope = { span, tool: outer.tool, request: false }
    this.#enteredOpen += 1
    try {
      const result = await this.#enter(inner, work)
      this.#upstreamDone(system, 'ok', began, span)
      return result
    } catch (error) {
      this.#upstreamDone(system, 'error', began, span, (error as Error)?.name ?? 'Error')
      throw error
    } finally {
      this.#leave()
    }
  }

  #upstreamDone(
    system: string,
    outcome: string,
    began: number,
    span: OtelSpan | undefined,
    errorType?: string,
  ) {
    const seconds = (performance.now() - began) / 1000
    this.upstreamCalls.inc({ system, outcome })
    this.upstreamDurations.observe({ system }, seconds)
    this.#options.tracing?.recordUpstream(system, outcome, seconds)
    if (span) {
      if (errorType) {
        span.setAttribute('error.type', errorType)
        span.setError(errorType)
      }
      span.end()
    }
  }

  /**
   * HTTP requests a tool makes (Octokit through fetch, Slack's client through node:http) are seen on
   * Node's diagnostics channels: counted and traced as upstream calls of the call that made them.
   * Requests outside a tool call (the OTLP exporter itself) are left alone.
   */
  #watchHttpClients() {
    const open = new WeakMap<object, { began: number; span: OtelSpan | undefined; system: string }>()
    const begin = (request: object, origin: string, method: string, path: string) => {
      // In a recorded trace, the call's scope says whether a request serves a call (and which span
      // is its parent). Without tracing, or when the trace is not sampled, no scope is kept (see
      // the top of this file): a request started while a tool call runs is counted as that call's
      // (docs/observability.md says where that differs), and not traced.
      const scope = this.#traced ? this.#current() : undefined
      if (scope?.span ? !scope.tool : this.#running === 0) return
      if (this.#excludedOrigins.includes(origin)) return
      const host = (() => {
        try {
          return new URL(origin).host
        } catch {
          return origin
        }
      })()
      const span = scope?.span
        ? this.#options.tracing?.startSpan(`${method} ${host}`, {
            kind: 'client',
            parent: scope.span,
            attributes: {
              'http.request.method': method,
              'server.address': host,
              'url.path': path.split('?')[0] ?? path,
            },
          })
        : undefined
      open.set(request, { began: performance.now(), span, system: `http:${host}` })
    }
    const finish = (request: object, status: number | undefined, error?: string) => {
      const entry = open.get(request)
      if (!entry) return
      open.delete(request)
      if (status !== undefined) entry.span?.setAttribute('http.response.status_code', status)
      const failed = error !== undefined || (status !== undefined && status >= 500)
      this.#upstreamDone(
        entry.system,
        failed ? 'error' : 'ok',
        entry.began,
        entry.span,
        error ?? (failed ? String(status) : undefined),
      )
    }
    // biome-ignore lint/suspicious/noExplicitAny: diagnostics channel messages are untyped (undici's and node:http's shapes)
    const subscribe = (name: string, handler: (message: any) => void) => {
      diagnostics.subscribe(name, handler)
      this.#unsubscribe.push(() => diagnostics.unsubscribe(name, handler))
    }
    subscribe('undici:request:create', ({ request }) =>
      begin(request, request.origin, request.method, request.path),
    )
    const statuses = new WeakMap<object, number>()
    subscribe('undici:request:headers', ({ request, response }) => statuses.set(request, response.statusCode))
    subscribe('undici:request:trailers', ({ request }) => finish(request, statuses.get(request)))
    subscribe('undici:request:error', ({ request, error }) =>
      finish(request, statuses.get(request), error?.name ?? 'Error'),
    )
    subscribe('http.client.request.start', ({ request }) => {
      // `host` is the name alone; the Host header Node sets carries the port when it is not the
      // scheme's default, as undici's `origin` does (the same span name whichever client sent it).
      const origin = `${request.protocol ?? 'http:'}//${request.getHeader?.('host') ?? request.host}`
      begin(request, origin, request.method, request.path)
      request.once('error', (error: Error) => finish(request, undefined, error.name))
    })
    subscribe('http.client.response.finish', ({ request, response }) => finish(request, response.statusCode))
  }

  /**
   * A call's audit line, kept as its parts and made into text when the log is written, with the
   * other lines of the same write (see {@link AuditLine}).
   */
  #writeAudit(start: CallStart, result: CallEnd, seconds: number, series: ToolSeries) {
    const line = new AuditLine(Date.now(), start, result, seconds, series, this.#auditText)
    const sent = result.result
    if (result.resultBytes === undefined && typeof sent === 'object' && sent !== null)
      this.#unsized.set(sent, line)
    ;(this.#audit as AuditSink).write(line)
  }

  /**
   * One audit line as text: every value in it is core's own (outcome, transport, era, sizes, the
   * time, a hashed id) or redacted (the tool's name once, the subject and the safe argument values
   * on every line), the same line `redactor.redactValue` of the record would give.
   */
  readonly #auditText = (audit: AuditLine): string => {
    const { start } = audit
    const unsized = audit.unsized
    if (unsized !== undefined) this.#unsized.delete(unsized)
    let line = `{"time":"${isoNow(audit.at)}","tool":${audit.series.json},"outcome":"${audit.outcome}"`
    if (audit.errorKind) line += `,"error_kind":${JSON.stringify(redactor.redact(audit.errorKind))}`
    line += `,"duration_ms":${Math.round(audit.seconds * 100_000) / 100},"transport":"${start.transport}","era":"${start.era}"`
    if (start.subject) line += `,"subject":${JSON.stringify(this.#redactText(start.subject))}`
    if (start.session) line += `,"session":"${this.#hash(start.session)}"`
    if (audit.handle) line += `,"handle":"${this.#hash(audit.handle)}"`
    line += `,"arguments_bytes":${Buffer.byteLength(JSON.stringify(start.sent) ?? '')},"result_bytes":${audit.resultBytes()}`
    return start.safeArguments
      ? `${line},"arguments":${JSON.stringify(redactor.redactValue(start.safeArguments, 0, this.#auditValue))}}\n`
      : `${line}}\n`
  }

  /**
   * A string of an argument value in an audit line: redacted, then cut (a value deeper than the
   * redactor walks comes here as its JSON text, and is cut as a whole).
   */
  readonly #auditValue = (text: string): string => cutLong(this.#redactText(text))

  /** `redactor.redact`, remembered for short texts until a secret is registered. */
  readonly #redactText = (text: string): string => {
    if (text.length > REDACTED_LENGTH) return redactor.redact(text)
    if (this.#redactedVersion !== redactor.version) {
      this.#redacted.clear()
      this.#redactedVersion = redactor.version
    }
    let out = this.#redacted.get(text)
    if (out === undefined) {
      out = redactor.redact(text)
      if (this.#redacted.size >= REDACTED_COUNT) this.#redacted.clear()
      this.#redacted.set(text, out)
    }
    return out
  }

  /** A response carried a result whose audit line waits for its size: that size, from the transport. */
  readonly #sized = (sent: SentResult): void => {
    if (typeof sent.result !== 'object' || sent.result === null) return
    const line = this.#unsized.get(sent.result)
    if (!line) return
    this.#unsized.delete(sent.result)
    line.sized(sent.bytes)
  }

  async close(): Promise<void> {
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe()
    await this.#options.limiter?.close()
    await this.#options.tracing?.shutdown()
    this.#audit?.close()
  }
}
