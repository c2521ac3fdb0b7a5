import { randomFillSync } from 'node:crypto'
import type { Logger } from '../logger.js'
import { type OtlpProtocol, otelExports, otlpUrls } from '../observe-config.js'
import type { ExportSignal } from './otel-export-thread.js'

// OpenTelemetry traces and metrics over OTLP/HTTP, configured the standard way: the endpoint from
// --otel-endpoint or OTEL_EXPORTER_OTLP_ENDPOINT (signals at /v1/traces and /v1/metrics), the
// encoding from OTEL_EXPORTER_OTLP_PROTOCOL (JSON unless http/protobuf), the service from
// OTEL_SERVICE_NAME (default mcp-server-<name>), more resource attributes from
// OTEL_RESOURCE_ATTRIBUTES. Nothing global is registered: spans are parented explicitly (core
// keeps the current call in its own AsyncLocalStorage), so a host application's OpenTelemetry
// setup and Keel's never interfere.

type Attributes = Record<string, string | number | boolean>

/** A started span, as the observer uses it. */
export interface OtelSpan {
  /**
   * Whether the span is recorded (its trace is sampled). A span that is not is never made current
   * and never a parent: its request runs with no context at all.
   */
  readonly recording: boolean
  setAttribute(key: string, value: string | number | boolean): void
  setAttributes(attributes: Attributes): void
  setError(message: string): void
  end(): void
  /** The SDK context this span is current in (for children). */
  readonly context: unknown
}

export interface OtelTracing {
  startSpan(
    name: string,
    options: {
      kind: 'server' | 'client' | 'internal'
      parent?: OtelSpan | undefined
      attributes?: Attributes
    },
  ): OtelSpan
  /** The parent a client's W3C trace context (`_meta.traceparent`) names, if it is well formed. */
  remoteParent(traceparent: unknown, tracestate: unknown): OtelSpan | undefined
  recordCall(tool: string, outcome: string, seconds: number): void
  recordUpstream(system: string, outcome: string, seconds: number): void
  shutdown(): Promise<void>
}

/**
 * The buckets of both duration histograms, in seconds: the ones the MCP semantic conventions give
 * for `mcp.server.operation.duration`.
 */
export const DURATION_BOUNDARIES = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]

type HrTime = [number, number]
const hrTime = (ms: number): HrTime => [Math.trunc(ms / 1000), Math.round((ms % 1000) * 1e6)]

/** One attribute set's histogram: bucket counts (the last one above every boundary), sum, count, range. */
interface DurationSeries {
  readonly attributes: Attributes
  counts: number[]
  sum: number
  count: number
  min: number
  max: number
  start: HrTime
}

/** Series kept per two attribute values (tool and outcome, system and outcome); at most 10,000 of them. */
class Durations {
  readonly #series = new Map<string, Map<string, DurationSeries>>()
  size = 0
  constructor(
    readonly name: string,
    readonly description: string,
    readonly attributesOf: (first: string, second: string) => Attributes,
  ) {}

  record(first: string, second: string, seconds: number): void {
    let inner = this.#series.get(first)
    if (!inner) {
      if (this.size >= 10_000) return
      inner = new Map()
      this.#series.set(first, inner)
    }
    let series = inner.get(second)
    if (!series) {
      if (this.size >= 10_000) return
      series = {
        attributes: this.attributesOf(first, second),
        counts: new Array(DURATION_BOUNDARIES.length + 1).fill(0),
        sum: 0,
        count: 0,
        min: Number.POSITIVE_INFINITY,
        max: Number.NEGATIVE_INFINITY,
        start: hrTime(Date.now()),
      }
      inner.set(second, series)
      this.size += 1
    }
    let bucket = 0
    while (bucket < DURATION_BOUNDARIES.length && seconds > (DURATION_BOUNDARIES[bucket] as number)) bucket++
    ;(series.counts[bucket] as number) += 1
    series.sum += seconds
    series.count += 1
    if (seconds < series.min) series.min = seconds
    if (seconds > series.max) series.max = seconds
  }

  /** The data points as the SDK's reader exports them; with delta temporality, each series starts over. */
  points(now: HrTime, delta: boolean) {
    const points = []
    for (const inner of this.#series.values())
      for (const series of inner.values()) {
        if (delta && series.count === 0) continue
        points.push({
          attributes: series.attributes,
          startTime: series.start,
          endTime: now,
          value: {
            buckets: { boundaries: DURATION_BOUNDARIES, counts: [...series.counts] },
            sum: series.sum,
            count: series.count,
            min: series.min,
            max: series.max,
          },
        })
        if (delta) {
          series.counts.fill(0)
          series.sum = 0
          series.count = 0
          series.min = Number.POSITIVE_INFINITY
          series.max = Number.NEGATIVE_INFINITY
          series.start = now
        }
      }
    return points
  }
}

type Sdk = typeof import('./otel-sdk.vendor.js')

/**
 * The OTLP metrics: the two duration histograms, kept here and handed to the SDK's reader when it
 * collects (a metric producer, the SDK's own extension point): a record is a lookup and a few
 * additions, where the SDK's instrument hashes the attribute set on every record.
 */
function startMetrics(
  sdk: Sdk,
  resource: import('./otel-sdk.vendor.js').CollectionResult['resourceMetrics']['resource'],
  exporter: import('./otel-sdk.vendor.js').OTLPMetricExporterBase,
  options: { serviceVersion: string; metricIntervalMs?: number },
) {
  const callDuration = new Durations(
    'mcp.server.operation.duration',
    'Tool call duration',
    (tool, outcome) => ({
      'gen_ai.tool.name': tool,
      'keel.tool.outcome': outcome,
    }),
  )
  const upstreamDuration = new Durations(
    'keel.upstream.duration',
    'Upstream request duration',
    (system, outcome) => ({
      'keel.upstream.system': system,
      'keel.upstream.outcome': outcome,
    }),
  )
  const scope = { name: 'keel-mcp', version: options.serviceVersion }
  const reader = new sdk.PeriodicExportingMetricReader({
    exporter,
    // OTEL_METRIC_EXPORT_INTERVAL is the standard knob (ms; default 60 s).
    exportIntervalMillis:
      options.metricIntervalMs ?? (Number(process.env.OTEL_METRIC_EXPORT_INTERVAL) || 60_000),
    metricProducers: [
      {
        collect: async () => {
          const temporality = reader.selectAggregationTemporality(sdk.InstrumentType.HISTOGRAM)
          const delta = temporality === sdk.AggregationTemporality.DELTA
          const now = hrTime(Date.now())
          const metrics = [callDuration, upstreamDuration]
            .filter((durations) => durations.size > 0)
            .map((durations): import('./otel-sdk.vendor.js').MetricData => ({
              descriptor: {
                name: durations.name,
                description: durations.description,
                unit: 's',
                valueType: sdk.ValueType.DOUBLE,
              },
              aggregationTemporality: temporality,
              dataPointType: sdk.DataPointType.HISTOGRAM,
              dataPoints: durations.points(now, delta),
            }))
          return {
            resourceMetrics: { resource, scopeMetrics: metrics.length ? [{ scope, metrics }] : [] },
            errors: [],
          }
        },
      },
    ],
  })
  const meterProvider = new sdk.MeterProvider({ resource, readers: [reader] })
  return { meterProvider, callDuration, upstreamDuration }
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
/**
 * The longest `tracestate` read: 512 characters, what W3C asks every vendor to pass on and the most
 * the OpenTelemetry API keeps (it drops a longer one whole); checked before parsing.
 */
const MAX_TRACESTATE = 512

const INVALID_TRACE_ID = '0'.repeat(32)
const INVALID_SPAN_ID = '0'.repeat(16)

/**
 * Trace and span ids for the SDK's tracer (its `idGenerator` option), cut from a pool of random
 * hex: 4 KiB from `crypto.randomFillSync`, hex-encoded once, serve about 170 spans. The SDK's own
 * generator writes `Math.random()` into a buffer and hex-encodes it for every id; every request
 * pays for two ids, sampled or not (the standard samplers decide on the trace id).
 */
export class PooledIdGenerator {
  #hex = ''
  #at = 0

  #take(chars: number): string {
    if (this.#at + chars > this.#hex.length) {
      this.#hex = randomFillSync(Buffer.allocUnsafe(4096)).toString('hex')
      this.#at = 0
    }
    const id = this.#hex.slice(this.#at, this.#at + chars)
    this.#at += chars
    return id
  }

  generateTraceId(): string {
    const id = this.#take(32)
    // An all-zero id is invalid (W3C trace context): 2^-128 of the time, take the next one.
    return id === INVALID_TRACE_ID ? this.generateTraceId() : id
  }

  generateSpanId(): string {
    const id = this.#take(16)
    return id === INVALID_SPAN_ID ? this.generateSpanId() : id
  }
}

const CONTENT_TYPES: Record<OtlpProtocol, Record<string, string>> = {
  'http/json': { 'Content-Type': 'application/json' },
  'http/protobuf': { 'Content-Type': 'application/x-protobuf' },
}

/** An agent's options that a worker can be given: strings, numbers, booleans and bytes. */
function cloneable(options: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(options)) {
    const plain = ['string', 'number', 'boolean'].includes(typeof value) || value instanceof Uint8Array
    const list =
      Array.isArray(value) && value.every((each) => typeof each === 'string' || each instanceof Uint8Array)
    if (plain || list) kept[key] = value
  }
  return kept
}

/**
 * Each signal's export options, the SDK's own reading of --otel-endpoint and the
 * OTEL_EXPORTER_OTLP_* variables (headers, compression, timeout, certificates) as its
 * OTLPTraceExporter and OTLPMetricExporter make them; and the same, resolved, for the export thread.
 */
export async function otlpExports(
  sdk: Sdk,
  /** The base endpoint, or each signal's URL (a signal without one is not exported). */
  endpoints: string | Record<ExportSignal['signal'], string | undefined>,
  protocols: Record<ExportSignal['signal'], OtlpProtocol> = { TRACES: 'http/json', METRICS: 'http/json' },
): Promise<{
  exportOptions: Record<ExportSignal['signal'], import('./otel-sdk.vendor.js').OtlpHttpOptions>
  signals: ExportSignal[]
}> {
  const urls = typeof endpoints === 'string' ? otlpUrls({ otelEndpoint: endpoints }) : endpoints
  const read = (signal: ExportSignal['signal'], path: string) =>
    sdk.convertLegacyHttpOptions(
      urls[signal] ? { url: urls[signal] } : {},
      signal,
      path,
      CONTENT_TYPES[protocols[signal]],
    )
  const exportOptions = { TRACES: read('TRACES', 'v1/traces'), METRICS: read('METRICS', 'v1/metrics') }
  const signals = await Promise.all(
    (['TRACES', 'METRICS'] as const).map(async (signal) => {
      const { url, headers, compression, timeoutMillis, agentFactory, userAgent } = exportOptions[signal]
      // The SDK's agent for https carries the variables' certificates; for http it would only load
      // Node's http here, on the thread that serves calls, for the SDK's default (keep-alive).
      const protocol = new URL(url).protocol
      const agent = (
        protocol === 'http:' ? { options: { keepAlive: true } } : await agentFactory(protocol)
      ) as {
        options?: Record<string, unknown>
      }
      return {
        signal,
        url,
        headers: (await headers()) ?? {},
        compression,
        timeoutMillis,
        agentOptions: cloneable(agent.options ?? {}),
        userAgent,
      }
    }),
  )
  return { exportOptions, signals }
}

/**
 * The client's W3C `tracestate`, parsed by the API (at most 32 well-formed members; the rest are
 * dropped): it goes on with the trace, on every span under it. One over 512 characters is not read.
 */
function vendorState(sdk: Sdk, tracestate: unknown) {
  if (typeof tracestate !== 'string' || !tracestate || tracestate.length > MAX_TRACESTATE) return {}
  const traceState = sdk.createTraceState(tracestate)
  return traceState.serialize() ? { traceState } : {}
}

/** The resource every span and metric carries: the SDK's defaults, the service, OTEL_RESOURCE_ATTRIBUTES. */
function otelResource(sdk: Sdk, options: { serviceName: string; serviceVersion: string }) {
  const detected = sdk.detectResources({ detectors: [sdk.envDetector] })
  return sdk
    .defaultResource()
    .merge(
      sdk.resourceFromAttributes({
        'service.name': process.env.OTEL_SERVICE_NAME || options.serviceName,
        'service.version': options.serviceVersion,
      }),
    )
    .merge(detected)
}

/**
 * The tracer provider: spans batched to `exporter`, a batch a second unless OTEL_BSP_SCHEDULE_DELAY
 * says otherwise (the SDK reads it); with no exporter (OTEL_TRACES_EXPORTER=none, or no traces
 * endpoint) no span is recorded at all: every request is sampled off.
 */
function tracerProvider(
  sdk: Sdk,
  resource: ReturnType<typeof otelResource>,
  exporter: ConstructorParameters<Sdk['BatchSpanProcessor']>[0] | undefined,
) {
  return new sdk.BasicTracerProvider({
    resource,
    ...(exporter
      ? {
          spanProcessors: [
            new sdk.BatchSpanProcessor(
              exporter,
              process.env.OTEL_BSP_SCHEDULE_DELAY?.trim() ? {} : { scheduledDelayMillis: 1000 },
            ),
          ],
        }
      : { sampler: new sdk.AlwaysOffSampler() }),
    idGenerator: new PooledIdGenerator(),
  })
}

export async function startTracing(options: {
  /** The base endpoint (signals at `/v1/traces` and `/v1/metrics`). */
  endpoint?: string | undefined
  /** Where spans go, as is, instead of the base's `/v1/traces`. */
  tracesEndpoint?: string | undefined
  /** Where OTLP metrics go, as is, instead of the base's `/v1/metrics`. */
  metricsEndpoint?: string | undefined
  serviceName: string
  serviceVersion: string
  logger: Logger
  /** How often metrics are pushed (default 60 s; tests shorten it). */
  metricIntervalMs?: number
}): Promise<OtelTracing> {
  // What Keel cannot send fails the start before anything loads (the configuration has checked it
  // already; a caller that starts tracing itself meets the same).
  const urls = otlpUrls({
    otelEndpoint: options.endpoint,
    otelTracesEndpoint: options.tracesEndpoint,
    otelMetricsEndpoint: options.metricsEndpoint,
  })
  const exports = otelExports(process.env, urls)
  const { protocols } = exports
  const loaded = (await import('./otel-sdk.vendor.js')) as typeof import('./otel-sdk.vendor.js') & {
    default?: typeof import('./otel-sdk.vendor.js')
  }
  const sdk = loaded.default ?? loaded
  const resource = otelResource(sdk, options)
  // The exports' HTTP requests go out from a worker thread (see ./otel-export-thread.ts); batching
  // and serializing stay here, in the SDK's own exporter code, as its OTLPTraceExporter and
  // OTLPMetricExporter would do them.
  const { exportOptions, signals } = await otlpExports(sdk, urls, protocols)
  const thread = new sdk.ExportThread(signals)
  const delegate = <Internal, Response>(
    signal: ExportSignal['signal'],
    serializer: import('./otel-sdk.vendor.js').Serializer<Internal, Response>,
  ) => sdk.createOtlpNetworkExportDelegate(exportOptions[signal], serializer, thread.transport(signal))
  const protobuf = (signal: ExportSignal['signal']) => protocols[signal] === 'http/protobuf'
  const provider = tracerProvider(
    sdk,
    resource,
    exports.traces
      ? new sdk.OTLPExporterBase(
          protobuf('TRACES')
            ? delegate('TRACES', sdk.ProtobufTraceSerializer)
            : delegate('TRACES', sdk.JsonTraceSerializer),
        )
      : undefined,
  )
  const tracer = provider.getTracer('keel-mcp', options.serviceVersion)
  // With OTEL_METRICS_EXPORTER=none the histograms are neither kept nor exported.
  const metrics = exports.metrics
    ? startMetrics(
        sdk,
        resource,
        new sdk.OTLPMetricExporterBase(
          protobuf('METRICS')
            ? delegate('METRICS', sdk.ProtobufMetricsSerializer)
            : delegate('METRICS', sdk.JsonMetricsSerializer),
        ),
        options,
      )
    : undefined
  const kinds = { server: sdk.SpanKind.SERVER, client: sdk.SpanKind.CLIENT, internal: sdk.SpanKind.INTERNAL }

  type SdkSpan = ReturnType<typeof tracer.startSpan>
  type SdkContext = ReturnType<typeof sdk.context.active>
  // A span's context (what its children are parented to) is made when a child first asks: most
  // spans (a request with no upstream call) never have one.
  class Handle implements OtelSpan {
    #context: SdkContext | undefined
    readonly recording: boolean
    constructor(
      readonly span: SdkSpan,
      readonly parentContext: SdkContext,
    ) {
      this.recording = span.isRecording()
    }
    get context(): SdkContext {
      this.#context ??= sdk.trace.setSpan(this.parentContext, this.span)
      return this.#context
    }
    setAttribute(key: string, value: string | number | boolean) {
      this.span.setAttribute(key, value)
    }
    setAttributes(attributes: Attributes) {
      this.span.setAttributes(attributes)
    }
    setError(message: string) {
      this.span.setStatus({ code: sdk.SpanStatusCode.ERROR, message })
    }
    end() {
      this.span.end()
    }
  }
  // Nothing is registered globally, and a host's global context is none of Keel's: a span with no
  // parent starts a trace (the client's W3C context aside).
  const root: SdkContext = sdk.ROOT_CONTEXT
  const none = {}
  return {
    startSpan(name, { kind, parent, attributes }) {
      const parentContext = (parent?.context as SdkContext | undefined) ?? root
      // The SDK copies the attributes into the span: a caller may pass the same object every time.
      const span = tracer.startSpan(
        name,
        { kind: kinds[kind], attributes: attributes ?? none },
        parentContext,
      )
      return new Handle(span, parentContext)
    },
    remoteParent(traceparent, tracestate) {
      if (typeof traceparent !== 'string') return undefined
      const match = TRACEPARENT.exec(traceparent.trim().toLowerCase())
      if (!match || /^0+$/.test(match[1] as string) || /^0+$/.test(match[2] as string)) return undefined
      const remote = sdk.trace.setSpanContext(root, {
        traceId: match[1] as string,
        spanId: match[2] as string,
        traceFlags: Number.parseInt(match[3] as string, 16) & sdk.TraceFlags.SAMPLED,
        isRemote: true,
        ...vendorState(sdk, tracestate),
      })
      return {
        recording: false,
        context: remote,
        setAttribute() {},
        setAttributes() {},
        setError() {},
        end() {},
      }
    },
    recordCall(tool, outcome, seconds) {
      metrics?.callDuration.record(tool, outcome, seconds)
    },
    recordUpstream(system, outcome, seconds) {
      metrics?.upstreamDuration.record(system, outcome, seconds)
    },
    async shutdown() {
      thread.draining()
      await Promise.allSettled([provider.shutdown(), metrics?.meterProvider.shutdown()]).then((results) => {
        for (const result of results)
          if (result.status === 'rejected')
            options.logger.warn('OpenTelemetry export did not finish at shutdown', {
              error: (result.reason as Error)?.message,
            })
      })
      await thread.close()
    },
  }
}
