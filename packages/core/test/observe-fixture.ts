import type { CallStart } from '../src/observe/hooks.js'
import type { ObserveConfig } from '../src/observe-config.js'

/** Operations settings with metrics on and everything else off, then `overrides`. */
export const observeConfig = (overrides: Partial<ObserveConfig> = {}): ObserveConfig => ({
  metrics: true,
  metricsPort: undefined,
  otelEndpoint: undefined,
  otelTracesEndpoint: undefined,
  otelMetricsEndpoint: undefined,
  auditLog: undefined,
  rateLimit: undefined,
  rateLimitBurst: undefined,
  writeRateLimit: undefined,
  maxAnswerTokens: 25_000,
  ...overrides,
})

/** A read-only stdio call of a tool named `read`, then `overrides`. */
export const callStart = (overrides: Partial<CallStart> = {}): CallStart => ({
  tool: 'read',
  readOnly: true,
  transport: 'stdio',
  session: 'session-1',
  subject: undefined,
  era: 'legacy',
  safeArguments: undefined,
  ...overrides,
})
