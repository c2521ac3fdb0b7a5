// Streamable HTTP under load: one server, 32 concurrent clients (autocannon connections, each with
// one request in flight), sustained calls/s and latency percentiles, Keel against the SDK's plain
// Streamable HTTP server with the same no-op tool (baselines/), alternated round by round.
//
// Three pairs of runs. Stateless (no session: every POST is served on its own, 2025-era requests
// carrying `MCP-Protocol-Version`), which is how a load-balanced deployment runs; the same call
// from a 2026-07-28 client; and the same 2025-era call on one 2025-era session of each server (the
// SDK's stateful transport per session, as its docs serve them, without an event store; Keel's
// sessions keep one, for `Last-Event-ID`), which is how a single 2025-era server runs by default.
// All 32 clients share that session: its requests are not kept in order by either server. Keel's
// runs include everything its front door does for every request (Host/Origin checks, body limit,
// JSON-RPC envelope check, per-call pipeline).
//
//   pnpm --filter @keel-mcp/bench bench:http       HTTP_BENCH_SECONDS=5 HTTP_BENCH_ROUNDS=3
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { median, processTree, table } from './rpc.mjs'

const autocannon = createRequire(import.meta.url)('autocannon')
const baseline = (name) => fileURLToPath(new URL(`./baselines/${name}`, import.meta.url))
const CONNECTIONS = 32
const SECONDS = Number(process.env.HTTP_BENCH_SECONDS ?? 5)
const ROUNDS = Number(process.env.HTTP_BENCH_ROUNDS ?? 3)
const BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'noop', arguments: { text: 'hello' } },
})
const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
}
/** The same call from a 2026-07-28 client: the `_meta` envelope and the standard headers. */
const MODERN_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: {
    name: 'noop',
    arguments: { text: 'hello' },
    _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'keel-bench', version: '1.0.0' },
      'io.modelcontextprotocol/clientCapabilities': {},
    },
  },
})
const MODERN_HEADERS = {
  ...HEADERS,
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': 'noop',
}
const REQUESTS = {
  legacy: { body: BODY, headers: HEADERS },
  modern: { body: MODERN_BODY, headers: MODERN_HEADERS },
  session: { body: BODY, headers: HEADERS },
}

/** The request of `era` to `server`: on its session, for a session run. */
function requestOf(server, era) {
  const { body, headers } = REQUESTS[era]
  return { body, headers: server.session ? { ...headers, 'mcp-session-id': server.session } : headers }
}

/** Opens a 2025-era session on `server` (initialize, then `notifications/initialized`). */
async function openSession(server) {
  const initialize = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'keel-bench', version: '1.0.0' },
      },
    }),
  })
  await initialize.text()
  const session = initialize.headers.get('mcp-session-id')
  if (!session) throw new Error(`${server.url} opened no session (${initialize.status})`)
  server.session = session
  const initialized = await fetch(server.url, {
    method: 'POST',
    headers: { ...HEADERS, 'mcp-session-id': session },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  })
  await initialized.text()
}

/** Spawns a server that prints its URL on stderr; resolves once it listens. */
function startServer(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['pipe', 'ignore', 'pipe'] })
    let stderr = ''
    const timer = setTimeout(() => reject(new Error(`no URL within 20 s: ${stderr}`)), 20_000)
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk) => {
      stderr += chunk
      const url = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr)?.[1]
      if (url) {
        clearTimeout(timer)
        resolve({
          url,
          pid: child.pid,
          stop: () =>
            new Promise((done) => {
              child.once('exit', done)
              child.kill('SIGTERM')
            }),
        })
      }
    })
    child.once('exit', (code) => reject(new Error(`exited (${code}): ${stderr}`)))
  })
}

function cpuMs(pid) {
  const { readdirSync, readFileSync } = createRequire(import.meta.url)('node:fs')
  let total = 0
  for (const process of processTree(pid)) {
    for (const task of readdirSync(`/proc/${process}/task`)) {
      total += Number(readFileSync(`/proc/${process}/task/${task}/schedstat`, 'utf8').split(' ')[0])
    }
  }
  return total / 1e6
}

/** One call by hand first: the load must be answers, not errors that happen to be 200s. */
async function checkAnswer(server, era) {
  const { body, headers } = requestOf(server, era)
  const response = await fetch(server.url, { method: 'POST', headers, body })
  const text = await response.text()
  if (!response.ok || !text.includes('"result"') || text.includes('"isError":true')) {
    throw new Error(`${server.url} answered ${response.status}: ${text.slice(0, 300)}`)
  }
}

function load(server, era) {
  const { body, headers } = requestOf(server, era)
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: server.url,
        method: 'POST',
        headers,
        body,
        connections: CONNECTIONS,
        pipelining: 1,
        duration: SECONDS,
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    )
  })
}

export async function run() {
  const keelArgs = [baseline('keel-noop.mjs'), '--transport', 'http', '--port', '0', '--stateless']
  const sdkArgs = [baseline('sdk-noop.mjs'), '--http', '0']
  // Both eras on the same two servers: 2025-era requests (stateless) and 2026-07-28 ones; then
  // 2025-era sessions on a server of each that keeps them.
  const contenders = [
    { label: 'keel no-op', args: keelArgs, era: 'legacy' },
    { label: 'SDK no-op', args: sdkArgs, era: 'legacy' },
    { label: 'keel no-op, 2026-07-28', args: keelArgs, era: 'modern' },
    { label: 'SDK no-op, 2026-07-28', args: sdkArgs, era: 'modern' },
    {
      label: 'keel no-op, 2025 session',
      args: [baseline('keel-noop.mjs'), '--transport', 'http', '--port', '0'],
      era: 'session',
    },
    {
      label: 'SDK no-op, 2025 session',
      args: [baseline('sdk-noop.mjs'), '--http-sessions', '0'],
      era: 'session',
    },
  ]
  const servers = []
  try {
    for (const contender of contenders) servers.push(await startServer(contender.args))
    for (const [index, server] of servers.entries())
      if (contenders[index].era === 'session') await openSession(server)
    for (const [index, server] of servers.entries()) await checkAnswer(server, contenders[index].era)
    // Warm-up: JIT and sockets, unmeasured.
    for (const [index, server] of servers.entries()) await load(server, contenders[index].era)
    const samples = contenders.map(() => ({ rate: [], p50: [], p99: [], cpu: [], errors: 0, total: 0 }))
    for (let round = 0; round < ROUNDS; round++) {
      for (const [index, server] of servers.entries()) {
        const cpuBefore = cpuMs(server.pid)
        const result = await load(server, contenders[index].era)
        const answered = result.requests.total
        samples[index].rate.push(answered / SECONDS)
        samples[index].p50.push(result.latency.p50)
        samples[index].p99.push(result.latency.p99)
        samples[index].cpu.push((cpuMs(server.pid) - cpuBefore) / Math.max(1, answered))
        samples[index].errors += result.errors + result.timeouts + result.non2xx
        samples[index].total += answered
      }
    }
    const spread = (values, digits = 0) =>
      `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`
    console.log(
      `#### Streamable HTTP, ${CONNECTIONS} concurrent clients (autocannon ${createRequire(import.meta.url)('autocannon/package.json').version}), ${ROUNDS} alternated rounds of ${SECONDS} s, medians (spread)\n`,
    )
    const [keel, , keelModern, , keelSession] = samples
    // Latency is in whole milliseconds: a median of 0 is read as 1 on either side (no division by
    // zero, and no 0.00× for a median under a millisecond).
    const ratio = (a, b, { higher = false, wholeMs = false } = {}) =>
      `${(wholeMs ? Math.max(1, median(a)) / Math.max(1, median(b)) : median(a) / median(b)).toFixed(2)}×${higher ? ' (higher is better)' : ''}`
    // Keel ÷ SDK for each pair of contenders: stateless 2025, 2026-07-28, 2025 session.
    const pairs = [0, 2, 4].map((at) => [samples[at], samples[at + 1]])
    const ratios = (measure, options) =>
      pairs.map(([ours, theirs]) => ratio(ours[measure], theirs[measure], options))
    table(
      [
        'measure',
        ...contenders.map((contender) => contender.label),
        'keel ÷ SDK, stateless',
        'keel ÷ SDK, 2026-07-28',
        'keel ÷ SDK, 2025 session',
      ],
      [
        ['calls/s', ...samples.map((sample) => spread(sample.rate)), ...ratios('rate', { higher: true })],
        [
          'latency p50 (ms)',
          ...samples.map((sample) => spread(sample.p50)),
          ...ratios('p50', { wholeMs: true }),
        ],
        [
          'latency p99 (ms)',
          ...samples.map((sample) => spread(sample.p99)),
          ...ratios('p99', { wholeMs: true }),
        ],
        ['server CPU per call (ms)', ...samples.map((sample) => spread(sample.cpu, 3)), ...ratios('cpu')],
        [
          'errors (non-2xx, resets, timeouts)',
          ...samples.map((sample) => `${sample.errors} of ${sample.total.toLocaleString('en')}`),
          '',
          '',
          '',
        ],
      ],
    )
    console.log('\nautocannon measures latency in whole milliseconds.')
    console.log(
      `2026-07-28 ÷ 2025, same Keel server: CPU per call ${(median(keelModern.cpu) / median(keel.cpu)).toFixed(2)}×, calls/s ${(median(keelModern.rate) / median(keel.rate)).toFixed(2)}×.`,
    )
    console.log(
      `2025 session ÷ 2025 stateless, Keel: CPU per call ${(median(keelSession.cpu) / median(keel.cpu)).toFixed(2)}×, calls/s ${(median(keelSession.rate) / median(keel.rate)).toFixed(2)}×.`,
    )
  } finally {
    await Promise.all(servers.map((server) => server.stop()))
  }
}
