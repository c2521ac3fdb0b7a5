// The SDK's plain server (sdk-noop.mjs, v2) with one OpenTelemetry span recorded for each tool call,
// made by the official OpenTelemetry SDK alone, the way its documentation sets up a Node service:
// the SDK's tracer provider, its batch processor (a batch a second, as Keel's) and its OTLP/HTTP
// exporter (JSON), no context manager, no metrics and no Keel code. The span carries the attributes
// Keel's request span carries. What it costs over sdk-noop.mjs is the official SDK's own cost of a
// recorded span, measured in a serving process: the floor under Keel's "every span recorded".
//   node sdk-noop-otel.mjs <OTLP base endpoint>      stdio

import { McpServer } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import { SpanKind } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { noopResult, registerNoop } from './sdk-noop-tool.mjs'

const endpoint = process.argv[2]
if (!endpoint) throw new Error('usage: node sdk-noop-otel.mjs <OTLP endpoint, e.g. http://127.0.0.1:4318>')
const provider = new BasicTracerProvider({
  spanProcessors: [
    new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint}/v1/traces` }), {
      scheduledDelayMillis: 1000,
    }),
  ],
})
const tracer = provider.getTracer('sdk-noop', '0.0.0')
let calls = 0

function factory() {
  const server = new McpServer({ name: 'sdk-noop', version: '0.0.0' })
  registerNoop(server, (args) => {
    calls += 1
    const span = tracer.startSpan('tools/call noop', {
      kind: SpanKind.SERVER,
      attributes: {
        'mcp.method.name': 'tools/call',
        'network.transport': 'pipe',
        'gen_ai.tool.name': 'noop',
        'gen_ai.operation.name': 'execute_tool',
        'jsonrpc.request.id': String(calls),
        'mcp.protocol.generation': '2025',
      },
    })
    try {
      return noopResult(args)
    } finally {
      span.setAttribute('keel.tool.outcome', 'ok')
      span.end()
    }
  })
  return server
}

serveStdio(factory)
process.stdin.on('end', () => void provider.shutdown())
