import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

// A loopback OTLP/HTTP receiver (JSON encoding, what @opentelemetry/exporter-*-otlp-http send):
// no collector binary is packaged for this machine, so the test receives the spans itself.

export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string | undefined
  name: string
  kind: number
  attributes: Record<string, string | number | boolean>
  status: { code?: number; message?: string }
  resource: Record<string, string | number | boolean>
}

type AnyValue = {
  stringValue?: string
  intValue?: string | number
  doubleValue?: number
  boolValue?: boolean
}
const plainValue = (value: AnyValue) =>
  value.stringValue ??
  (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? value.boolValue ?? ''))
const attributesOf = (list: Array<{ key: string; value: AnyValue }> = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, plainValue(value)]))

export interface OtlpReceiver {
  url: string
  spans: ReceivedSpan[]
  /** Names of the metrics received on /v1/metrics. */
  metricNames: Set<string>
  close(): Promise<void>
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const metricNames = new Set<string>()
  const server: Server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => {
      body += chunk
    })
    req.on('end', () => {
      try {
        const payload = JSON.parse(body)
        if (req.url === '/v1/traces') {
          for (const resourceSpans of payload.resourceSpans ?? []) {
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
        } else if (req.url === '/v1/metrics') {
          for (const resourceMetrics of payload.resourceMetrics ?? [])
            for (const scope of resourceMetrics.scopeMetrics ?? [])
              for (const metric of scope.metrics ?? []) metricNames.add(metric.name)
        }
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
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
