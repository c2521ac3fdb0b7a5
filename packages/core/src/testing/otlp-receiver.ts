import { createServer, type Server } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'

// A loopback OTLP/HTTP receiver, for tests that check what a server exports: no collector binary is
// packaged for this machine's distribution, so a test receives the spans and metrics itself. It
// takes both OTLP/HTTP encodings, as a collector does: JSON (`application/json`, what
// @opentelemetry/exporter-*-otlp-http send) and protobuf (`application/x-protobuf`, decoded with
// the OTLP message code of @opentelemetry/otlp-transformer).

export type OtlpValue = string | number | boolean

export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string | undefined
  /** The W3C `tracestate` the span carries, if any. */
  traceState: string | undefined
  name: string
  kind: number
  attributes: Record<string, OtlpValue>
  status: { code?: number; message?: string }
  /** The attributes of the resource that exported it. */
  resource: Record<string, OtlpValue>
}

export interface ReceivedHistogramPoint {
  attributes: Record<string, OtlpValue>
  count: number
  sum: number
  bucketCounts: number[]
  explicitBounds: number[]
  /** OTLP's AggregationTemporality: 1 delta, 2 cumulative. */
  temporality: number
}

export interface OtlpReceiver {
  /** The base URL, what `OTEL_EXPORTER_OTLP_ENDPOINT` or `--otel-endpoint` takes. */
  url: string
  /** Spans received on /v1/traces (or any path ending /traces), in arrival order. */
  spans: ReceivedSpan[]
  /** Names of the metrics received on /v1/metrics. */
  metricNames: Set<string>
  /** Histogram points received on /v1/metrics, by metric name. */
  histograms: Map<string, ReceivedHistogramPoint[]>
  /** The Content-Type of every export received, by path (`/v1/traces`, `/v1/metrics`). */
  contentTypes: Map<string, Set<string>>
  /** Forgets what was received so far. */
  clear(): void
  close(): Promise<void>
}

type AnyValue = {
  stringValue?: string
  intValue?: string | number
  doubleValue?: number
  boolValue?: boolean
}
type KeyValue = { key: string; value: AnyValue }

const plainValue = (value: AnyValue): OtlpValue =>
  value.stringValue ??
  (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? value.boolValue ?? ''))
const attributesOf = (list: KeyValue[] = []): Record<string, OtlpValue> =>
  Object.fromEntries(list.map(({ key, value }) => [key, plainValue(value)]))

interface ProtobufType {
  decode(bytes: Uint8Array): unknown
  toObject(message: unknown, options: Record<string, unknown>): Record<string, unknown>
}
const ID_FIELDS = new Set(['traceId', 'spanId', 'parentSpanId'])

/**
 * An OTLP protobuf request as the JSON encoding spells it: ids in hex, 64-bit integers as strings,
 * enums as numbers.
 */
function decodeProtobuf(path: string, body: Buffer): unknown {
  const root = createRequire(import.meta.url)('@opentelemetry/otlp-transformer/build/src/generated/root.js')
  const signal = path.endsWith('/traces') ? 'trace' : 'metrics'
  const type = root.opentelemetry.proto.collector[signal].v1[
    signal === 'trace' ? 'ExportTraceServiceRequest' : 'ExportMetricsServiceRequest'
  ] as ProtobufType
  const object = type.toObject(type.decode(body), { longs: String, enums: Number, defaults: true })
  return JSON.parse(JSON.stringify(object), (key, value) =>
    ID_FIELDS.has(key) && value?.type === 'Buffer' ? Buffer.from(value.data).toString('hex') : value,
  )
}

/**
 * Starts a receiver on a free loopback port. A body that is not OTLP (JSON, or protobuf when its
 * Content-Type says so) gets a 400.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const metricNames = new Set<string>()
  const histograms = new Map<string, ReceivedHistogramPoint[]>()
  const contentTypes = new Map<string, Set<string>>()
  const receiveTraces = (payload: { resourceSpans?: unknown[] }) => {
    for (const resourceSpans of (payload.resourceSpans ?? []) as any[]) {
      const resource = attributesOf(resourceSpans.resource?.attributes)
      for (const scope of resourceSpans.scopeSpans ?? [])
        for (const span of scope.spans ?? [])
          spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId || undefined,
            traceState: span.traceState || undefined,
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            // protobuf spells an unset message as ''; JSON leaves it out.
            status: span.status?.message === '' ? { code: span.status.code } : (span.status ?? {}),
            resource,
          })
    }
  }
  const receiveMetrics = (payload: { resourceMetrics?: unknown[] }) => {
    for (const resourceMetrics of (payload.resourceMetrics ?? []) as any[])
      for (const scope of resourceMetrics.scopeMetrics ?? [])
        for (const metric of scope.metrics ?? []) {
          metricNames.add(metric.name)
          for (const point of metric.histogram?.dataPoints ?? []) {
            const points = histograms.get(metric.name) ?? []
            histograms.set(metric.name, points)
            points.push({
              attributes: attributesOf(point.attributes),
              count: Number(point.count),
              sum: point.sum,
              bucketCounts: (point.bucketCounts ?? []).map(Number),
              explicitBounds: point.explicitBounds ?? [],
              temporality: metric.histogram.aggregationTemporality,
            })
          }
        }
  }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
    })
    req.on('end', () => {
      try {
        const path = req.url ?? ''
        const type = String(req.headers['content-type'] ?? '')
        const seen = contentTypes.get(path) ?? new Set()
        contentTypes.set(path, seen.add(type))
        const body = Buffer.concat(chunks)
        const protobuf = type.startsWith('application/x-protobuf')
        const payload = (protobuf ? decodeProtobuf(path, body) : JSON.parse(body.toString('utf8'))) as Record<
          string,
          unknown[]
        >
        // `/v1/traces` and `/v1/metrics`, or a signal's own endpoint ending the same way.
        if (path.endsWith('/traces')) receiveTraces(payload)
        else if (path.endsWith('/metrics')) receiveMetrics(payload)
        // A collector answers each encoding in its own: an empty protobuf message is no bytes.
        res.writeHead(200, { 'content-type': protobuf ? 'application/x-protobuf' : 'application/json' })
        res.end(protobuf ? '' : '{}')
      } catch {
        res.writeHead(400)
        res.end()
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    metricNames,
    histograms,
    contentTypes,
    clear() {
      spans.length = 0
      metricNames.clear()
      histograms.clear()
      contentTypes.clear()
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
