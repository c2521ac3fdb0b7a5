import { describe, expect, it } from 'vitest'
import { parseConfig } from '../src/config.js'
import { Counter, Histogram, Registry } from '../src/observe/metrics.js'
import { memoryRateLimiter } from '../src/observe/rate-limit.js'
import { observing, parseRate } from '../src/observe-config.js'

const source = { name: 'x', description: 'x', version: '1.0.0' }
const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseConfig(source, argv, env)

describe('operations flags', () => {
  it.each([
    ['10/s', { count: 10, perMs: 1000 }],
    ['600/m', { count: 600, perMs: 60_000 }],
    [' 2.5 / h ', { count: 2.5, perMs: 3_600_000 }],
    ['0/s', undefined],
    ['10', undefined],
    ['ten/s', undefined],
  ])('reads the rate %j as %j', (text, rate) => {
    expect(parseRate(text)).toEqual(rate)
  })

  it('are all off by default', () => {
    const outcome = parse([])
    expect(outcome.kind === 'config' && outcome.config.observe).toEqual({
      metrics: false,
      metricsPort: undefined,
      otelEndpoint: undefined,
      auditLog: undefined,
      rateLimit: undefined,
      rateLimitBurst: undefined,
      writeRateLimit: undefined,
      maxAnswerTokens: 25_000,
    })
  })

  it('take the answer cap from --max-answer-tokens or MCP_MAX_ANSWER_TOKENS, without switching observing on', () => {
    const fromFlag = parse(['--max-answer-tokens', '4000'])
    expect(fromFlag.kind === 'config' && fromFlag.config.observe.maxAnswerTokens).toBe(4000)
    const fromEnv = parse([], { MCP_MAX_ANSWER_TOKENS: '9000' })
    expect(fromEnv.kind === 'config' && fromEnv.config.observe.maxAnswerTokens).toBe(9000)
    expect(fromEnv.kind === 'config' && observing(fromEnv.config.observe)).toBe(false)
  })

  it('take the standard OpenTelemetry variable and flags', () => {
    const outcome = parse(['--rate-limit', '5/s', '--write-rate-limit', '1/m', '--audit-log', '-'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
    })
    expect(outcome.kind === 'config' && outcome.config.observe).toMatchObject({
      otelEndpoint: 'http://127.0.0.1:4318',
      rateLimit: { count: 5, perMs: 1000 },
      writeRateLimit: { count: 1, perMs: 60_000 },
      auditLog: '-',
    })
  })

  it.each([
    [['--rate-limit', 'fast'], /Invalid --rate-limit \(env MCP_RATE_LIMIT\): must be a rate such as 10\/s/],
    [['--metrics'], /--metrics serves \/metrics on the HTTP port; on stdio give --metrics-port/],
    [['--rate-limit-burst', '5'], /--rate-limit-burst sizes the --rate-limit budget/],
    [['--otel-endpoint', 'collector:4318'], /Invalid --otel-endpoint/],
    [['--metrics-port', '70000'], /Invalid --metrics-port/],
  ])('refuse %j with a message naming the flag', (argv, message) => {
    expect(() => parse(argv)).toThrow(message)
  })

  it('list themselves in --help', () => {
    const outcome = parse(['--help'])
    expect(outcome.kind === 'help' && outcome.text).toMatch(
      /Operations \(off unless set\):[\s\S]*--rate-limit <N\/s>/,
    )
  })
})

describe('the rate limiter', () => {
  const call = { budget: 'call', rate: { count: 1, perMs: 1000 }, burst: 2 }
  const write = { budget: 'write', rate: { count: 1, perMs: 10_000 }, burst: 1 }

  it('allows a burst, then refills at the rate, per client', async () => {
    let now = 0
    const limiter = memoryRateLimiter(() => now)
    expect((await limiter.take('a', [call])).allowed).toBe(true)
    expect((await limiter.take('a', [call])).allowed).toBe(true)
    expect(await limiter.take('a', [call])).toEqual({ allowed: false, retryAfterMs: 1000, budget: 'call' })
    expect((await limiter.take('b', [call])).allowed).toBe(true)
    now = 500
    expect((await limiter.take('a', [call])).retryAfterMs).toBe(500)
    now = 1000
    expect((await limiter.take('a', [call])).allowed).toBe(true)
  })

  it('takes from every bucket that applies or from none', async () => {
    let now = 0
    const limiter = memoryRateLimiter(() => now)
    expect((await limiter.take('a', [call, write])).allowed).toBe(true)
    const refused = await limiter.take('a', [call, write])
    expect(refused).toMatchObject({ allowed: false, budget: 'write', retryAfterMs: 10_000 })
    // The refused write spent nothing of the call budget: one call token is still there.
    expect((await limiter.take('a', [call])).allowed).toBe(true)
    expect((await limiter.take('a', [call])).allowed).toBe(false)
    now = 10_000
    expect((await limiter.take('a', [call, write])).allowed).toBe(true)
  })
})

describe('the Prometheus registry', () => {
  it('renders counters, labels (escaped) and cumulative histogram buckets in the text format', () => {
    const registry = new Registry()
    const counter = registry.register(new Counter('x_total', 'Things.'))
    counter.inc({ tool: 'a"b\\c' })
    counter.inc({ tool: 'a"b\\c' }, 2)
    const histogram = registry.register(new Histogram('d_seconds', 'Durations.', [0.1, 1]))
    histogram.observe({ tool: 't' }, 0.05)
    histogram.observe({ tool: 't' }, 0.5)
    histogram.observe({ tool: 't' }, 5)
    expect(registry.render()).toBe(
      [
        '# HELP x_total Things.',
        '# TYPE x_total counter',
        'x_total{tool="a\\"b\\\\c"} 3',
        '# HELP d_seconds Durations.',
        '# TYPE d_seconds histogram',
        'd_seconds_bucket{tool="t",le="0.1"} 1',
        'd_seconds_bucket{tool="t",le="1"} 2',
        'd_seconds_bucket{tool="t",le="+Inf"} 3',
        'd_seconds_sum{tool="t"} 5.55',
        'd_seconds_count{tool="t"} 3',
        '',
      ].join('\n'),
    )
  })
})
