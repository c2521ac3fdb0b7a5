import { AsyncLocalStorage } from 'node:async_hooks'
import { createHash } from 'node:crypto'
import diagnostics from 'node:diagnostics_channel'
import { createWriteStream, type WriteStream } from 'node:fs'
import type { Logger } from '../logger.js'
import type { ObserveConfig } from '../observe-config.js'
import { redactor } from '../redact.js'
import type {
  Admission,
  CallEnd,
  CallObservation,
  CallStart,
  ObserverHooks,
  RequestObservation,
} from './hooks.js'
import { Counter, Gauge, Histogram, Registry } from './metrics.js'
import type { OtelSpan, OtelTracing } from './otel.js'
import type { Bucket, RateLimiter } from './rate-limit.js'

// The observer behind core's hooks when an operations flag is set: Prometheus metrics, the audit
// log, per-client rate limits and (with an OTLP endpoint) OpenTelemetry spans. One request span per
// JSON-RPC request, the tool call's attributes on it, and a child span per upstream call: explicit
// (traceUpstream) or seen on Node's diagnostics channels for fetch (undici) and node:http clients.

interface Scope {
  span: OtelSpan | undefined
  tool: string | undefined
  /** The request span already carries this call's attributes (no second span for the tool). */
  request: boolean
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

export class Observer implements ObserverHooks {
  readonly registry = new Registry()
  readonly #scope = new AsyncLocalStorage<Scope>()
  readonly #options: ObserverOptions
  readonly #audit: WriteStream | NodeJS.WriteStream | undefined
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

  constructor(options: ObserverOptions) {
    this.#options = options
    const { config } = options
    this.inFlight.set({}, 0)
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
      this.#audit =
        config.auditLog === '-' || config.auditLog === 'stderr'
          ? process.stderr
          : createWriteStream(config.auditLog, { flags: 'a', mode: 0o600 })
      this.#audit.on?.('error', (error: Error) =>
        options.logger.error('the audit log cannot be written', { error: error.message }),
      )
    }
    this.#excludedOrigins = config.otelEndpoint ? [new URL(config.otelEndpoint).origin] : []
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
    const tool =
      info.method === 'tools/call' && typeof (info.params as { name?: unknown })?.name === 'string'
        ? ((info.params as { name: string }).name as string)
        : undefined
    const meta = (info.params as { _meta?: Record<string, unknown> } | undefined)?._meta
    const span = tracing?.startSpan(tool ? `${info.method} ${tool}` : info.method, {
      kind: 'server',
      parent: tracing.remoteParent(meta?.traceparent, meta?.tracestate),
      attributes: {
        'mcp.method.name': info.method,
        'jsonrpc.request.id': String(info.id),
        'network.transport': info.transport === 'stdio' ? 'pipe' : 'tcp',
        ...(tool ? { 'gen_ai.tool.name': tool, 'gen_ai.operation.name': 'execute_tool' } : {}),
      },
    })
    const scope: Scope = { span, tool, request: true }
    let ended = false
    return {
      run: (work) => this.#scope.run(scope, work),
      end: (errorCode) => {
        if (ended) return
        ended = true
        this.requests.inc({ method, outcome: errorCode === undefined ? 'ok' : 'error' })
        if (span) {
          if (errorCode !== undefined) {
            span.setAttribute('error.type', String(errorCode))
            span.setAttribute('rpc.response.status_code', String(errorCode))
            span.setError(`JSON-RPC error ${errorCode}`)
          }
          span.end()
        }
      },
    }
  }

  call(start: CallStart): CallObservation {
    const began = performance.now()
    const outer = this.#scope.getStore()
    const tracing = this.#options.tracing
    const attributes: Record<string, string | number | boolean> = {
      'gen_ai.tool.name': start.tool,
      'gen_ai.operation.name': 'execute_tool',
      'mcp.protocol.generation': start.era === 'modern' ? '2026-07-28' : '2025',
      ...(start.session ? { 'mcp.session.id': hashId(start.session) } : {}),
      ...(start.subject ? { 'enduser.id': start.subject } : {}),
    }
    // A tool call served through a request span (stdio, HTTP) enriches that span; an in-process
    // call has none, and gets a span of its own.
    let span: OtelSpan | undefined
    if (outer?.request && outer.tool === start.tool && outer.span) {
      span = outer.span
      for (const [key, value] of Object.entries(attributes)) span.setAttribute(key, value)
    } else if (tracing) {
      span = tracing.startSpan(`tools/call ${start.tool}`, {
        kind: 'internal',
        parent: outer?.span,
        attributes: { 'mcp.method.name': 'tools/call', ...attributes },
      })
    }
    const scope: Scope = { span, tool: start.tool, request: false }
    this.inFlight.add({}, 1)
    let ended = false
    return {
      run: (work) => this.#scope.run(scope, work),
      end: (result: CallEnd) => {
        if (ended) return
        ended = true
        const seconds = (performance.now() - began) / 1000
        this.inFlight.add({}, -1)
        this.calls.inc({ tool: start.tool, outcome: result.outcome })
        if (result.errorKind) this.errors.inc({ tool: start.tool, kind: result.errorKind })
        this.durations.observe({ tool: start.tool }, seconds)
        tracing?.recordCall(start.tool, result.outcome, seconds)
        if (span) {
          span.setAttribute('keel.tool.outcome', result.outcome)
          if (result.errorKind) {
            span.setAttribute('error.type', result.errorKind)
            span.setError(result.errorKind)
          }
          if (span !== outer?.span) span.end()
        }
        this.#writeAudit(start, result, seconds)
      },
    }
  }

  async admit(client: string, readOnly: boolean): Promise<Admission> {
    const buckets = readOnly ? this.#buckets.call : this.#buckets.write
    const limiter = this.#options.limiter
    if (!limiter || !buckets.length) return { allowed: true, retryAfterMs: 0 }
    const decision = await limiter.take(client, buckets)
    if (!decision.allowed) this.limited.inc({ budget: decision.budget ?? 'call' })
    return decision
  }

  async upstream<T>(
    system: string,
    operation: string,
    work: () => Promise<T>,
    attributes: Record<string, string | number> = {},
  ): Promise<T> {
    const outer = this.#scope.getStore()
    const span = this.#options.tracing?.startSpan(`${system} ${operation}`, {
      kind: 'client',
      parent: outer?.span,
      attributes: { 'keel.upstream.system': system, ...attributes },
    })
    const began = performance.now()
    const inner: Scope = { span: span ?? outer?.span, tool: outer?.tool, request: false }
    try {
      const result = await this.#scope.run(inner, work)
      this.#upstreamDone(system, 'ok', began, span)
      return result
    } catch (error) {
      this.#upstreamDone(system, 'error', began, span, (error as Error)?.name ?? 'Error')
      throw error
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
      const scope = this.#scope.getStore()
      if (!scope?.tool || this.#excludedOrigins.includes(origin)) return
      const host = (() => {
        try {
          return new URL(origin).host
        } catch {
          return origin
        }
      })()
      const span = this.#options.tracing?.startSpan(`${method} ${host}`, {
        kind: 'client',
        parent: scope.span,
        attributes: {
          'http.request.method': method,
          'server.address': host,
          'url.path': path.split('?')[0] ?? path,
        },
      })
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
      const origin = `${request.protocol ?? 'http:'}//${request.host}`
      begin(request, origin, request.method, request.path)
      request.once('error', (error: Error) => finish(request, undefined, error.name))
    })
    subscribe('http.client.response.finish', ({ request, response }) => finish(request, response.statusCode))
  }

  #writeAudit(start: CallStart, result: CallEnd, seconds: number) {
    if (!this.#audit) return
    const line = redactor.redactValue({
      time: new Date().toISOString(),
      tool: start.tool,
      outcome: result.outcome,
      ...(result.errorKind ? { error_kind: result.errorKind } : {}),
      duration_ms: Math.round(seconds * 100_000) / 100,
      transport: start.transport,
      era: start.era,
      ...(start.subject ? { subject: start.subject } : {}),
      ...(start.session ? { session: hashId(start.session) } : {}),
      arguments_bytes: start.argumentsBytes,
      result_bytes: result.resultBytes,
      ...(start.safeArguments ? { arguments: start.safeArguments } : {}),
    })
    this.#audit.write(`${JSON.stringify(line)}\n`)
  }

  async close(): Promise<void> {
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe()
    await this.#options.limiter?.close()
    await this.#options.tracing?.shutdown()
    const audit = this.#audit
    if (audit && audit !== process.stderr)
      await new Promise<void>((resolve) => (audit as WriteStream).end(() => resolve()))
  }
}
