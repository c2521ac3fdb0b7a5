// The OpenTelemetry SDK parts core uses, in one module: the bundler builds it into a vendor file
// of its own (dist/vendor/otel-sdk.vendor.js) that a bin loads only when --otel-endpoint is set.
export {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  ValueType,
} from '@opentelemetry/api'
export { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http'
export { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
export {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources'
export type { CollectionResult, MetricData, MetricProducer } from '@opentelemetry/sdk-metrics'
export {
  AggregationTemporality,
  DataPointType,
  InstrumentType,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
export { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
