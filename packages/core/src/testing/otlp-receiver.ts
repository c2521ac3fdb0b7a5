import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

// A loopback OTLP/HTTP receiver (JSON encoding, what @opentelemetry/exporter-*-otlp-http send), for
// tests that check what a server exports: no collector binary is packaged for this machine's
// distribution, so a test receives the spans and metrics itself.

export type OtlpValue = string | number | boolean

export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string | undefined
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
  /** Spans received on /v1/traces, in arrival order. */
  spans: ReceivedSpan[]
  /** Names of the metrics received on /v1/metrics. */
  metricNames: Set<string>
  /** Histogram points received on /v1/metrics, by metric name. */
  histograms: Map<string, ReceivedHistogramPoint[]>
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

/** Starts a receiver on a free loopback port. A body that is not OTLP JSON gets a 400. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const metricNames = new Set<string>()
  const histograms = new Map<string, ReceivedHistogramPoint[]>()
  const receiveTraces = (payload: { resourceSpans?: unknown[] }) => {
    for (const resourceSpans of (payload.resourceSpans ?? []) as any[]) {
      const resource = attributesOf(resourceSpans.resource?.attributes)
      for (const scope of resourceSpans.scopeSpans ?? [])
        for (const span of scope.spans ?? [])
          spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId || undefined,
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            status: span.status ?? {},
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
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => {
      body += chunk
    })
    req.on('end', () => {
      try {
        const payload = JSON.parse(body)
        if (req.url === '/v1/traces') receiveTraces(payload)
        else if (req.url === '/v1/metrics') receiveMetrics(payload)
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{}')
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
    clear() {
      spans.length = 0
      metricNames.clear()
      histograms.clear()
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
