// node tools/bench/src/alloc.mjs — JavaScript heap bytes allocated per warm call, and the share of
// the server's CPU its garbage collection takes, measured inside the server (alloc-probe.mjs) over
// N calls at 8 in flight after a warm-up: core's no-op server, and the postgres `query` of
// `SELECT 1` and of ten rows (a throwaway cluster, the postgres tests' harness; build first).
//
//   ALLOC_BASE=<another checkout, built>  measures it too, alternated with this one (A/B)
//   ALLOC_CASES=noop,pg1,pg10 (ref1, ref10: the reference server) · ALLOC_CALLS=5000 · ALLOC_WARMUP=1000 · ALLOC_ROUNDS=2
//   ALLOC_PROFILE_DIR=<dir>  also writes a sampling heap profile of each run there
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const repo = fileURLToPath(new URL('../../../', import.meta.url))
const probe = fileURLToPath(new URL('./alloc-probe.mjs', import.meta.url))
const calls = Number(process.env.ALLOC_CALLS ?? 5000)
const warmup = Number(process.env.ALLOC_WARMUP ?? 1000)
const rounds = Number(process.env.ALLOC_ROUNDS ?? 2)
const inFlight = 8

class Server {
  #buffer = ''
  #waiters = new Map()
  #nextId = 1
  stderr = ''

  constructor(args, env) {
    this.child = spawn(process.execPath, ['--expose-gc', '--import', probe, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    })
    this.child.stdout.setEncoding('utf8')
    this.child.stdout.on('data', (text) => {
      this.#buffer += text
      for (let end = this.#buffer.indexOf('\n'); end !== -1; end = this.#buffer.indexOf('\n')) {
        const message = JSON.parse(this.#buffer.slice(0, end))
        this.#buffer = this.#buffer.slice(end + 1)
        this.#waiters.get(message.id)?.(message)
        this.#waiters.delete(message.id)
      }
    })
    this.child.stderr.setEncoding('utf8')
    this.child.stderr.on('data', (text) => {
      this.stderr += text
    })
  }

  request(method, params) {
    const id = this.#nextId++
    return new Promise((resolve) => {
      this.#waiters.set(id, resolve)
      this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`)
    })
  }

  async start() {
    await this.request('initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'alloc-bench', version: '0' },
    })
    this.child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    await this.request('tools/list', {})
  }

  /** `count` calls, 8 in flight; throws on an error answer. */
  async calls(count, call) {
    let sent = 0
    const lane = async () => {
      while (sent < count) {
        sent++
        const answer = await this.request('tools/call', call)
        if (answer.error || answer.result?.isError) throw new Error(JSON.stringify(answer).slice(0, 300))
      }
    }
    await Promise.all(Array.from({ length: inFlight }, lane))
  }

  /** Signals the probe and waits for its line. */
  async mark(expect) {
    const from = this.stderr.length
    this.child.kill('SIGUSR2')
    for (;;) {
      const at = this.stderr.indexOf(expect, from)
      if (at !== -1) return this.stderr.slice(at + expect.length).split('\n')[0]
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }

  close() {
    this.child.stdin.end()
    return new Promise((resolve) => this.child.on('exit', resolve))
  }
}

async function measure(label, [args, env, call]) {
  const profileDir = process.env.ALLOC_PROFILE_DIR
  const server = new Server(args, {
    ...env,
    ...(profileDir ? { ALLOC_PROFILE: join(profileDir, `${label.replaceAll(' ', '-')}.heapprofile`) } : {}),
  })
  await server.start()
  await server.calls(warmup, call)
  await server.mark('ALLOC_PROBE started')
  const started = performance.now()
  await server.calls(calls, call)
  const seconds = (performance.now() - started) / 1000
  const probed = JSON.parse(await server.mark('ALLOC_PROBE {').then((rest) => `{${rest}`))
  await server.close()
  return {
    label,
    bytes: Math.round(probed.allocated / calls),
    gcShare: probed.gcMicros / probed.cpuMicros,
    cpuMicros: probed.cpuMicros / calls,
    collections: `${probed.scavenges} scavenges, ${probed.others} other`,
    rate: Math.round(calls / seconds),
  }
}

const roots = [['this', repo]]
if (process.env.ALLOC_BASE) roots.unshift(['base', process.env.ALLOC_BASE])
const selected = (process.env.ALLOC_CASES ?? 'noop,pg1,pg10').split(',')
const tenRows = 'SELECT * FROM bulk.measurements ORDER BY id LIMIT 10'
let cluster
let url
if (selected.some((name) => name.startsWith('pg') || name.startsWith('ref'))) {
  const { loadHarness } = await import(join(repo, 'servers/postgres/test/harness/node-entry.mjs'))
  const { startPostgres, seedSampleSchema } = await loadHarness()
  cluster = await startPostgres()
  await seedSampleSchema(cluster.superuserUrl, { bulkRows: 1000 })
  url = cluster.url
}
const reference = join(repo, 'tools/bench/node_modules/@modelcontextprotocol/server-postgres/dist/index.js')
const cases = {
  noop: (root) => [
    [join(root, 'tools/bench/src/baselines/keel-noop.mjs')],
    {},
    { name: 'noop', arguments: { text: 'hello' } },
  ],
  pg1: (root) => [
    [join(root, 'servers/postgres/dist/index.js')],
    { DATABASE_URL: url },
    { name: 'query', arguments: { sql: 'SELECT 1 AS one' } },
  ],
  // The reference server (@modelcontextprotocol/server-postgres), the same two queries.
  ref1: () => [[reference, url], {}, { name: 'query', arguments: { sql: 'SELECT 1 AS one' } }],
  ref10: () => [[reference, url], {}, { name: 'query', arguments: { sql: tenRows } }],
  pg10: (root) => [
    [join(root, 'servers/postgres/dist/index.js')],
    { DATABASE_URL: url },
    { name: 'query', arguments: { sql: tenRows } },
  ],
}
console.log(`| case | bytes a call | GC share of server CPU | server CPU a call | calls/s | collections |`)
console.log('| --- | --- | --- | --- | --- | --- |')
try {
  for (let round = 0; round < rounds; round++)
    for (const name of selected)
      for (const [tag, root] of name.startsWith('ref') ? [['', repo]] : roots) {
        const r = await measure(tag ? `${name} ${tag}` : name, cases[name](root))
        console.log(
          `| ${r.label} | ${r.bytes.toLocaleString('en')} | ${(r.gcShare * 100).toFixed(1)} % | ${r.cpuMicros.toFixed(1)} µs | ${r.rate} | ${r.collections} |`,
        )
      }
} finally {
  await cluster?.stop()
}
