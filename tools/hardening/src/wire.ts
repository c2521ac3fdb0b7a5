/**
 * Raw clients for the built bins: newline-delimited JSON over a spawned process's stdio, and
 * JSON-RPC POSTs over Streamable HTTP. Both send bytes exactly as given (broken ones included)
 * and collect what comes back, so the suites can judge every answer.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import type { Answer } from './fuzz.js'

/** A key for a JSON-RPC id (ids of different types must not collide). */
export const idKey = (id: unknown) => JSON.stringify(id)

/** Resident set size of a process in bytes (Linux `/proc`). */
export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
  if (!match?.[1]) throw new Error(`no VmRSS for ${pid}`)
  return Number(match[1]) * 1024
}

/** Every live descendant of `pid` (children, grandchildren, …), from `/proc`. */
export function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>()
  for (const entry of readdirSafe('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue
    }
    // The command name is in parentheses and may contain spaces: parse after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const parent = Number(fields[1])
    const list = children.get(parent) ?? []
    list.push(Number(entry))
    children.set(parent, list)
  }
  const found: number[] = []
  const queue = [pid]
  while (queue.length) {
    const next = queue.shift() as number
    for (const child of children.get(next) ?? []) {
      found.push(child)
      queue.push(child)
    }
  }
  return found
}

function readdirSafe(path: string): string[] {
  try {
    return readdirSync(path)
  } catch {
    return []
  }
}

/** Whether a process exists (and is not a zombie). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}

/**
 * A process as it was when seen: its pid and its start time (in clock ticks since boot). Pids are
 * reused (this machine's `pid_max` is 32768, and with several Chromiums starting helpers they
 * wrap within seconds), so "still running" must mean the same pid *and* the same start time.
 */
export interface ProcessRef {
  pid: number
  start: string
}

function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 22 (starttime), counted from the state field (field 3) after the command name.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  } catch {
    return undefined
  }
}

/** `pid` and its live descendants, each with its start time. */
export function familyOf(pid: number): ProcessRef[] {
  const refs: ProcessRef[] = []
  for (const member of [pid, ...descendantsOf(pid)]) {
    const start = startTimeOf(member)
    if (start !== undefined) refs.push({ pid: member, start })
  }
  return refs
}

/** Whether the process seen as `ref` still runs (not a zombie, and its pid not reused since). */
export function running(ref: ProcessRef): boolean {
  return alive(ref.pid) && startTimeOf(ref.pid) === ref.start
}

/** Every process the suites spawned: `killAll` ends those still running (a failed test leaves none). */
const spawned = new Set<ChildProcessWithoutNullStreams>()

function track(child: ChildProcessWithoutNullStreams): ChildProcessWithoutNullStreams {
  spawned.add(child)
  child.once('exit', () => spawned.delete(child))
  return child
}

/** SIGKILLs every spawned process still running; returns how many there were. */
export function killAll(): number {
  const left = [...spawned]
  for (const child of left) child.kill('SIGKILL')
  return left.length
}

export interface Command {
  command: string
  args: string[]
  env: Record<string, string>
  cwd?: string
}

/** A spawned bin spoken to with raw lines; every stdout line is checked to be JSON-RPC. */
export class StdioPeer {
  readonly child: ChildProcessWithoutNullStreams
  /** stdout lines that are not a JSON-RPC 2.0 message (must stay empty). */
  readonly impure: string[] = []
  /** Answers by id key, in arrival order. */
  readonly answers = new Map<string, Answer[]>()
  /** Answers with `id: null`, in arrival order. */
  readonly nullAnswers: Answer[] = []
  stdout = ''
  stderr = ''
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  #waiters = new Map<string, () => void>()
  #lines = 0

  constructor(command: Command) {
    this.child = track(
      spawn(command.command, command.args, {
        env: { ...(process.env as Record<string, string>), ...command.env },
        ...(command.cwd ? { cwd: command.cwd } : {}),
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    )
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve({ code, signal })),
    )
    // A vanished server makes writes fail with EPIPE: the suites check `exited` instead.
    this.child.stdin.on('error', () => undefined)
    this.child.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk
    })
    createInterface({ input: this.child.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) =>
      this.#onLine(line),
    )
  }

  get pid(): number {
    return this.child.pid as number
  }

  /** How many stdout lines arrived. */
  get lineCount(): number {
    return this.#lines
  }

  #onLine(line: string) {
    this.#lines++
    // Keep a bounded copy of stdout for the secrets scan; answers are kept parsed.
    if (this.stdout.length < 64 * 1024 * 1024) this.stdout += `${line}\n`
    let message: Record<string, unknown>
    try {
      message = JSON.parse(line)
    } catch {
      this.impure.push(line.slice(0, 500))
      return
    }
    if (message === null || typeof message !== 'object' || message.jsonrpc !== '2.0') {
      this.impure.push(line.slice(0, 500))
      return
    }
    if (!('id' in message)) return // a notification from the server (log, progress)
    if ('method' in message) return // a request from the server (roots, sampling): not an answer
    const answer = message as Answer
    if (message.id === null) {
      this.nullAnswers.push(answer)
      return
    }
    const key = idKey(message.id)
    const list = this.answers.get(key) ?? []
    list.push(answer)
    this.answers.set(key, list)
    const waiter = this.#waiters.get(key)
    if (waiter) {
      this.#waiters.delete(key)
      waiter()
    }
  }

  /** Writes one line, waiting for the pipe to drain when it is full. */
  async send(line: string): Promise<void> {
    if (!this.child.stdin.writable) throw new Error('stdin is closed (the server exited?)')
    if (!this.child.stdin.write(`${line}\n`)) {
      await new Promise<void>((resolve, reject) => {
        const onExit = () => reject(new Error('the server exited while we were writing'))
        this.child.once('exit', onExit)
        this.child.stdin.once('drain', () => {
          this.child.off('exit', onExit)
          resolve()
        })
      })
    }
  }

  /** Resolves when an answer with this id arrived; rejects after `timeoutMs` or if the process exits. */
  waitFor(id: string | number, timeoutMs = 30_000): Promise<Answer> {
    const key = idKey(id)
    const have = this.answers.get(key)?.[0]
    if (have) return Promise.resolve(have)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(key)
        reject(
          new Error(`no answer to id ${key} within ${timeoutMs} ms; stderr: ${this.stderr.slice(-1500)}`),
        )
      }, timeoutMs)
      const onExit = () => {
        clearTimeout(timer)
        reject(new Error(`the server exited before answering id ${key}; stderr: ${this.stderr.slice(-1500)}`))
      }
      this.child.once('exit', onExit)
      this.#waiters.set(key, () => {
        clearTimeout(timer)
        this.child.off('exit', onExit)
        resolve(this.answers.get(key)?.[0] as Answer)
      })
    })
  }

  /** Sends a request and waits for its answer. */
  async request(id: string | number, method: string, params?: unknown, timeoutMs?: number): Promise<Answer> {
    await this.send(
      JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }),
    )
    return this.waitFor(id, timeoutMs)
  }

  /** The 2025 `initialize` handshake. */
  async initialize(): Promise<Answer> {
    const answer = await this.request('init', 'initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'keel-hardening', version: '1.0.0' },
    })
    await this.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))
    return answer
  }

  /** Closes stdin and waits for the exit; SIGKILL after `timeoutMs` (and says so). */
  async end(
    timeoutMs = 10_000,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null; killed: boolean }> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) {
      return { code: this.child.exitCode, signal: this.child.signalCode, killed: false }
    }
    let killed = false
    const timer = setTimeout(() => {
      killed = true
      this.child.kill('SIGKILL')
    }, timeoutMs)
    this.child.stdin.end()
    const result = await this.exited
    clearTimeout(timer)
    return { ...result, killed }
  }
}

/** A bin serving Streamable HTTP on a free port. */
export class HttpPeer {
  readonly child: ChildProcessWithoutNullStreams
  stdout = ''
  stderr = ''
  url = ''
  sessionId: string | undefined
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>

  private constructor(child: ChildProcessWithoutNullStreams) {
    this.child = child
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  }

  /** Spawns with `--transport http --port 0` and resolves once the URL is announced on stderr. */
  static start(command: Command, timeoutMs = 20_000): Promise<HttpPeer> {
    const child = track(
      spawn(command.command, [...command.args, '--transport', 'http', '--port', '0'], {
        env: { ...(process.env as Record<string, string>), ...command.env },
        ...(command.cwd ? { cwd: command.cwd } : {}),
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    )
    const peer = new HttpPeer(child)
    child.stdout.on('data', (chunk: Buffer) => {
      peer.stdout += chunk
    })
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        reject(new Error(`no URL announced within ${timeoutMs} ms; stderr: ${peer.stderr.slice(-2000)}`))
      }, timeoutMs)
      void peer.exited.then(({ code }) => {
        clearTimeout(timer)
        reject(
          new Error(`exited (code ${code}) before announcing a URL; stderr: ${peer.stderr.slice(-2000)}`),
        )
      })
      child.stderr.on('data', (chunk: Buffer) => {
        peer.stderr += chunk
        if (peer.url) return
        const match = /at (http:\/\/\S+\/mcp)/.exec(peer.stderr)
        if (!match?.[1]) return
        peer.url = match[1]
        clearTimeout(timer)
        resolve(peer)
      })
    })
  }

  /** Another client of the same running server (its own session once initialized). */
  static attach(peer: HttpPeer): HttpPeer {
    const other = new HttpPeer(peer.child)
    other.url = peer.url
    return other
  }

  get pid(): number {
    return this.child.pid as number
  }

  /** POSTs raw bytes; returns the status and every JSON-RPC answer (JSON body or SSE events). */
  async post(
    body: string,
    options: { session?: boolean; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<{ status: number; answers: Answer[]; raw: string; sessionId: string | null }> {
    const response = await fetch(this.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(options.session !== false && this.sessionId
          ? { 'mcp-session-id': this.sessionId, 'mcp-protocol-version': '2025-11-25' }
          : {}),
        ...options.headers,
      },
      body,
      ...(options.signal ? { signal: options.signal } : {}),
    })
    const raw = await response.text()
    const type = response.headers.get('content-type') ?? ''
    const answers: Answer[] = []
    if (type.includes('text/event-stream')) {
      for (const event of raw.split(/\r?\n\r?\n/)) {
        const data = event
          .split(/\r?\n/)
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trimStart())
          .join('\n')
        if (!data) continue
        const message = JSON.parse(data) as Record<string, unknown>
        if ('id' in message && !('method' in message)) answers.push(message as Answer)
      }
    } else if (raw.trim()) {
      const parsed = JSON.parse(raw) as Answer | Answer[]
      answers.push(...(Array.isArray(parsed) ? parsed : [parsed]))
    }
    return { status: response.status, answers, raw, sessionId: response.headers.get('mcp-session-id') }
  }

  /** Opens a 2025-generation session (initialize + initialized). */
  async initialize(headers: Record<string, string> = {}): Promise<void> {
    const opened = await this.post(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'keel-hardening', version: '1.0.0' },
        },
      }),
      { session: false, headers },
    )
    if (opened.status !== 200 || !opened.sessionId)
      throw new Error(`initialize failed: ${opened.status} ${opened.raw.slice(0, 500)}`)
    this.sessionId = opened.sessionId
    await this.post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), { headers })
  }

  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves with how it ended. */
  async close(
    timeoutMs = 10_000,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null; killed: boolean }> {
    if (this.child.exitCode !== null || this.child.signalCode !== null)
      return { code: this.child.exitCode, signal: this.child.signalCode, killed: false }
    let killed = false
    const timer = setTimeout(() => {
      killed = true
      this.child.kill('SIGKILL')
    }, timeoutMs)
    this.child.kill('SIGTERM')
    const result = await this.exited
    clearTimeout(timer)
    return { ...result, killed }
  }
}

/** Runs `work` over `items` with at most `limit` in flight. */
export async function pool<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0
  const runners = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T
      await work(item)
    }
  })
  await Promise.all(runners)
}
