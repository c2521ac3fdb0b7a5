import { z } from 'zod'
import { type LazySetting, once } from './auth-config.js'

// The operations options (`--metrics`, `--otel-endpoint`, `--audit-log`, `--rate-limit` and
// friends). Only flag definitions and their validation live here; what they switch on is in
// observe/, and loads only when one of them is set.

/** The cap on one tool answer (`--max-answer-tokens`) when none is given, in estimated tokens. */
export const DEFAULT_MAX_ANSWER_TOKENS = 25_000

/** A rate: `count` calls every `perMs` milliseconds (`10/s`, `600/m`). */
export interface Rate {
  count: number
  perMs: number
}

/** Operations settings; everything off by default. */
export interface ObserveConfig {
  /** OTLP/HTTP collector base URL: traces and metrics are exported there (`OTEL_EXPORTER_OTLP_ENDPOINT`). */
  otelEndpoint: string | undefined
  /** Where spans go, as is (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): instead of the base URL's `/v1/traces`. */
  otelTracesEndpoint: string | undefined
  /** Where OTLP metrics go, as is (`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`): instead of the base URL's `/v1/metrics`. */
  otelMetricsEndpoint: string | undefined
  /** Serve Prometheus metrics at `/metrics` on the HTTP port. */
  metrics: boolean
  /** Serve `/metrics` (and `/readyz`) on a port of their own, on loopback: for stdio servers. */
  metricsPort: number | undefined
  /** Where one JSON line per tool call goes: a file path, or `-`/`stderr`. */
  auditLog: string | undefined
  /** Calls a client may make (token bucket), all tools. */
  rateLimit: Rate | undefined
  /** `--rate-limit`'s bucket: calls a client may make at once after an idle spell (default: one second's worth, at least 1). */
  rateLimitBurst: number | undefined
  /** A separate, usually tighter, budget for tools that write. */
  writeRateLimit: Rate | undefined
  /**
   * The most a tool answer may hold, in estimated tokens: bounds every tool's `max_tokens` (and
   * `max_bytes`, at 4 bytes a token) and is the budget of a call that gives none. Default 25,000.
   */
  maxAnswerTokens: number
}

export interface ObserveFlag {
  flag: string
  key: keyof ObserveConfig
  type: 'string' | 'boolean'
  env: string[]
  placeholder?: string
  description: string
}

export const OBSERVE_FLAGS: ObserveFlag[] = [
  {
    flag: 'metrics',
    key: 'metrics',
    type: 'boolean',
    env: ['MCP_METRICS'],
    description: 'Serve Prometheus metrics at /metrics on the HTTP port.',
  },
  {
    flag: 'metrics-port',
    key: 'metricsPort',
    type: 'string',
    env: ['MCP_METRICS_PORT'],
    placeholder: 'n',
    description: 'Serve /metrics and /readyz on this loopback port (for stdio; 0 picks one).',
  },
  {
    flag: 'otel-endpoint',
    key: 'otelEndpoint',
    type: 'string',
    env: ['OTEL_EXPORTER_OTLP_ENDPOINT'],
    placeholder: 'url',
    description: 'Export OpenTelemetry traces and metrics over OTLP/HTTP to this collector.',
  },
  {
    flag: 'otel-traces-endpoint',
    key: 'otelTracesEndpoint',
    type: 'string',
    env: ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'],
    placeholder: 'url',
    description: 'Export spans to this URL, as is (instead of the endpoint’s /v1/traces).',
  },
  {
    flag: 'otel-metrics-endpoint',
    key: 'otelMetricsEndpoint',
    type: 'string',
    env: ['OTEL_EXPORTER_OTLP_METRICS_ENDPOINT'],
    placeholder: 'url',
    description: 'Export OTLP metrics to this URL, as is (instead of the endpoint’s /v1/metrics).',
  },
  {
    flag: 'audit-log',
    key: 'auditLog',
    type: 'string',
    env: ['MCP_AUDIT_LOG'],
    placeholder: 'file|-',
    description: 'One JSON line per tool call to this file (- for stderr).',
  },
  {
    flag: 'rate-limit',
    key: 'rateLimit',
    type: 'string',
    env: ['MCP_RATE_LIMIT'],
    placeholder: 'N/s',
    description: 'Tool calls per client (OAuth subject, session or address): N/s or N/m.',
  },
  {
    flag: 'rate-limit-burst',
    key: 'rateLimitBurst',
    type: 'string',
    env: ['MCP_RATE_LIMIT_BURST'],
    placeholder: 'n',
    description: 'Calls a client may make at once (default: one second of --rate-limit).',
  },
  {
    flag: 'write-rate-limit',
    key: 'writeRateLimit',
    type: 'string',
    env: ['MCP_WRITE_RATE_LIMIT'],
    placeholder: 'N/s',
    description: 'A separate budget for tools that write: N/s or N/m.',
  },
  {
    flag: 'max-answer-tokens',
    key: 'maxAnswerTokens',
    type: 'string',
    env: ['MCP_MAX_ANSWER_TOKENS'],
    placeholder: 'n',
    description: 'Cap on one tool answer in tokens, and on max_tokens (default 25000).',
  },
]

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000 }

/** `10/s` → { count: 10, perMs: 1000 }; undefined when it is not a rate. */
export function parseRate(text: string): Rate | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*\/\s*(s|m|h)\s*$/i.exec(text)
  if (!match) return undefined
  const count = Number(match[1])
  const perMs = UNITS[(match[2] as string).toLowerCase()] as number
  return count > 0 ? { count, perMs } : undefined
}

const rate = () =>
  z
    .string()
    .transform((text, ctx) => {
      const parsed = parseRate(text)
      if (!parsed) {
        ctx.addIssue({ code: 'custom', message: 'must be a rate such as 10/s or 600/m' })
        return z.NEVER
      }
      return parsed
    })
    .optional()

const url = () =>
  z
    .string()
    .url('must be a URL')
    .refine((value) => /^https?:/.test(value), 'must be an http(s) URL')
    .optional()

export const OBSERVE_SETTINGS: Record<keyof ObserveConfig, LazySetting> = {
  metrics: { schema: once(() => z.boolean().default(false)), unset: false },
  metricsPort: {
    schema: once(() => z.coerce.number({ error: 'must be a number' }).int().min(0).max(65535).optional()),
    unset: undefined,
  },
  otelEndpoint: { schema: once(url), unset: undefined },
  otelTracesEndpoint: { schema: once(url), unset: undefined },
  otelMetricsEndpoint: { schema: once(url), unset: undefined },
  auditLog: { schema: once(() => z.string().min(1).optional()), unset: undefined },
  rateLimit: { schema: once(rate), unset: undefined },
  rateLimitBurst: {
    schema: once(() => z.coerce.number({ error: 'must be a number' }).int().min(1).optional()),
    unset: undefined,
  },
  writeRateLimit: { schema: once(rate), unset: undefined },
  maxAnswerTokens: {
    schema: once(() =>
      z.coerce.number({ error: 'must be a number' }).int().min(100).default(DEFAULT_MAX_ANSWER_TOKENS),
    ),
    unset: DEFAULT_MAX_ANSWER_TOKENS,
  },
}

/** True when an OpenTelemetry export is configured: a base endpoint or a signal's own. */
export function otelConfigured(
  config: Pick<ObserveConfig, 'otelEndpoint' | 'otelTracesEndpoint' | 'otelMetricsEndpoint'>,
): boolean {
  return Boolean(config.otelEndpoint || config.otelTracesEndpoint || config.otelMetricsEndpoint)
}

/** Each signal's OTLP/HTTP URL: its own endpoint as is, else the base endpoint's `/v1/<signal>`, else none. */
export function otlpUrls(
  config: Partial<Pick<ObserveConfig, 'otelEndpoint' | 'otelTracesEndpoint' | 'otelMetricsEndpoint'>>,
): Record<'TRACES' | 'METRICS', string | undefined> {
  const base = config.otelEndpoint?.replace(/\/+$/, '')
  return {
    TRACES: config.otelTracesEndpoint ?? (base ? `${base}/v1/traces` : undefined),
    METRICS: config.otelMetricsEndpoint ?? (base ? `${base}/v1/metrics` : undefined),
  }
}

/** True when any operations feature is on (core loads observe/ only then). */
export function observing(config: ObserveConfig): boolean {
  return Boolean(
    config.metrics ||
      config.metricsPort !== undefined ||
      otelConfigured(config) ||
      config.auditLog ||
      config.rateLimit ||
      config.writeRateLimit,
  )
}

/** What is wrong with an operations configuration, as one line, or undefined. */
export function observeConfigProblem(config: ObserveConfig, transport: string): string | undefined {
  if (config.metrics && transport !== 'http')
    return '--metrics serves /metrics on the HTTP port; on stdio give --metrics-port <n>'
  if (config.rateLimitBurst !== undefined && !config.rateLimit && !config.writeRateLimit)
    return '--rate-limit-burst sizes the --rate-limit budget: give --rate-limit too'
  return undefined
}

/** The OTLP/HTTP encodings Keel sends: JSON (the default) and protobuf. */
export type OtlpProtocol = 'http/json' | 'http/protobuf'

/** What the standard OpenTelemetry variables ask of an `--otel-endpoint` export. */
export interface OtelExports {
  /** Spans are exported: they have an endpoint and `OTEL_TRACES_EXPORTER` is not `none`. */
  traces: boolean
  /** OTLP metrics are exported: they have an endpoint and `OTEL_METRICS_EXPORTER` is not `none`. */
  metrics: boolean
  /** Why nothing is exported, when nothing is: what switched each signal off. */
  off: string | undefined
  protocols: Record<'TRACES' | 'METRICS', OtlpProtocol>
}

/** A variable's value as an error line quotes it: at most 40 characters. */
const shown = (value: string) => JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)

/** One exporter variable's list: `otlp` (the default) or `none`; what else it names is refused. */
function exporterOn(name: string, env: Readonly<Record<string, string | undefined>>, other: string): boolean {
  const names = (env[name] ?? '')
    .split(',')
    .map((each) => each.trim())
    .filter(Boolean)
  for (const each of names)
    if (each !== 'otlp' && each !== 'none') {
      throw new Error(`${name}=${shown(each)} is not supported: ${other}`)
    }
  // As the SDK reads it: `none` anywhere in the list means no exporter.
  return !names.includes('none')
}

/**
 * The standard OpenTelemetry variables an `--otel-endpoint` export follows besides the endpoint:
 * `OTEL_SDK_DISABLED=true` exports nothing; `OTEL_TRACES_EXPORTER` and `OTEL_METRICS_EXPORTER` take
 * `otlp` (the default) or `none`; each signal's protocol is `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or
 * `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else `http/json` (what
 * the SDK's OTLP/HTTP exporters send). Anything Keel cannot do (`grpc`, a `console` or `zipkin`
 * exporter) throws, with what to set instead: exports that could never arrive, or spans written to
 * stdout, fail at start rather than silently.
 */
export function otelExports(
  env: Readonly<Record<string, string | undefined>>,
  /** Each signal's URL ({@link otlpUrls}): a signal without one is not exported. */
  urls: Record<'TRACES' | 'METRICS', string | undefined>,
): OtelExports {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true')
    return {
      traces: false,
      metrics: false,
      off: 'OTEL_SDK_DISABLED=true',
      protocols: { TRACES: 'http/json', METRICS: 'http/json' },
    }
  const tracesOn = exporterOn(
    'OTEL_TRACES_EXPORTER',
    env,
    'Keel exports spans over OTLP (otlp, the default) or not at all (none)',
  )
  const metricsOn = exporterOn(
    'OTEL_METRICS_EXPORTER',
    env,
    'Keel exports metrics over OTLP (otlp, the default) or not at all (none); for Prometheus it serves /metrics itself (--metrics, --metrics-port)',
  )
  // A signal with no URL (only the other signal's own endpoint given) is not exported.
  const traces = tracesOn && urls.TRACES !== undefined
  const metrics = metricsOn && urls.METRICS !== undefined
  const protocol = (signal: 'TRACES' | 'METRICS', on: boolean): OtlpProtocol => {
    const name = [`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`, 'OTEL_EXPORTER_OTLP_PROTOCOL'].find((each) =>
      env[each]?.trim(),
    )
    if (name === undefined) return 'http/json'
    const value = (env[name] as string).trim()
    if (value === 'http/json' || value === 'http/protobuf') return value
    // A signal that is not exported is not held to its protocol.
    if (!on) return 'http/json'
    if (value === 'grpc')
      throw new Error(
        `${name}=grpc is not supported: Keel exports OTLP over HTTP. Set it to http/protobuf or http/json, and point --otel-endpoint at the collector's OTLP/HTTP port (4318 by default; 4317 is gRPC)`,
      )
    throw new Error(`${name}=${shown(value)} is not an OTLP protocol: use http/protobuf or http/json`)
  }
  const why = (signal: 'TRACES' | 'METRICS', on: boolean) =>
    on ? `no ${signal.toLowerCase()} endpoint` : `OTEL_${signal}_EXPORTER=none`
  const off = traces || metrics ? undefined : `${why('TRACES', tracesOn)} and ${why('METRICS', metricsOn)}`
  return {
    traces,
    metrics,
    off,
    protocols: { TRACES: protocol('TRACES', traces), METRICS: protocol('METRICS', metrics) },
  }
}
