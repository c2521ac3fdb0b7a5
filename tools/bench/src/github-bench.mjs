// @keel-mcp/server-github against the reference @modelcontextprotocol/server-github 2025.4.8, both
// against the same loopback fake of the GitHub REST API (the reference's fetch is redirected to it
// by github-redirect.mjs; ours takes --api-url). Medians of interleaved runs; ratios are what count.
//
//   pnpm --filter @keel-mcp/bench bench:github        (build servers/github first)
//   BENCH_ROUNDS=3 node src/main.mjs github
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, realpath, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterPauseOverTls, callsPerSecond, compareServers } from './harness.mjs'
import { formatBytes, median, RawClient, ratio, startOtlpSink, table } from './rpc.mjs'

const repo = fileURLToPath(new URL('../../../', import.meta.url))
const OURS = join(repo, 'servers/github/dist/index.js')
const REFERENCE = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-github/package.json')),
  'dist/index.js',
)
const REDIRECT = fileURLToPath(new URL('./github-redirect.mjs', import.meta.url))
const TOKEN = 'ghp_bench000000000000000000000000000000000'

/**
 * github/github-mcp-server's published tool list, measured (not copied) from the JSON Schemas in
 * its repository's pkg/github/__toolsnaps__/ at commit 64a49f3 (2026-08-20): 117 tool snapshots,
 * 137,449 bytes as one compact JSON list. It is a Go server with no npm package to run here, so the
 * bench prints this recorded figure beside the measured ones.
 */
const PEER = { label: 'github-mcp-server, all published tools (64a49f3)', tools: 117, bytes: 137_449 }

/** A recorded issue from @octokit/fixtures (the full REST payload GitHub sends). */
function recordedIssue() {
  const fixtures = createRequire(join(repo, 'servers/github/package.json')).resolve(
    '@octokit/fixtures/package.json',
  )
  const scenario = join(dirname(fixtures), 'scenarios/api.github.com/search-issues/normalized-fixture.json')
  return JSON.parse(readFileSync(scenario, 'utf8'))[0].response.items[0]
}

/**
 * The fake answers every request after `latency.ms` (0: at once), as GitHub does across a network;
 * over TLS when given a key and certificate.
 */
async function startFake(latency = { ms: 0 }, tls = undefined) {
  const issue = JSON.stringify(recordedIssue())
  let requests = 0
  const handle = (req, res) => {
    requests++
    if (latency.ms > 0) setTimeout(answer, latency.ms, req, res)
    else answer(req, res)
  }
  const server = tls ? createHttpsServer(tls, handle) : createServer(handle)
  // GitHub is reported to close a connection after 60 s idle (Node's server default is 5 s).
  server.keepAliveTimeout = 60_000
  function answer(req, res) {
    if (req.method === 'GET' && /^\/repos\/[^/]+\/[^/]+\/issues\/\d+$/.test(req.url ?? '')) {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
      res.end(issue)
      return
    }
    res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' })
    res.end('{"message":"Not Found"}')
  }
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${server.address().port}`,
    requests: () => requests,
    close: () => new Promise((resolve) => server.close(resolve)),
  }
}

/**
 * A call after a pause longer than an idle connection is kept for (undici's 4 s, which the
 * reference's fetch uses), the pace of a model that thinks between calls, against one after 1 s,
 * on the same process: 30 calls first. Against a fake over TLS (a certificate made for the run,
 * trusted through NODE_EXTRA_CA_CERTS), as GitHub is reached: a call that finds no kept connection
 * first connects and negotiates TLS, which on a real network costs round trips this loopback
 * does not show. 3 processes each, alternated.
 */
async function afterIdle(before) {
  const IDLE_MS = 12_000
  const keelCall = { name: 'get_issue', arguments: { repo: 'octo/demo', issue_number: 1 } }
  await afterPauseOverTls(
    `github: a call after ${IDLE_MS / 1000} s idle against one after 1 s (get_issue against the fake over TLS; 30 calls first; median of 3 processes)`,
    (tls) => startFake({ ms: 0 }, tls),
    (fake, trusted) => {
      const keel = (label, bin) => ({
        label,
        command: process.execPath,
        args: [bin],
        env: { GITHUB_TOKEN: TOKEN, GITHUB_API_URL: fake.url, LOG_LEVEL: 'silent', ...trusted },
        call: keelCall,
      })
      return [
        keel('keel github', OURS),
        ...(before ? [keel('keel github (before)', before)] : []),
        {
          label: 'reference github',
          command: process.execPath,
          args: ['--import', REDIRECT, REFERENCE],
          env: { GITHUB_PERSONAL_ACCESS_TOKEN: TOKEN, GITHUB_BENCH_API: fake.url, ...trusted },
          call: { name: 'get_issue', arguments: { owner: 'octo', repo: 'demo', issue_number: 1 } },
        },
      ]
    },
    { idleMs: IDLE_MS },
  )
}

/**
 * GitHub answers after tens of milliseconds: what matters then is that concurrent calls are not
 * serialised by the client's scheduling. Both servers against the fake answering after
 * LATENCY_MS, calls/s with 8 in flight; the bound is 8 ÷ 20 ms = 400 calls/s.
 */
async function slowApi(contenders, latency) {
  const LATENCY_MS = Number(process.env.BENCH_GITHUB_LATENCY_MS ?? 20)
  const INFLIGHT = 8
  const TOTAL = 400
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
  latency.ms = LATENCY_MS
  const perSecond = contenders.map(() => [])
  try {
    const clients = []
    for (const contender of contenders) {
      const client = new RawClient(contender.command, contender.args, { env: contender.env })
      await client.initialize()
      // Warm: Octokit loaded, connections open.
      await callsPerSecond(client, contender.call, 40, INFLIGHT, contender.call.name)
      clients.push(client)
    }
    for (let round = 0; round < rounds; round++) {
      for (const [index, contender] of contenders.entries()) {
        perSecond[index].push(
          await callsPerSecond(clients[index], contender.call, TOTAL, INFLIGHT, contender.call.name),
        )
      }
    }
    await Promise.all(clients.map((client) => client.close()))
  } finally {
    latency.ms = 0
  }
  const medians = perSecond.map(median)
  const reference = medians[medians.length - 1]
  console.log(
    `\n#### github: ${INFLIGHT} calls in flight, the API answering after ${LATENCY_MS} ms (bound ${Math.round((INFLIGHT * 1000) / LATENCY_MS)} calls/s)\n`,
  )
  table(
    ['', 'calls/s (median)', 'spread', 'of the bound', '÷ reference'],
    contenders.map((contender, index) => [
      contender.label,
      medians[index].toFixed(0),
      `${Math.min(...perSecond[index]).toFixed(0)}–${Math.max(...perSecond[index]).toFixed(0)}`,
      `${Math.round((medians[index] * LATENCY_MS * 100) / (INFLIGHT * 1000))}%`,
      ratio(medians[index], reference),
    ]),
  )
}

/**
 * What core's operations flags cost a GitHub call (#28: ≤ 1.05× a warm call), the same way the core
 * suite measures them on a no-op and on fs: Keel github with metrics, with metrics and every span
 * recorded (the call's span and its HTTP request's, to a loopback OTLP sink), and with an audit log
 * and a rate limit never reached, against itself with all of them off; after 1,000 calls each.
 */
async function operationsCost(ours, call) {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'keel-bench-github-ops-')))
  const sink = await startOtlpSink()
  try {
    const { endpoint } = sink
    const [metrics, spans, audited, plain] = await compareServers(
      'github: operations on, get_issue, steady state (1000 calls first)',
      [
        { label: 'metrics', ...ours(['--metrics-port', '0']), call },
        {
          label: 'metrics + OpenTelemetry',
          ...ours(['--metrics-port', '0', '--otel-endpoint', endpoint]),
          call,
        },
        {
          label: 'audit log + rate limit',
          ...ours(['--audit-log', join(dir, 'audit.jsonl'), '--rate-limit', '1000000/s']),
          call,
        },
        { label: 'keel github (all off)', ...ours(), call, reference: true },
      ],
      { warmup: 1000, calls: 1000, inflightCalls: 2000 },
    )
    const line = (label, figures) =>
      `${label}: CPU per call ${ratio(figures.cpu, plain.cpu)} (+${(figures.cpu - plain.cpu).toFixed(3)} ms), at 8 in flight ${ratio(figures.cpuInflight, plain.cpuInflight)}`
    console.log(
      `\nGoal (#28): operations on ≤ 1.05× a warm call (keel github get_issue: ${plain.cpu.toFixed(3)} ms server CPU a call). ${line('Metrics', metrics)}; ${line('metrics + OpenTelemetry, every span recorded', spans)}; ${line('audit log + rate limit', audited)}.`,
    )
  } finally {
    sink.close()
    await rm(dir, { recursive: true, force: true })
  }
}

export async function run() {
  if (!existsSync(OURS))
    throw new Error(`${OURS} is missing: run pnpm --filter @keel-mcp/server-github build`)
  const latency = { ms: 0 }
  const fake = await startFake(latency)
  try {
    const ours = (args = [], env = {}) => ({
      command: process.execPath,
      args: [OURS, ...args],
      env: { GITHUB_TOKEN: TOKEN, GITHUB_API_URL: fake.url, LOG_LEVEL: 'silent', ...env },
    })
    const reference = {
      command: process.execPath,
      args: ['--import', REDIRECT, REFERENCE],
      env: { GITHUB_PERSONAL_ACCESS_TOKEN: TOKEN, GITHUB_BENCH_API: fake.url },
    }

    // GITHUB_BENCH_BEFORE=<a bin> adds an earlier build of Keel github to the same run (before/after).
    // A relative path is taken from where `pnpm bench` was typed (pnpm runs the suite in tools/bench).
    const before = process.env.GITHUB_BENCH_BEFORE
      ? resolve(process.env.INIT_CWD ?? process.cwd(), process.env.GITHUB_BENCH_BEFORE)
      : undefined
    const keelCall = { name: 'get_issue', arguments: { repo: 'octo/demo', issue_number: 1 } }
    const keel = [
      { label: 'keel github', ...ours(), call: keelCall },
      ...(before ? [{ label: 'keel github (before)', ...ours(), args: [before], call: keelCall }] : []),
    ]

    // The common per-server figures: get_issue against the fake (the first call loads Octokit: the
    // harness warms up before it measures). BENCH_GITHUB_LATENCY_ONLY=1 runs only the 20 ms figures.
    const latencyOnly = process.env.BENCH_GITHUB_LATENCY_ONLY === '1'
    const figures = latencyOnly
      ? []
      : await compareServers('github', [
          ...keel,
          {
            label: 'reference github',
            ...reference,
            call: { name: 'get_issue', arguments: { owner: 'octo', repo: 'demo', issue_number: 1 } },
            reference: true,
          },
        ])
    const [oursFigures, referenceFigures] = [figures[0], figures.at(-1)]
    if (!latencyOnly)
      console.log(
        `\nget_issue: CPU ${ratio(oursFigures.cpu, referenceFigures.cpu)}, p50 ${ratio(oursFigures.p50, referenceFigures.p50)} of the reference; ${fake.requests().toLocaleString('en')} requests served by the fake.`,
      )
    await slowApi(
      [
        ...keel,
        {
          label: 'reference github',
          ...reference,
          call: { name: 'get_issue', arguments: { owner: 'octo', repo: 'demo', issue_number: 1 } },
        },
      ],
      latency,
    )
    if (!latencyOnly) await operationsCost(ours, keelCall)
    if (!latencyOnly) await afterIdle(before)
    if (process.env.BENCH_DOMAIN === '0' || latencyOnly) return

    // Catalogue by toolset choice: what every conversation pays for the tool list.
    const rows = []
    for (const [name, spec] of [
      ['keel, default toolsets', ours()],
      ['keel, --toolsets all', ours(['--toolsets', 'all'])],
      ['reference 2025.4.8', reference],
    ]) {
      const client = new RawClient(spec.command, spec.args, { env: spec.env })
      await client.initialize()
      const { message } = await client.request('tools/list')
      const tools = message.result.tools
      const bytes = Buffer.byteLength(JSON.stringify(tools))
      rows.push([
        name,
        tools.length,
        formatBytes(bytes),
        Math.round(bytes / 4),
        Math.round(bytes / 4 / tools.length),
      ])
      await client.close()
    }
    rows.push([
      PEER.label,
      PEER.tools,
      formatBytes(PEER.bytes),
      Math.round(PEER.bytes / 4),
      Math.round(PEER.bytes / 4 / PEER.tools),
    ])
    console.log('\n#### github: catalogue by toolsets (tokens ≈ JSON bytes ÷ 4)\n')
    table(['', 'tools', 'size', 'tokens', 'tokens a tool'], rows)

    // One answer's size: the reference returns GitHub's raw payload, keel a trimmed one.
    const sizes = []
    for (const [name, spec, args] of [
      ['keel', ours(), { repo: 'octo/demo', issue_number: 1 }],
      ['reference 2025.4.8', reference, { owner: 'octo', repo: 'demo', issue_number: 1 }],
    ]) {
      const client = new RawClient(spec.command, spec.args, { env: spec.env })
      await client.initialize()
      const { bytes } = await client.callTool('get_issue', args)
      sizes.push([name, formatBytes(bytes)])
      await client.close()
    }
    console.log('\n#### github: get_issue answer size\n')
    table(['', 'answer'], sizes)
  } finally {
    await fake.close()
  }
}
