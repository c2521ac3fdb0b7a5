import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

/** A raw newline-delimited JSON-RPC connection to a spawned server (for wire-level tests). */
export interface RawStdio {
  child: ChildProcessWithoutNullStreams
  /** Every stdout line seen so far, raw. */
  readonly lines: string[]
  /** Every stderr chunk seen so far. */
  readonly stderr: string[]
  /** Writes one raw line (a newline is appended). */
  send(line: string): void
  /** Writes a JSON value as one line. */
  sendJson(message: unknown): void
  /** Resolves with the next stdout message that satisfies `predicate` (parsed), or rejects after `timeoutMs`. */
  next(predicate?: (message: any) => boolean, timeoutMs?: number): Promise<any>
  /** Sends a request and resolves with its response. */
  request(method: string, params?: Record<string, unknown>, id?: number | string): Promise<any>
  /** Performs the 2025 `initialize` handshake. */
  initialize(protocolVersion?: string): Promise<any>
  /** Closes stdin and resolves with the exit code (and the time it took, in ms). */
  end(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>
}

/** Spawns `command` and speaks raw JSON-RPC lines to it. */
export function spawnRaw(
  command: string,
  args: string[] = [],
  options: { env?: Record<string, string>; cwd?: string } = {},
): RawStdio {
  const child = spawn(command, args, {
    env: { ...(process.env as Record<string, string>), ...options.env },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const lines: string[] = []
  const stderr: string[] = []
  const waiters: Array<{ predicate: (message: any) => boolean; resolve: (message: any) => void }> = []
  const parsed: any[] = []
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line)
    let message: unknown
    try {
      message = JSON.parse(line)
    } catch {
      return
    }
    const index = waiters.findIndex((waiter) => waiter.predicate(message))
    if (index >= 0) waiters.splice(index, 1)[0]?.resolve(message)
    else parsed.push(message)
  })
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()))
  let nextId = 1
  const raw: RawStdio = {
    child,
    lines,
    stderr,
    send(line) {
      child.stdin.write(`${line}\n`)
    },
    sendJson(message) {
      child.stdin.write(`${JSON.stringify(message)}\n`)
    },
    next(predicate = () => true, timeoutMs = 10_000) {
      const index = parsed.findIndex((message) => predicate(message))
      if (index >= 0) return Promise.resolve(parsed.splice(index, 1)[0])
      return new Promise((resolve, reject) => {
        const waiter = {
          predicate,
          resolve: (message: any) => {
            clearTimeout(timer)
            resolve(message)
          },
        }
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1)
          reject(
            new Error(`no matching message within ${timeoutMs} ms; stderr: ${stderr.join('').slice(-2000)}`),
          )
        }, timeoutMs)
        waiters.push(waiter)
      })
    },
    request(method, params, id = `raw-${nextId++}`) {
      raw.sendJson({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) })
      return raw.next((message) => message?.id === id)
    },
    async initialize(protocolVersion = '2025-11-25') {
      const result = await raw.request('initialize', {
        protocolVersion,
        capabilities: {},
        clientInfo: { name: 'raw-wire-test', version: '1.0.0' },
      })
      raw.sendJson({ jsonrpc: '2.0', method: 'notifications/initialized' })
      return result
    },
    end(timeoutMs = 5000) {
      const started = performance.now()
      return new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          resolve({ code: child.exitCode, signal: child.signalCode, ms: 0 })
          return
        }
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
        child.once('exit', (code, signal) => {
          clearTimeout(timer)
          resolve({ code, signal, ms: performance.now() - started })
        })
        child.stdin.end()
      })
    },
  }
  return raw
}

/** A server bin spawned with `--transport http --port 0`. */
export interface SpawnedHttpServer {
  /** The endpoint the server announced on stderr (`http://127.0.0.1:PORT/mcp`). */
  url: string
  child: ChildProcessWithoutNullStreams
  /** Everything written to stdout so far (an HTTP server writes nothing there). */
  stdout(): string
  stderr(): string
  /**
   * SIGTERM, then resolves with how the process ended. Rejects when the server wrote anything to
   * stdout: over HTTP stdout must stay empty (on stdio it carries only the protocol).
   */
  close(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/**
 * Spawns a server bin serving Streamable HTTP on a free port and resolves once it has announced
 * its URL (or rejects after `timeoutMs` with its stderr).
 */
export function spawnHttp(
  command: string,
  args: string[] = [],
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
): Promise<SpawnedHttpServer> {
  const child = spawn(command, [...args, '--transport', 'http', '--port', '0'], {
    env: { ...(process.env as Record<string, string>), ...options.env },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(
          `no URL announced within ${options.timeoutMs ?? 10_000} ms; stderr: ${stderr.slice(-2000)}`,
        ),
      )
    }, options.timeoutMs ?? 10_000)
    void exited.then(({ code }) => {
      clearTimeout(timer)
      reject(
        new Error(`the server exited (code ${code}) before announcing a URL; stderr: ${stderr.slice(-2000)}`),
      )
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk
      const match = /at (http:\/\/\S+\/mcp)/.exec(stderr)
      if (!match?.[1]) return
      clearTimeout(timer)
      resolve({
        url: match[1],
        child,
        stdout: () => stdout,
        stderr: () => stderr,
        async close() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
          const ended = await exited
          if (stdout !== '') throw new Error(`the HTTP server wrote to stdout: ${stdout.slice(0, 500)}`)
          return ended
        },
      })
    })
  })
}

/**
 * Runs a command to completion and collects its output: for `--help`, bad config, scripts. Stdin
 * is closed at once, after `input` when one is given.
 */
export function runProcess(
  command: string,
  args: string[] = [],
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number; input?: string } = {},
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...(process.env as Record<string, string>), ...options.env },
      ...(options.cwd ? { cwd: options.cwd } : {}),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    // A command that exits without reading its input must not fail the caller with EPIPE.
    child.stdin.on('error', () => {})
    child.stdin.end(options.input)
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk
    })
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(
          `${command} did not finish within ${options.timeoutMs ?? 30_000} ms; stderr: ${stderr.slice(-2000)}`,
        ),
      )
    }, options.timeoutMs ?? 30_000)
    child.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  })
}

/** A 2025-era `initialize` request (id 1), as a raw-wire test sends it first. */
export function initializeRequest(clientName = 'raw-wire-test') {
  return {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: clientName, version: '1.0.0' },
    },
  }
}

/**
 * Starts a stdio server, sends the 2025 `initialize` handshake and `tools/list` in one write and
 * closes stdin, so the server answers and exits: one listing, as a client's first start sees it.
 * Resolves with the listed tools (undefined when there was no answer) and the run's stderr.
 */
export async function listToolsAndExit(
  command: string,
  args: string[] = [],
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
): Promise<{ tools: Array<Record<string, unknown>> | undefined; stderr: string; code: number | null }> {
  const input = [
    initializeRequest(),
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
  ]
    .map((message) => `${JSON.stringify(message)}\n`)
    .join('')
  const { stdout, stderr, code } = await runProcess(command, args, { ...options, input })
  const answer = stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .find((message) => message.id === 2)
  return { tools: answer?.result?.tools, stderr, code }
}
