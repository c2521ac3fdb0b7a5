// Streamable HTTP under load: one server, 32 concurrent clients (autocannon connections, each with
// one request in flight), sustained calls/s and latency percentiles, Keel against the SDK's plain
// Streamable HTTP server with the same no-op tool (baselines/), alternated round by round.
//
// Both servers run stateless (no session: every POST is served on its own, 2025-era requests
// carrying `MCP-Protocol-Version`), which is how a load-balanced deployment runs and the one mode
// both serve the same way. A session-based run would add the session lookup on both sides but keep
// a single session's requests in order. Keel's run includes everything its front door does for
// every request (Host/Origin checks, body limit, JSON-RPC envelope check, per-call pipeline).
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
async function checkAnswer(url) {
  const response = await fetch(url, { method: 'POST', headers: HEADERS, body: BODY })
  const text = await response.text()
  if (!response.ok || !text.includes('"result"') || text.includes('"isError":true')) {
    throw new Error(`${url} answered ${response.status}: ${text.slice(0, 300)}`)
  }
}

function load(url) {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        method: 'POST',
        headers: HEADERS,
        body: BODY,
        connections: CONNECTIONS,
        pipelining: 1,
        duration: SECONDS,
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    )
  })
}

export async function run() {
  const contenders = [
    {
      label: 'keel no-op',
      args: [baseline('keel-noop.mjs'), '--transport', 'http', '--port', '0', '--stateless'],
    },
    { label: 'SDK no-op', args: [baseline('sdk-noop.mjs'), '--http', '0'] },
  ]
  const servers = []
  try {
    for (const contender of contenders) servers.push(await startServer(contender.args))
    for (const server of servers) await checkAnswer(server.url)
    // Warm-up: JIT and sockets, unmeasured.
    for (const server of servers) await load(server.url)
    const samples = contenders.map(() => ({ rate: [], p50: [], p99: [], cpu: [], errors: 0, total: 0 }))
    for (let round = 0; round < ROUNDS; round++) {
      for (const [index, server] of servers.entries()) {
        const cpuBefore = cpuMs(server.pid)
        const result = await load(server.url)
        const answered = result.requests.total
        samples[index].rate.push(answered / SECONDS)
        samples[index].p50.push(result.latency.p50)
        samples[index].p99.push(result.latency.p99)
        samples[index].cpu.push((cpuMs(server.pid) - cpuBefore) / Math.max(1, answered))
        samples[index].errors += result.errors + result.timeouts + result.non2xx
        samples[index].total += answered
      }
    }
    const [keel, sdk] = samples
    const spread = (values, digits = 0) =>
      `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`
    console.log(
      `#### Streamable HTTP, ${CONNECTIONS} concurrent clients (autocannon ${createRequire(import.meta.url)('autocannon/package.json').version}), stateless, ${ROUNDS} alternated rounds of ${SECONDS} s, medians (spread)\n`,
    )
    table(
      ['measure', 'keel no-op', 'SDK no-op', 'keel ÷ SDK'],
      [
        [
          'calls/s',
          spread(keel.rate),
          spread(sdk.rate),
          `${(median(keel.rate) / median(sdk.rate)).toFixed(2)}× (higher is better)`,
        ],
        [
          'latency p50 (ms)',
          spread(keel.p50),
          spread(sdk.p50),
          `${(median(keel.p50) / Math.max(1, median(sdk.p50))).toFixed(2)}×`,
        ],
        [
          'latency p99 (ms)',
          spread(keel.p99),
          spread(sdk.p99),
          `${(median(keel.p99) / median(sdk.p99)).toFixed(2)}×`,
        ],
        [
          'server CPU per call (ms)',
          spread(keel.cpu, 3),
          spread(sdk.cpu, 3),
          `${(median(keel.cpu) / median(sdk.cpu)).toFixed(2)}×`,
        ],
        [
          'errors (non-2xx, resets, timeouts)',
          `${keel.errors} of ${keel.total.toLocaleString('en')}`,
          `${sdk.errors} of ${sdk.total.toLocaleString('en')}`,
          '',
        ],
      ],
    )
    console.log('\nautocannon measures latency in whole milliseconds.')
  } finally {
    await Promise.all(servers.map((server) => server.stop()))
  }
}
