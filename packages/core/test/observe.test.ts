import { mkdtemp, readFile, rename, rm, stat, unlink } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { parseConfig } from '../src/config.js'
import { defineServer, defineTool } from '../src/define.js'
import { createLogger } from '../src/logger.js'
import { AuditSink, isoNow } from '../src/observe/audit.js'
import { installObserver } from '../src/observe/hooks.js'
import { Counter, Histogram, Registry } from '../src/observe/metrics.js'
import { AUDIT_VALUE_CHARS, hashId, Observer } from '../src/observe/observer.js'
import { memoryRateLimiter, type RateLimiter } from '../src/observe/rate-limit.js'
import { type ObserveConfig, observing, parseRate } from '../src/observe-config.js'
import { redactor } from '../src/redact.js'
import { LineTransport } from '../src/stdio.js'
import { connectInMemory } from '../src/testing/clients.js'
import { callStart, observeConfig } from './observe-fixture.js'

const source = { name: 'x', description: 'x', version: '1.0.0' }
const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseConfig(source, argv, env)

/** The audit file's lines, parsed; its directory removed. */
async function auditLines(dir: string, file: string): Promise<ReturnType<typeof JSON.parse>[]> {
  const lines = (await readFile(file, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
  await rm(dir, { recursive: true, force: true })
  return lines
}

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
      otelTracesEndpoint: undefined,
      otelMetricsEndpoint: undefined,
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

  it('follow the standard variables that switch OpenTelemetry export off, with a warning, and refuse what Keel cannot export to', () => {
    const endpoint = ['--otel-endpoint', 'http://127.0.0.1:4318']
    for (const [env, reason] of [
      [{ OTEL_SDK_DISABLED: 'TRUE' }, 'OTEL_SDK_DISABLED=true'],
      [
        { OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: ' none ' },
        'OTEL_TRACES_EXPORTER=none and OTEL_METRICS_EXPORTER=none',
      ],
      // Nothing exported: the protocol is not held against it.
      [{ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_SDK_DISABLED=true'],
    ] as const) {
      const outcome = parse(endpoint, env)
      if (outcome.kind !== 'config') throw new Error(outcome.kind)
      expect(outcome.config.observe.otelEndpoint).toBeUndefined()
      expect(observing(outcome.config.observe)).toBe(false)
      expect(outcome.warnings).toContain(`${reason}: OpenTelemetry export is off, its endpoints are not used`)
    }
    for (const env of [
      { OTEL_SDK_DISABLED: 'false' },
      { OTEL_TRACES_EXPORTER: 'none' },
      { OTEL_METRICS_EXPORTER: 'none' },
    ]) {
      const outcome = parse(endpoint, env)
      expect(outcome.kind === 'config' && outcome.config.observe.otelEndpoint).toBe('http://127.0.0.1:4318')
      expect(outcome.kind === 'config' && outcome.warnings).toEqual([])
    }
    expect(() => parse(endpoint, { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      /^OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported/,
    )
    expect(() => parse(endpoint, { OTEL_TRACES_EXPORTER: 'otlp,console' })).toThrow(
      'OTEL_TRACES_EXPORTER="console" is not supported: Keel exports spans over OTLP (otlp, the default) or not at all (none)',
    )
    expect(() => parse(endpoint, { OTEL_METRICS_EXPORTER: 'prometheus' })).toThrow(
      /OTEL_METRICS_EXPORTER="prometheus" is not supported: .*serves \/metrics itself \(--metrics, --metrics-port\)/,
    )
    // A signal's own endpoint switches export on by itself; the other signal, without one, stays off.
    const tracesOnly = parse([], { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })
    if (tracesOnly.kind !== 'config') throw new Error(tracesOnly.kind)
    expect(tracesOnly.config.observe).toMatchObject({
      otelEndpoint: undefined,
      otelTracesEndpoint: 'http://127.0.0.1:4318/v1/traces',
      otelMetricsEndpoint: undefined,
    })
    expect(observing(tracesOnly.config.observe)).toBe(true)
    const noneLeft = parse(['--otel-metrics-endpoint', 'http://127.0.0.1:9090/api/v1/otlp/v1/metrics'], {
      OTEL_METRICS_EXPORTER: 'none',
    })
    expect(noneLeft.kind === 'config' && observing(noneLeft.config.observe)).toBe(false)
    expect(noneLeft.kind === 'config' && noneLeft.warnings).toEqual([
      'no traces endpoint and OTEL_METRICS_EXPORTER=none: OpenTelemetry export is off, its endpoints are not used',
    ])
    expect(() => parse([], { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'prometheus:9090' })).toThrow(
      /Invalid --otel-metrics-endpoint \(env OTEL_EXPORTER_OTLP_METRICS_ENDPOINT\)/,
    )
    // Without an endpoint the variables are someone else's business.
    const plain = parse([], { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_TRACES_EXPORTER: 'zipkin' })
    expect(plain.kind === 'config' && plain.warnings).toEqual([])
  })

  it('list themselves in --help', () => {
    const outcome = parse(['--help'])
    expect(outcome.kind === 'help' && outcome.text).toMatch(
      /Operations \(off unless set\):[\s\S]*--rate-limit <N\/s>/,
    )
  })
})

describe('the audit file', () => {
  it('follows log rotation: after a move or a delete, the next lines go to a new file at the path, none lost', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-audit-rotate-'))
    const file = join(dir, 'audit.jsonl')
    const errors: string[] = []
    const sink = new AuditSink(file, (error) => errors.push(error.message))
    try {
      sink.write('one\n')
      sink.write('two\n')
      sink.flush()
      // logrotate's default: the file is renamed and the server goes on.
      await rename(file, `${file}.1`)
      sink.write('three\n')
      sink.flush()
      sink.write('four\n')
      sink.flush()
      expect(await readFile(`${file}.1`, 'utf8')).toBe('one\ntwo\n')
      expect(await readFile(file, 'utf8')).toBe('three\nfour\n')
      expect((await stat(file)).mode & 0o777).toBe(0o600)
      // Deleted outright: a new file again.
      await unlink(file)
      sink.write('five\n')
      sink.close()
      expect(await readFile(file, 'utf8')).toBe('five\n')
      expect(errors).toEqual([])
    } finally {
      sink.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('the audit sink', () => {
  it('writes the other lines when one cannot be made, and reports it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-audit-bad-'))
    const file = join(dir, 'audit.jsonl')
    const errors: string[] = []
    const sink = new AuditSink(file, (error) => errors.push(error.message))
    try {
      sink.write('one\n')
      sink.write({
        text: () => {
          throw new TypeError('Do not know how to serialize a BigInt')
        },
      })
      sink.write({ text: () => 'three\n' })
      sink.flush()
      expect(await readFile(file, 'utf8')).toBe('one\nthree\n')
      expect(errors).toEqual(['Do not know how to serialize a BigInt'])
    } finally {
      sink.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('the audit time', () => {
  it.each([0, 5, 50, 999, 1_764_100_000_000, 1_764_100_000_007, 1_764_100_000_070, 1_764_100_000_999])(
    'reads %i as toISOString does',
    (now) => {
      expect(isoNow(now)).toBe(new Date(now).toISOString())
    },
  )
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

  it('renders the same through kept series handles as through labels', () => {
    const byLabels = new Registry()
    const counter = byLabels.register(new Counter('x_total', 'Things.'))
    const histogram = byLabels.register(new Histogram('d_seconds', 'Durations.', [0.1, 1]))
    const byHandles = new Registry()
    const kept = byHandles.register(new Counter('x_total', 'Things.')).series({ tool: 't' })
    const keptHistogram = byHandles.register(new Histogram('d_seconds', 'Durations.', [0.1, 1]))
    const keptSeries = keptHistogram.series({ tool: 't' })
    for (const value of [0.05, 0.1, 0.5, 5]) {
      counter.inc({ tool: 't' })
      histogram.observe({ tool: 't' }, value)
      kept.value += 1
      keptHistogram.record(keptSeries, value)
    }
    expect(byHandles.render()).toBe(byLabels.render())
    expect(byLabels.render()).toContain('d_seconds_bucket{tool="t",le="0.1"} 2')
  })
})

describe('the observer without tracing', () => {
  const config = observeConfig
  const start = callStart
  const observerWith = (overrides: Partial<ObserveConfig> = {}, limiter?: RateLimiter) =>
    new Observer({
      config: config(overrides),
      serviceName: 'x',
      serviceVersion: '1.0.0',
      logger: createLogger({ name: 'x', level: 'error' }),
      limiter,
      tracing: undefined,
    })

  it('counts calls by outcome and kind, durations and requests through kept series', async () => {
    const watching = observerWith()
    try {
      for (const outcome of ['ok', 'ok', 'error']) {
        const call = watching.call(start())
        expect(await call.run(async () => 'done')).toBe('done')
        call.end({ outcome, ...(outcome === 'error' ? { errorKind: 'not_found' } : {}), resultBytes: 0 })
        call.end({ outcome, resultBytes: 0 })
      }
      const request = watching.request({ method: 'tools/call', id: 1, transport: 'stdio', params: {} })
      expect(request.run(() => 7)).toBe(7)
      request.end()
      watching.request({ method: 'made/up', id: 2, transport: 'stdio', params: {} }).end(-32601)
      expect(watching.calls.get({ tool: 'read', outcome: 'ok' })).toBe(2)
      expect(watching.calls.get({ tool: 'read', outcome: 'error' })).toBe(1)
      expect(watching.errors.get({ tool: 'read', kind: 'not_found' })).toBe(1)
      expect(watching.durations.count({ tool: 'read' })).toBe(3)
      expect(watching.requests.get({ method: 'tools/call', outcome: 'ok' })).toBe(1)
      expect(watching.requests.get({ method: 'other', outcome: 'error' })).toBe(1)
      expect(watching.registry.render()).toContain('mcp_tool_calls_in_flight 0')
      expect(watching.sizes).toBe(false)
    } finally {
      await watching.close()
    }
  })

  it('counts an HTTP request as upstream only while a tool call runs', async () => {
    const upstream = createServer((_request, response) => response.end('{}'))
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/x`
    const watching = observerWith()
    const system = { system: `http:127.0.0.1:${(upstream.address() as AddressInfo).port}`, outcome: 'ok' }
    try {
      await (await fetch(url)).text()
      expect(watching.upstreamCalls.get(system)).toBe(0)
      const call = watching.call(start())
      await call.run(async () => (await fetch(url)).text())
      call.end({ outcome: 'ok', resultBytes: 0 })
      expect(watching.upstreamCalls.get(system)).toBe(1)
      await (await fetch(url)).text()
      expect(watching.upstreamCalls.get(system)).toBe(1)
      await traceUpstreamVia(watching)
      expect(watching.upstreamCalls.get({ system: 'postgresql', outcome: 'ok' })).toBe(1)
    } finally {
      await watching.close()
      await new Promise((resolve) => upstream.close(resolve))
    }
  })

  it('writes audit lines as the redacted record would read, gathered, all of them by close', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-audit-'))
    const file = join(dir, 'audit.jsonl')
    const watching = observerWith({ auditLog: file })
    const secret = 'password=hunter2-very-secret'
    try {
      expect(watching.sizes).toBe(true)
      const first = watching.call(start({ subject: 'alice', sent: { p: '1234' } }))
      first.end({ outcome: 'error', errorKind: 'not_found', resultBytes: 40 })
      const second = watching.call(
        start({
          session: undefined,
          transport: 'http',
          era: 'modern',
          safeArguments: {
            path: secret,
            n: 2,
            long: ['x'.repeat(5000)],
            deep: { a: { b: { c: { d: { e: { f: { g: { h: 'y'.repeat(9000) } } } } } } } },
          },
        }),
      )
      second.end({ outcome: 'ok', resultBytes: 3, handle: 'session.Zq81mKp0wLr7Tt3vXy5B' })
    } finally {
      await watching.close()
    }
    const lines = await auditLines(dir, file)
    expect(lines).toHaveLength(2)
    expect(Object.keys(lines[0])).toEqual([
      'time',
      'tool',
      'outcome',
      'error_kind',
      'duration_ms',
      'transport',
      'era',
      'subject',
      'session',
      'arguments_bytes',
      'result_bytes',
    ])
    expect(lines[0]).toMatchObject({
      tool: 'read',
      outcome: 'error',
      error_kind: 'not_found',
      transport: 'stdio',
      era: 'legacy',
      subject: 'alice',
      session: hashId('session-1'),
      arguments_bytes: 12,
      result_bytes: 40,
    })
    expect(typeof lines[0].duration_ms).toBe('number')
    expect(lines[1]).toMatchObject({ transport: 'http', era: 'modern', arguments: { n: 2 } })
    expect(lines[1].session).toBeUndefined()
    // A state handle is recorded as a hash, as a session id is: one session's calls, told apart.
    expect(lines[1].handle).toBe(hashId('session.Zq81mKp0wLr7Tt3vXy5B'))
    expect(lines[0].handle).toBeUndefined()
    expect(JSON.stringify(lines)).not.toContain('Zq81mKp0wLr7Tt3vXy5B')
    expect(lines[1].arguments.path).toBe(redactor.redact(secret))
    // A long value is cut: no call makes the log grow by its arguments' size.
    expect(lines[1].arguments.long).toEqual([`${'x'.repeat(AUDIT_VALUE_CHARS)}…[904 more characters]`])
    // Deeper than the redactor walks, the rest is its JSON text, redacted and cut as a whole.
    const deep = JSON.stringify(lines[1].arguments.deep)
    expect(deep).toContain('more characters]')
    expect(deep.length).toBeLessThan(AUDIT_VALUE_CHARS + 200)
    expect(JSON.stringify(lines)).not.toContain('hunter2')
  })

  it("records a result's size from the line stdio writes for it, or measures it when the line is written", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-audit-'))
    const file = join(dir, 'audit.jsonl')
    const watching = observerWith({ auditLog: file })
    installObserver(watching)
    const input = new PassThrough()
    const output = new PassThrough()
    const written: string[] = []
    output.on('data', (chunk: Buffer) => written.push(...chunk.toString().split('\n').filter(Boolean)))
    const transport = new LineTransport({ input, output })
    // Multi-byte text: a size in characters would differ from the one in bytes.
    const sent = { content: [{ type: 'text', text: 'größe ✓ "quoted"\n' }], structuredContent: { n: 1 } }
    const unsent = { content: [{ type: 'text', text: 'über HTTP' }] }
    const responses: Array<Record<string, unknown>> = [
      { result: sent, jsonrpc: '2.0', id: 1 },
      { jsonrpc: '2.0', id: 'b', result: sent },
    ]
    transport.onmessage = (message) => {
      const { id } = message as { id: number | string }
      const call = watching.call(start())
      call.end({ outcome: 'ok', result: sent })
      void transport.send(responses[id === 1 ? 0 : 1] as never)
    }
    try {
      await transport.start()
      input.write('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"}}\n')
      input.write('{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"read"}}\n')
      await new Promise((resolve) => setImmediate(resolve))
      // A call whose response is written elsewhere (HTTP): measured when its line is written.
      watching.call(start({ transport: 'http' })).end({ outcome: 'ok', result: unsent })
    } finally {
      installObserver(undefined)
      await transport.close()
      await watching.close()
    }
    const lines = await auditLines(dir, file)
    // The lines written are the ones JSON.stringify gives, in the members' own order.
    expect(written).toEqual(responses.map((response) => JSON.stringify(response)))
    expect(lines.map((line) => line.result_bytes)).toEqual([
      Buffer.byteLength(JSON.stringify(sent)),
      Buffer.byteLength(JSON.stringify(sent)),
      Buffer.byteLength(JSON.stringify(unsent)),
    ])
    expect(Buffer.byteLength(JSON.stringify(sent))).toBeGreaterThan(JSON.stringify(sent).length)
  })

  it("records the values of the arguments the server names, a tool's own list in its place, nothing else", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-audit-'))
    const file = join(dir, 'audit.jsonl')
    const watching = observerWith({ auditLog: file })
    const ok = () => ({ text: 'done' })
    const annotations = { readOnlyHint: false, destructiveHint: false, openWorldHint: false }
    const spec = defineServer({
      name: 'audited',
      version: '1.0.0',
      description: 'x',
      auditArguments: ['path', 'repo', 'issue_number', 'labels'],
      tools: [
        defineTool({
          name: 'write_note',
          title: 'Write',
          description: 'x',
          input: {
            path: z.string().describe('Where'),
            content: z.string().describe('What'),
            labels: z.array(z.string()).optional().describe('Labels'),
          },
          annotations,
          run: ok,
        }),
        defineTool({
          name: 'comment',
          title: 'Comment',
          description: 'x',
          input: {
            // Parsed into parts: the audit line records what the client sent.
            repo: z
              .string()
              .transform((text) => ({ owner: text.split('/')[0], name: text.split('/')[1] }))
              .describe('Repo'),
            issue_number: z.number().describe('N'),
            body: z.string().describe('Text'),
          },
          annotations,
          run: ok,
        }),
        defineTool({
          name: 'secret_path',
          title: 'Own list',
          description: 'x',
          input: { path: z.string().describe('Where'), note: z.string().describe('Note') },
          annotations,
          auditArguments: ['note'],
          run: ok,
        }),
        defineTool({
          name: 'nothing',
          title: 'None',
          description: 'x',
          input: { path: z.string().describe('Where') },
          annotations,
          auditArguments: [],
          run: ok,
        }),
      ],
      createDeps: () => ({}),
    })
    installObserver(watching)
    const connection = await connectInMemory(spec)
    const calls: Array<[string, Record<string, unknown>]> = [
      ['write_note', { path: 'notes/a.md', content: 'the body nobody may read' }],
      [
        'write_note',
        { path: 'token=ghp_Q7x2mK9vL4pR8sT1wY6zB3nC5dF0gH2jA7kE', content: 'x', labels: ['a', 'b'] },
      ],
      ['comment', { repo: 'octo/hello', issue_number: 7, body: 'a private comment' }],
      ['secret_path', { path: 'p', note: 'n' }],
      ['nothing', { path: 'q' }],
    ]
    try {
      for (const [name, args] of calls) {
        const result = await connection.client.callTool({ name, arguments: args })
        expect(result.isError, JSON.stringify(result)).toBeFalsy()
      }
    } finally {
      await connection.close()
      installObserver(undefined)
      await watching.close()
    }
    const raw = await readFile(file, 'utf8')
    const lines = await auditLines(dir, file)
    expect(lines.map((line) => [line.tool, line.arguments])).toEqual([
      ['write_note', { path: 'notes/a.md' }],
      ['write_note', { path: 'token=[redacted]', labels: ['a', 'b'] }],
      ['comment', { repo: 'octo/hello', issue_number: 7 }],
      ['secret_path', { note: 'n' }],
      ['nothing', undefined],
    ])
    for (const content of ['nobody may read', 'private comment', 'ghp_Q7x2mK9v'])
      expect(raw).not.toContain(content)
    // Sizes are of what the client sent too, not of what the schema made of it.
    expect(lines.map((line) => line.arguments_bytes)).toEqual(
      calls.map(([, args]) => Buffer.byteLength(JSON.stringify(args))),
    )
  })

  it('redacts an argument value again once a secret it holds is registered, in lines still to be written too', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-audit-'))
    const file = join(dir, 'audit.jsonl')
    const watching = observerWith({ auditLog: file })
    const secret = 'kq83-late-registered-secret-7Zp'
    const path = `deploy/${secret}`
    const call = () =>
      watching.call(start({ safeArguments: { path } })).end({ outcome: 'ok', resultBytes: 1 })
    try {
      call()
      // The first line is written (within 50 ms) before the secret is known.
      for (let i = 0; i < 200 && !(await readFile(file, 'utf8')).includes('\n'); i++) await sleep(10)
      // The second call ends before the secret is registered; its line is made after.
      call()
      redactor.addSecret(secret)
      call()
    } finally {
      await watching.close()
    }
    const lines = await auditLines(dir, file)
    expect(lines.map((line) => line.arguments.path)).toEqual([path, 'deploy/[redacted]', 'deploy/[redacted]'])
  })

  it('admits at once from an in-process budget, and counts refusals by budget', async () => {
    const watching = observerWith(
      { rateLimit: { count: 1, perMs: 60_000 }, rateLimitBurst: 1 },
      memoryRateLimiter(() => 0),
    )
    try {
      const first = watching.admit('a', true)
      expect(first).not.toBeInstanceOf(Promise)
      expect(first).toMatchObject({ allowed: true })
      expect(watching.admit('a', true)).toMatchObject({
        allowed: false,
        budget: 'call',
        retryAfterMs: 60_000,
      })
      expect(watching.admit('b', true)).toMatchObject({ allowed: true })
      expect(watching.limited.get({ budget: 'call' })).toBe(1)
    } finally {
      await watching.close()
    }
  })
})

async function traceUpstreamVia(watching: Observer) {
  expect(await watching.upstream('postgresql', 'query', async () => 1)).toBe(1)
}
