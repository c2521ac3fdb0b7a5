// The OpenTelemetry SDK parts core uses, in one module: the bundler builds it into a vendor file
// of its own (dist/vendor/otel-sdk.vendor.js) that a bin loads only when --otel-endpoint is set.
import type { convertLegacyHttpOptions } from '@opentelemetry/otlp-exporter-base/node-http'

/** An OTLP/HTTP exporter's options, as the SDK reads them. */
export type OtlpHttpOptions = ReturnType<typeof convertLegacyHttpOptions>
export {
  context,
  createTraceState,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  ValueType,
} from '@opentelemetry/api'
export { OTLPMetricExporterBase } from '@opentelemetry/exporter-metrics-otlp-http'
export { createOtlpNetworkExportDelegate, OTLPExporterBase } from '@opentelemetry/otlp-exporter-base'
export { convertLegacyHttpOptions } from '@opentelemetry/otlp-exporter-base/node-http'
export type { ISerializer as Serializer } from '@opentelemetry/otlp-transformer'
export {
  JsonMetricsSerializer,
  JsonTraceSerializer,
  ProtobufMetricsSerializer,
  ProtobufTraceSerializer,
} from '@opentelemetry/otlp-transformer'
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
export { AlwaysOffSampler, BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
export { ExportThread } from './otel-export-thread.js'
