import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { createServer as createNetServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import {
  type Connection,
  connectHttp,
  type OtlpReceiver,
  type ReceivedSpan,
  type SpawnedHttpServer,
  spawnHttp,
  startOtlpReceiver,
} from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeGitHub } from '../../../servers/github/test/fake-github.js'
import { issue, user } from '../../../servers/github/test/fixtures.js'
import { type PostgresInstance, startPostgres } from '../../../servers/postgres/test/harness/postgres.js'
import { type Prometheus, startPrometheus } from '../src/prometheus.js'

// What a team that hosts Keel sees: three servers over Streamable HTTP, each exporting spans and
// metrics to an OTLP receiver on loopback, scraped by a real Prometheus, writing audit lines; a
// scripted set of calls (successes, a tool error, a cancelled call) and the telemetry it leaves.

const repo = resolve(import.meta.dirname, '../../..')
const bin = (slug: string) => join(repo, 'servers', slug, 'dist/index.js')
const TOKEN = 'ghp_opsE2eToken0123456789abcdefghijklmnop'
// A client's W3C trace context: the server's spans must join this trace under this span.
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT_SPAN = '00f067aa0ba902b7'
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_SPAN}-01`

let work = ''
let receiver: OtlpReceiver
let github: FakeGitHub
let postgres: PostgresInstance
let prometheus: Prometheus
const servers: Record<string, SpawnedHttpServer> = {}
const connections: Connection[] = []
let releaseSlowIssue: () => void = () => {}

const hostOf = (url: string) => new URL(url).host
// A loopback port nothing listens on: one the system just handed out and took back (fetch refuses
// the well-known closed ones such as 9).
let CLOSED_PORT = 0
const closedUrl = () => `http://127.0.0.1:${CLOSED_PORT}`
const textOf = (result: Record<string, any>) =>
  (result.content as Array<{ text?: string }>).map((block) => block.text ?? '').join('\n')

async function spansUntil(
  accept: (spans: ReceivedSpan[]) => boolean,
  timeoutMs = 30_000,
): Promise<ReceivedSpan[]> {
  const end = Date.now() + timeoutMs
  while (Date.now() < end) {
    if (accept(receiver.spans)) return receiver.spans
    await new Promise((wake) => setTimeout(wake, 200))
  }
  throw new Error(`spans never matched; got ${receiver.spans.map((span) => span.name).join(', ')}`)
}

async function auditLines(slug: string): Promise<Array<Record<string, unknown>>> {
  const text = await readFile(join(work, `${slug}-audit.jsonl`), 'utf8').catch(() => '')
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'keel-ops-'))
  const probe = createNetServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  CLOSED_PORT = (probe.address() as AddressInfo).port
  await new Promise((resolve) => probe.close(resolve))
  await writeFile(join(work, 'notes.txt'), 'hello\n')
  receiver = await startOtlpReceiver()
  github = await FakeGitHub.start()
  github.on('GET', '/user', { status: 200, body: { ...user('octocat'), name: 'The Octocat' } })
  github.on('GET', '/rate_limit', {
    status: 200,
    body: { resources: { core: { limit: 5000, remaining: 4999, reset: 0, used: 1 } } },
  })
  github.on('GET', '/repos/octo/slow/issues/1', async () => {
    await new Promise<void>((resolveSlow) => {
      releaseSlowIssue = resolveSlow
    })
    return { status: 200, body: issue(1, { repo: 'octo/slow' }) }
  })
  postgres = await startPostgres()
  const env = (slug: string): Record<string, string> => ({
    OTEL_SERVICE_NAME: `keel-${slug}-e2e`,
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test',
    OTEL_METRIC_EXPORT_INTERVAL: '1000',
    MCP_AUDIT_LOG: join(work, `${slug}-audit.jsonl`),
  })
  const flags = ['--metrics', '--otel-endpoint', receiver.url]
  servers.fs = await spawnHttp(process.execPath, [bin('fs'), work, ...flags], {
    env: env('fs'),
    timeoutMs: 60_000,
  })
  servers.github = await spawnHttp(process.execPath, [bin('github'), ...flags], {
    env: { ...env('github'), GITHUB_TOKEN: TOKEN, GITHUB_API_URL: github.url },
    timeoutMs: 60_000,
  })
  // PostgreSQL exports in the other OTLP encoding (protobuf), as a team may ask with the standard
  // variable: the spans and metrics below come in both.
  servers.postgres = await spawnHttp(process.execPath, [bin('postgres'), ...flags], {
    env: { ...env('postgres'), DATABASE_URL: postgres.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' },
    timeoutMs: 60_000,
  })
  prometheus = await startPrometheus(
    Object.fromEntries(Object.entries(servers).map(([slug, server]) => [slug, hostOf(server.url)])),
  )
}, 180_000)

afterAll(async () => {
  releaseSlowIssue()
  await Promise.allSettled(connections.map((connection) => connection.close()))
  await Promise.allSettled(Object.values(servers).map((server) => server.close()))
  await prometheus?.stop()
  await postgres?.stop()
  await github?.close()
  await receiver?.close()
  if (work) await rm(work, { recursive: true, force: true })
})

describe('a scripted set of calls, and the telemetry it leaves', () => {
  it('runs the calls: successes, a tool error, a cancelled call, in both generations', async () => {
    const modern = await connectHttp(servers.fs?.url ?? '', { era: 'modern' })
    connections.push(modern)
    const listed = await modern.client.callTool({
      name: 'list_directory',
      arguments: { path: work },
      _meta: { traceparent: TRACEPARENT },
    })
    expect(textOf(listed)).toContain('notes.txt')
    const missing = await modern.client.callTool({
      name: 'read_text_file',
      arguments: { path: join(work, 'absent.txt') },
    })
    expect(missing.isError).toBe(true)

    const legacy = await connectHttp(servers.github?.url ?? '')
    connections.push(legacy)
    const me = await legacy.client.callTool({ name: 'get_me', arguments: {} })
    expect(textOf(me), servers.github?.stderr()).toContain('octocat')
    const controller = new AbortController()
    const slow = legacy.client.callTool(
      { name: 'get_issue', arguments: { repo: 'octo/slow', issue_number: 1 } },
      { signal: controller.signal },
    )
    const asked = Date.now() + 30_000
    while (!github.calls('GET', '/repos/octo/slow/issues/1').length && Date.now() < asked)
      await new Promise((wake) => setTimeout(wake, 50))
    controller.abort('the user gave up')
    await expect(slow).rejects.toThrow()

    const sql = await connectHttp(servers.postgres?.url ?? '', { era: 'modern' })
    connections.push(sql)
    const rows = await sql.client.callTool({ name: 'query', arguments: { sql: 'SELECT 1 AS one' } })
    expect(rows.isError).toBeFalsy()
  })

  it('exports one server span per request, joined to the caller’s trace, with MCP attributes', async () => {
    const spans = await spansUntil((all) => all.some((span) => span.name === 'tools/call read_text_file'))
    const listed = spans.find((span) => span.name === 'tools/call list_directory')
    expect(listed).toMatchObject({
      traceId: TRACE_ID,
      parentSpanId: PARENT_SPAN,
      kind: 2, // SERVER
      attributes: expect.objectContaining({
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'list_directory',
        'gen_ai.operation.name': 'execute_tool',
        'mcp.protocol.generation': '2026-07-28',
        'keel.tool.outcome': 'ok',
      }),
    })
    expect(listed?.resource).toMatchObject({
      'service.name': 'keel-fs-e2e',
      'deployment.environment': 'test',
    })
    const failed = spans.find((span) => span.name === 'tools/call read_text_file')
    expect(failed?.status.code).toBe(2) // ERROR
    expect(failed?.attributes['error.type']).toBe('not_found')
  })

  it('exports the GitHub API request as a client span under the tool call that made it', async () => {
    const spans = await spansUntil((all) =>
      all.some((span) => span.kind === 3 && span.attributes['url.path'] === '/user'),
    )
    const call = spans.find((span) => span.name === 'tools/call get_me')
    const upstream = spans.find((span) => span.kind === 3 && span.attributes['url.path'] === '/user')
    expect(call).toBeDefined()
    expect(upstream).toMatchObject({
      traceId: call?.traceId,
      parentSpanId: call?.spanId,
      name: `GET ${hostOf(github.url)}`,
      attributes: expect.objectContaining({ 'http.request.method': 'GET', 'http.response.status_code': 200 }),
    })
    // The token is in no span.
    expect(JSON.stringify(spans)).not.toContain(TOKEN)
  })

  it('exports each PostgreSQL transaction as a client span under the query call', async () => {
    const spans = await spansUntil((all) => all.some((span) => span.name === 'postgresql transaction'))
    const call = spans.find((span) => span.name === 'tools/call query')
    const transaction = spans.find(
      (span) => span.name === 'postgresql transaction' && span.parentSpanId === call?.spanId,
    )
    expect(transaction).toMatchObject({
      traceId: call?.traceId,
      kind: 3,
      attributes: expect.objectContaining({ 'db.system.name': 'postgresql' }),
    })
  })

  it('exports the OpenTelemetry metrics too', async () => {
    const end = Date.now() + 30_000
    while (!receiver.metricNames.has('mcp.server.operation.duration') && Date.now() < end)
      await new Promise((wake) => setTimeout(wake, 250))
    expect(receiver.metricNames).toContain('mcp.server.operation.duration')
  })

  it('received PostgreSQL’s exports as OTLP protobuf and the others’ as JSON', async () => {
    const both = ['application/json', 'application/x-protobuf']
    const end = Date.now() + 30_000
    while (receiver.contentTypes.get('/v1/metrics')?.size !== 2 && Date.now() < end)
      await new Promise((wake) => setTimeout(wake, 250))
    expect([...(receiver.contentTypes.get('/v1/traces') ?? [])].sort()).toEqual(both)
    expect([...(receiver.contentTypes.get('/v1/metrics') ?? [])].sort()).toEqual(both)
    // The protobuf spans decoded to the same shape: the query call carries its service's resource.
    const call = receiver.spans.find((span) => span.name === 'tools/call query')
    expect(call?.resource).toMatchObject({
      'service.name': 'keel-postgres-e2e',
      'deployment.environment': 'test',
    })
  })

  it('is scraped by Prometheus: calls, errors by kind, cancellations, durations, process memory', async () => {
    await prometheus.until('mcp_tool_calls_total{job="fs",tool="list_directory",outcome="ok"}', (result) =>
      result.some((sample) => Number(sample.value[1]) >= 1),
    )
    await prometheus.until(
      'mcp_tool_errors_total{job="fs",tool="read_text_file",kind="not_found"}',
      (result) => result.some((sample) => Number(sample.value[1]) >= 1),
    )
    await prometheus.until(
      'mcp_tool_calls_total{job="github",tool="get_issue",outcome="cancelled"}',
      (result) => result.some((sample) => Number(sample.value[1]) >= 1),
    )
    await prometheus.until(
      'mcp_tool_calls_total{job="postgres",tool="query",outcome="ok"}',
      (result) => result.length > 0,
    )
    const upstream = await prometheus.until(
      'sum by (job) (mcp_upstream_requests_total{job="github",outcome="ok"})',
      (result) => result.length > 0,
    )
    expect(Number(upstream[0]?.value[1])).toBeGreaterThanOrEqual(1)
    const histogram = await prometheus.query(
      'mcp_tool_call_duration_seconds_count{job="fs",tool="list_directory"}',
    )
    expect(Number(histogram[0]?.value[1])).toBeGreaterThanOrEqual(1)
    const memory = await prometheus.query('process_resident_memory_bytes')
    expect(memory.map((sample) => sample.metric.job).sort()).toEqual(['fs', 'github', 'postgres'])
  })

  it('writes one audit line per call, with outcome, duration and sizes, and no secret', async () => {
    const fsLines = await auditLines('fs')
    expect(fsLines.map((line) => [line.tool, line.outcome])).toEqual([
      ['list_directory', 'ok'],
      ['read_text_file', 'error'],
    ])
    expect(fsLines[1]).toMatchObject({ error_kind: 'not_found', transport: 'http', era: 'modern' })
    // The arguments each server records: which files, which issue; never a query's SQL.
    expect(fsLines.map((line) => line.arguments)).toEqual([
      { path: work },
      { path: join(work, 'absent.txt') },
    ])
    for (const line of fsLines) {
      expect(typeof line.duration_ms).toBe('number')
      expect(line.arguments_bytes).toBeGreaterThan(0)
      expect(line.result_bytes).toBeGreaterThan(0)
      expect(Date.parse(String(line.time))).not.toBeNaN()
    }
    const githubLines = await auditLines('github')
    expect(githubLines.map((line) => [line.tool, line.outcome])).toEqual([
      ['get_me', 'ok'],
      ['get_issue', 'cancelled'],
    ])
    expect(githubLines[0]).toMatchObject({ era: 'legacy', session: expect.stringMatching(/^[0-9a-f]{16}$/) })
    expect(githubLines.map((line) => line.arguments)).toEqual([
      undefined,
      { repo: 'octo/slow', issue_number: 1 },
    ])
    const raw = await readFile(join(work, 'github-audit.jsonl'), 'utf8')
    expect(raw).not.toContain(TOKEN)
    const postgresLines = await auditLines('postgres')
    expect(postgresLines.map((line) => [line.tool, line.outcome, line.arguments])).toEqual([
      ['query', 'ok', undefined],
    ])
    expect(await readFile(join(work, 'postgres-audit.jsonl'), 'utf8')).not.toContain('SELECT')
  })

  it('answers /readyz from each server’s upstream, and /metrics only where asked', async () => {
    for (const [slug, server] of Object.entries(servers)) {
      const ready = await fetch(new URL('/readyz', server.url))
      expect(ready.status, await ready.clone().text()).toBe(200)
      expect(await ready.json()).toEqual({ status: 'ready', checks: { [slug]: 'ok' } })
    }
    const metrics = await fetch(new URL('/metrics', servers.fs?.url))
    expect(metrics.headers.get('content-type')).toContain('text/plain')
    expect(await metrics.text()).toContain('# TYPE mcp_tool_call_duration_seconds histogram')
  })
})

describe('readiness follows the upstream', () => {
  it.each([
    [
      'postgres',
      [],
      () => ({ DATABASE_URL: `postgres://reader@127.0.0.1:${CLOSED_PORT}/none` }),
      /ECONNREFUSED|connect/,
    ],
    [
      'github',
      [],
      () => ({ GITHUB_TOKEN: TOKEN, GITHUB_API_URL: closedUrl() }),
      /ECONNREFUSED|fetch failed|connect|no answer within 5 s/i,
    ],
    [
      'slack',
      [],
      () => ({ SLACK_BOT_TOKEN: 'xoxb-ops', SLACK_API_URL: `${closedUrl()}/api/` }),
      /could not be reached|ECONNREFUSED|no answer within 5 s/i,
    ],
    [
      'browser',
      [],
      () => ({ PUPPETEER_EXECUTABLE_PATH: '/nonexistent/chromium' }),
      /No browser at --executable-path/,
    ],
  ] as const)(
    '%s answers 503 naming what is wrong while its upstream is out of reach',
    async (slug, args, env, reason) => {
      const server = await spawnHttp(process.execPath, [bin(slug), ...args], {
        env: env(),
        timeoutMs: 60_000,
      })
      try {
        const response = await fetch(new URL('/readyz', server.url))
        const body = (await response.json()) as { status: string; checks: Record<string, string> }
        expect(response.status, JSON.stringify(body)).toBe(503)
        expect(body.checks[slug]).toMatch(reason)
        // The token is in no answer.
        expect(JSON.stringify(body)).not.toContain(TOKEN)
        expect((await fetch(new URL('/healthz', server.url))).status).toBe(200)
      } finally {
        await server.close()
      }
    },
  )

  it('fs turns not ready (503, naming what is wrong) when its directory goes away, and ready again when it is back', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'keel-ready-'))
    const server = await spawnHttp(process.execPath, [bin('fs'), directory], { timeoutMs: 60_000 })
    try {
      const readyz = async () => {
        const response = await fetch(new URL('/readyz', server.url))
        return {
          status: response.status,
          body: (await response.json()) as { status: string; checks: Record<string, string> },
        }
      }
      expect(await readyz()).toEqual({ status: 200, body: { status: 'ready', checks: { fs: 'ok' } } })
      await rm(directory, { recursive: true })
      const gone = await readyz()
      expect(gone.status).toBe(503)
      expect(gone.body.status).toBe('not ready')
      expect(gone.body.checks.fs).toContain('ENOENT')
      // The process is still healthy: it answers, it is just not useful now.
      expect((await fetch(new URL('/healthz', server.url))).status).toBe(200)
      await mkdir(directory)
      expect((await readyz()).status).toBe(200)
    } finally {
      await server.close()
      await rm(directory, { recursive: true, force: true })
    }
  })
})
