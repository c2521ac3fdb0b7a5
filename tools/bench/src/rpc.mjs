// A raw JSON-RPC-over-stdio client for benchmarks: no SDK client in the measured path, so the
// figures are the server's (the SDK client's own buffering would otherwise be counted).
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'

/**
 * What a 2026-07-28 client stamps on every request: its version and capabilities travel with each
 * request instead of an `initialize` handshake.
 */
const MODERN_META = Object.freeze({
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'keel-bench', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
})

export class RawClient {
  #child
  #buffer = ''
  #waiters = new Map()
  #nextId = 1
  /** `legacy` (the 2025 `initialize` handshake, the default) or `modern` (2026-07-28). */
  #era
  stderr = ''

  constructor(command, args, options = {}) {
    this.#era = options.era ?? 'legacy'
    this.#child = spawn(command, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env },
    })
    this.#child.stdout.setEncoding('utf8')
    this.#child.stdout.on('data', (chunk) => this.#onData(chunk))
    this.#child.stderr.on('data', (chunk) => {
      this.stderr = (this.stderr + chunk).slice(-4000)
    })
    this.pid = this.#child.pid
    this.exited = new Promise((resolve) => this.#child.once('exit', resolve))
    // A server that dies fails its pending requests at once, with its stderr, instead of timing out.
    const fail = (error) => {
      for (const [id, waiter] of this.#waiters) {
        this.#waiters.delete(id)
        waiter.reject(error)
      }
    }
    this.#child.once('error', fail)
    void this.exited.then((code) =>
      fail(new Error(`${command} exited (${code}) with requests pending; stderr: ${this.stderr}`)),
    )
    this.#child.stdin.on('error', () => {})
  }

  #onData(chunk) {
    this.#buffer += chunk
    let index = this.#buffer.indexOf('\n')
    while (index !== -1) {
      const line = this.#buffer.slice(0, index)
      this.#buffer = this.#buffer.slice(index + 1)
      index = this.#buffer.indexOf('\n')
      if (!line.trim()) continue
      const bytes = Buffer.byteLength(line)
      let message
      try {
        message = JSON.parse(line)
      } catch {
        continue
      }
      const waiter = message.id !== undefined ? this.#waiters.get(message.id) : undefined
      if (waiter) {
        this.#waiters.delete(message.id)
        waiter.resolve({ message, bytes, ms: performance.now() - waiter.started })
      }
    }
  }

  request(method, params, timeoutMs = 120_000) {
    const id = this.#nextId++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(id)
        reject(new Error(`${method} timed out after ${timeoutMs} ms; stderr: ${this.stderr}`))
      }, timeoutMs)
      this.#waiters.set(id, {
        started: performance.now(),
        resolve: (value) => {
          clearTimeout(timer)
          resolve(value)
        },
        reject: (error) => {
          clearTimeout(timer)
          reject(error)
        },
      })
      if (this.#era === 'modern') params = { ...params, _meta: { ...params?._meta, ...MODERN_META } }
      this.#child.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) })}\n`,
      )
    })
  }

  notify(method, params) {
    this.#child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method, ...(params ? { params } : {}) })}\n`)
  }

  async initialize() {
    // A 2026-07-28 client discovers the server; there is no handshake to complete.
    if (this.#era === 'modern') return this.request('server/discover', {})
    const result = await this.request('initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'keel-bench', version: '1.0.0' },
    })
    this.notify('notifications/initialized')
    return result
  }

  async callTool(name, args, timeoutMs) {
    return this.request('tools/call', { name, arguments: args }, timeoutMs)
  }

  /** Resident set size of the server process in KiB (Linux /proc). */
  async rssKiB() {
    const { readFile } = await import('node:fs/promises')
    const status = await readFile(`/proc/${this.pid}/status`, 'utf8')
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN)
  }

  /** Peak resident set size in KiB. */
  async peakRssKiB() {
    const { readFile } = await import('node:fs/promises')
    const status = await readFile(`/proc/${this.pid}/status`, 'utf8')
    return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN)
  }

  /**
   * CPU time of the server process and its descendants, all threads, in ms: the sum of each
   * thread's on-CPU time from /proc/<pid>/task/<tid>/schedstat (nanoseconds; /proc/<pid>/stat's
   * utime + stime counts in 10 ms ticks, too coarse for a few hundred sub-millisecond calls).
   */
  cpuMs() {
    return processTree(this.pid).reduce((sum, pid) => sum + threadsCpuNs(pid), 0) / 1e6
  }

  /** Peak resident set size (VmHWM) of the server and its descendants, summed, in KiB. */
  treePeakRssKiB() {
    return processTree(this.pid).reduce((sum, pid) => sum + statusField(pid, 'VmHWM'), 0)
  }

  /**
   * Closes stdin and waits for the exit. Resolves with the wait in ms, or `undefined` when the
   * server was still running after `deadlineMs` and had to be killed.
   */
  closeTimed(deadlineMs = 5000) {
    const started = performance.now()
    return new Promise((resolve) => {
      if (this.#child.exitCode !== null || this.#child.signalCode !== null) return resolve(0)
      const timer = setTimeout(() => {
        this.#child.kill('SIGKILL')
        resolve(undefined)
      }, deadlineMs)
      this.#child.once('exit', () => {
        clearTimeout(timer)
        resolve(performance.now() - started)
      })
      this.#child.stdin.end()
    })
  }

  close() {
    return new Promise((resolve) => {
      if (this.#child.exitCode !== null) return resolve()
      const timer = setTimeout(() => this.#child.kill('SIGKILL'), 3000)
      this.#child.once('exit', () => {
        clearTimeout(timer)
        resolve()
      })
      this.#child.stdin.end()
    })
  }
}

function threadsCpuNs(pid) {
  let total = 0
  let tasks = []
  try {
    tasks = readdirSync(`/proc/${pid}/task`)
  } catch {
    return 0 // the process ended between listing and reading
  }
  for (const task of tasks) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      // the thread ended
    }
  }
  return total
}

function statusField(pid, field) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
  } catch {
    return 0
  }
}

/** A process and all its descendants (Linux: /proc/<pid>/task/<tid>/children). */
export function processTree(pid) {
  const all = [pid]
  for (let index = 0; index < all.length; index++) {
    const current = all[index]
    let tasks = []
    try {
      tasks = readdirSync(`/proc/${current}/task`)
    } catch {
      continue
    }
    for (const task of tasks) {
      try {
        const children = readFileSync(`/proc/${current}/task/${task}/children`, 'utf8').trim()
        if (children) all.push(...children.split(' ').map(Number))
      } catch {
        // gone
      }
    }
  }
  return all
}

/** Time from spawn to the tools/list answer, median of `runs`, for each command, interleaved. */
export async function coldStart(commands, runs = 11) {
  const samples = commands.map(() => [])
  for (let run = 0; run < runs; run++) {
    for (const [index, { command, args, env }] of commands.entries()) {
      const started = performance.now()
      const client = new RawClient(command, args, { env })
      await client.initialize()
      await client.request('tools/list')
      samples[index].push(performance.now() - started)
      await client.close()
    }
  }
  return samples.map(median)
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

/** Median wall time of `fn` over `runs` runs. */
export async function timeIt(fn, runs = 5) {
  const samples = []
  let last
  for (let run = 0; run < runs; run++) {
    const started = performance.now()
    last = await fn()
    samples.push(performance.now() - started)
  }
  return { ms: median(samples), last }
}

export function ratio(a, b) {
  return `${(a / b).toFixed(2)}×`
}

export function formatBytes(bytes) {
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${bytes} B`
}

/** Prints a Markdown table of rows (arrays) with a header (the results file is the printed output). */
export function table(header, rows) {
  const widths = header.map((cell, index) =>
    Math.max(3, String(cell).length, ...rows.map((row) => String(row[index] ?? '').length)),
  )
  const line = (row) =>
    `| ${row.map((cell, index) => String(cell ?? '').padEnd(widths[index])).join(' | ')} |`
  console.log(line(header))
  console.log(`| ${widths.map((width) => '-'.repeat(width)).join(' | ')} |`)
  for (const row of rows) console.log(line(row))
}

/** Value at quantile `q` (0..1) of `values`. */
export function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]
}

/**
 * A loopback OTLP/HTTP receiver that takes every export and keeps nothing: where the servers under
 * test send their spans and metrics. Returns its base endpoint and how to close it.
 */
export async function startOtlpSink() {
  const sink = createServer((request, response) => {
    request.resume()
    request.on('end', () => response.end('{}'))
  })
  await new Promise((resolve) => sink.listen(0, '127.0.0.1', resolve))
  return { endpoint: `http://127.0.0.1:${sink.address().port}`, close: () => sink.close() }
}
