import type { Logger } from '../logger.js'

// OpenTelemetry traces and metrics over OTLP/HTTP, configured the standard way: the endpoint from
// --otel-endpoint or OTEL_EXPORTER_OTLP_ENDPOINT (signals at /v1/traces and /v1/metrics), the
// service from OTEL_SERVICE_NAME (default mcp-server-<name>), more resource attributes from
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

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

export async function startTracing(options: {
  endpoint: string
  serviceName: string
  serviceVersion: string
  logger: Logger
  /** How often metrics are pushed (default 60 s; tests shorten it). */
  metricIntervalMs?: number
}): Promise<OtelTracing> {
  const loaded = (await import('./otel-sdk.vendor.js')) as typeof import('./otel-sdk.vendor.js') & {
    default?: typeof import('./otel-sdk.vendor.js')
  }
  const sdk = loaded.default ?? loaded
  const base = options.endpoint.replace(/\/+$/, '')
  const detected = sdk.detectResources({ detectors: [sdk.envDetector] })
  const resource = sdk
    .defaultResource()
    .merge(
      sdk.resourceFromAttributes({
        'service.name': process.env.OTEL_SERVICE_NAME || options.serviceName,
        'service.version': options.serviceVersion,
      }),
    )
    .merge(detected)
  const processor = new sdk.BatchSpanProcessor(new sdk.OTLPTraceExporter({ url: `${base}/v1/traces` }), {
    scheduledDelayMillis: 1000,
  })
  const provider = new sdk.BasicTracerProvider({ resource, spanProcessors: [processor] })
  const tracer = provider.getTracer('keel-mcp', options.serviceVersion)
  const meterProvider = new sdk.MeterProvider({
    resource,
    readers: [
      new sdk.PeriodicExportingMetricReader({
        exporter: new sdk.OTLPMetricExporter({ url: `${base}/v1/metrics` }),
        // OTEL_METRIC_EXPORT_INTERVAL is the standard knob (ms; default 60 s).
        exportIntervalMillis:
          options.metricIntervalMs ?? (Number(process.env.OTEL_METRIC_EXPORT_INTERVAL) || 60_000),
      }),
    ],
  })
  const meter = meterProvider.getMeter('keel-mcp', options.serviceVersion)
  const callDuration = meter.createHistogram('mcp.server.operation.duration', {
    unit: 's',
    description: 'Tool call duration',
  })
  const upstreamDuration = meter.createHistogram('keel.upstream.duration', {
    unit: 's',
    description: 'Upstream request duration',
  })
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
  // The metric attributes of each tool and outcome (system and outcome), made once: a record then
  // allocates nothing of ours.
  const attributeSets = new Map<string, Attributes>()
  const attributesOf = (key: string, make: () => Attributes): Attributes => {
    let attributes = attributeSets.get(key)
    if (!attributes) {
      attributes = make()
      if (attributeSets.size < 10_000) attributeSets.set(key, attributes)
    }
    return attributes
  }

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
        ...(typeof tracestate === 'string' && tracestate ? { traceState: undefined } : {}),
      })
      return { recording: false, context: remote, setAttribute() {}, setError() {}, end() {} }
    },
    recordCall(tool, outcome, seconds) {
      callDuration.record(
        seconds,
        attributesOf(`call\u0000${tool}\u0000${outcome}`, () => ({
          'gen_ai.tool.name': tool,
          'keel.tool.outcome': outcome,
        })),
      )
    },
    recordUpstream(system, outcome, seconds) {
      upstreamDuration.record(
        seconds,
        attributesOf(`upstream\u0000${system}\u0000${outcome}`, () => ({
          'keel.upstream.system': system,
          'keel.upstream.outcome': outcome,
        })),
      )
    },
    async shutdown() {
      await Promise.allSettled([provider.shutdown(), meterProvider.shutdown()]).then((results) => {
        for (const result of results)
          if (result.status === 'rejected')
            options.logger.warn('OpenTelemetry export did not finish at shutdown', {
              error: (result.reason as Error)?.message,
            })
      })
    },
  }
}
