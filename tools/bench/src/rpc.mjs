// A raw JSON-RPC-over-stdio client for benchmarks: no SDK client in the measured path, so the
// figures are the server's (the SDK client's own buffering would otherwise be counted).
import { spawn } from 'node:child_process'

export class RawClient {
  #child
  #buffer = ''
  #waiters = new Map()
  #nextId = 1
  stderr = ''

  constructor(command, args, options = {}) {
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
      })
      this.#child.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) })}\n`,
      )
    })
  }

  notify(method, params) {
    this.#child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method, ...(params ? { params } : {}) })}\n`)
  }

  async initialize() {
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

/** Prints a table of rows (arrays) with a header. */
export function table(header, rows) {
  const widths = header.map((cell, index) =>
    Math.max(String(cell).length, ...rows.map((row) => String(row[index]).length)),
  )
  const line = (row) => row.map((cell, index) => String(cell).padEnd(widths[index])).join('  ')
  console.log(line(header))
  console.log(widths.map((width) => '-'.repeat(width)).join('  '))
  for (const row of rows) console.log(line(row))
}
