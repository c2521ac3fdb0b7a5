import { renameSync, writeFileSync } from 'node:fs'
import { isRecord } from './jsonrpc.js'

// The handshake answered from the record of an identical start.
//
// A client that starts a server asks the same things every time: `initialize` (or, on 2026-07-28,
// `server/discover`), then `tools/list` and perhaps the other listings. Their answers depend only
// on the server's code, its configuration and the request. A bin's launcher
// (tools/bundle/launcher.cjs) keeps them, per version of the bin, in its private cache directory,
// with what they were built from: the command line, the working directory and the environment
// variables the configuration read, each secret in them left out as a gap (never written, not
// even hashed). At the next start whose inputs match, the launcher answers those requests itself,
// before it compiles the server, then starts the server and hands it every line it read. The
// server serves them as usual and writes none of those answers again; it compares each with what
// the launcher sent. A listing that differs is followed by its `list_changed` notification (the
// client lists again); an `initialize` that differs is logged. Either way the record is written
// again with this start's answers.
//
// Only a server whose start reads nothing but its configuration takes part
// (`ServerSpec.handshakeReplay`). `KEEL_HANDSHAKE_REPLAY=0` turns it off.

/**
 * Requests whose answers a start may record: each answer depends only on the code, the
 * configuration and the request. (`logging/setLevel` changes the server's level too: the server
 * does that when it serves the line the launcher hands over, before it has anything to log.)
 */
export const REPLAYABLE = new Set([
  'initialize',
  'server/discover',
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'ping',
  'logging/setLevel',
])

/** How many records (distinct inputs) one file keeps, the latest first. */
const MAX_RECORDS = 4
/** How many exchanges a record keeps: a start's first requests. */
const MAX_EXCHANGES = 8
/** How long after its last answer an open record is written (the client pauses after listing). */
const IDLE_WRITE_MS = 1000
/** How long after a record is closed it is written: after the answer of the request that closed it. */
const CLOSED_WRITE_MS = 50

/** A recorded value: itself, or its literal pieces around the secrets that were in it. */
export type Template = string | { pieces: string[] }

/** What a start was built from, as recorded (the launcher matches a new start against it). */
export interface StartInputs {
  argv: Template[]
  cwd: Template
  /** Every environment variable the configuration read, in the order read; null when unset. */
  env: Array<[string, Template | null]>
}

/** What the launcher hands the server (tools/bundle/launcher.cjs). */
export interface LauncherReplay {
  /** The file that keeps this bin's records. */
  file: string
  records: unknown[]
  /** What the launcher read from stdin: every line in it is still to be served. */
  input?: Buffer
  /** The requests it answered from a record: the id as JSON, the result as JSON, the method. */
  answered?: Array<[string, string, string]>
  /** Whether stdin had ended while the launcher read it. */
  ended?: boolean
}

/** The launcher's hand-over, taken once (undefined outside a bin's launcher). */
export function takeLauncherReplay(): LauncherReplay | undefined {
  const place = globalThis as { __keelReplay?: unknown }
  const replay = place.__keelReplay
  place.__keelReplay = undefined
  if (!isRecord(replay) || typeof replay.file !== 'string' || !Array.isArray(replay.records)) return undefined
  return replay as unknown as LauncherReplay
}

/** A request as a record keys it: the message without its id, as JSON. */
export function requestKey(message: Record<string, unknown>): string {
  const { id: _id, ...rest } = message
  return JSON.stringify(rest)
}

/**
 * The environment as the configuration reads it, remembering each name read. A configuration
 * that lists the environment (its keys, a spread) depends on all of it: no record is kept then.
 */
export function recordingEnv(env: NodeJS.ProcessEnv): {
  env: NodeJS.ProcessEnv
  read: Map<string, string | undefined>
  whole: () => boolean
} {
  const read = new Map<string, string | undefined>()
  let whole = false
  const proxy = new Proxy(env, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown
      if (typeof name === 'string' && !read.has(name))
        read.set(name, typeof value === 'string' ? value : undefined)
      return value
    },
    has(target, name) {
      const present = Reflect.has(target, name)
      if (typeof name === 'string' && !read.has(name)) {
        const value = target[name]
        read.set(name, typeof value === 'string' ? value : undefined)
      }
      return present
    },
    ownKeys(target) {
      whole = true
      return Reflect.ownKeys(target)
    },
    getOwnPropertyDescriptor(target, name) {
      if (typeof name === 'string' && !read.has(name)) {
        const value = target[name]
        read.set(name, typeof value === 'string' ? value : undefined)
      }
      return Reflect.getOwnPropertyDescriptor(target, name)
    },
  })
  return { env: proxy, read, whole: () => whole }
}

const URL_PASSWORD = /^[a-z][a-z0-9+.-]*:\/\/[^/@\s:]*:([^@\s/]+)@/i

/**
 * The strings to leave out of a record: each secret, its URL-encoded form, and for a URL its
 * password rather than the whole URL (so that a record keeps the host and database it was for).
 */
export function secretPieces(secrets: Iterable<string | undefined | null>): string[] {
  const out = new Set<string>()
  const add = (value: string) => {
    if (!value) return
    out.add(value)
    try {
      out.add(encodeURIComponent(value))
    } catch {}
    try {
      out.add(decodeURIComponent(value))
    } catch {}
  }
  for (const secret of secrets) {
    if (!secret) continue
    const password = URL_PASSWORD.exec(secret)?.[1]
    if (password) add(password)
    else add(secret)
  }
  out.delete('')
  return [...out].sort((a, b) => b.length - a.length)
}

/** `value` as a record keeps it: split around every secret in it (and a URL's password). */
export function templateOf(value: string, secrets: readonly string[]): Template {
  let pieces = [value]
  const password = URL_PASSWORD.exec(value)?.[1]
  for (const secret of password ? [password, ...secrets] : secrets) {
    if (!pieces.some((piece) => piece.includes(secret))) continue
    // A gap sits between each two pieces: splitting a piece adds gaps inside it only.
    pieces = pieces.flatMap((piece) => piece.split(secret))
  }
  return pieces.length === 1 ? value : { pieces }
}

/** The inputs of this start as a record keeps them. */
export function startInputs(
  argv: readonly string[],
  cwd: string,
  read: Map<string, string | undefined>,
  secrets: readonly string[],
): StartInputs {
  return {
    argv: argv.map((value) => templateOf(value, secrets)),
    cwd: templateOf(cwd, secrets),
    env: [...read].map(([name, value]) => [name, value === undefined ? null : templateOf(value, secrets)]),
  }
}

/** What {@link HandshakeRecorder} needs of the start. */
export interface HandshakeContext {
  file: string
  records: unknown[]
  /** This start's inputs, or undefined when they cannot be recorded (the environment was listed). */
  inputs: () => StartInputs | undefined
  /** The secrets known now: a record holding any of them is never written. */
  secrets: () => readonly string[]
}

/**
 * Records a connection's first requests and their answers, while they are all {@link REPLAYABLE},
 * and writes them to the launcher's file when each has its answer (a record that is already
 * there, the same, is left as it is).
 */
export class HandshakeRecorder {
  readonly #context: HandshakeContext
  readonly #entries: Array<{ key: string; id: string; result?: string }> = []
  #open = true
  #writes = 0
  #atExit = false
  #timer: NodeJS.Timeout | undefined

  constructor(context: HandshakeContext) {
    this.#context = context
  }

  /** Closed, and every request it took has its answer: nothing it sees from now on matters. */
  get finished(): boolean {
    return !this.#open && this.#entries.every((entry) => entry.result !== undefined)
  }

  /** Sees every inbound message, in order. */
  inbound(message: unknown): void {
    if (!this.#open) return
    if (!isRecord(message) || typeof message.method !== 'string') {
      this.#close()
      return
    }
    if (message.id === undefined) {
      if (message.method !== 'notifications/initialized') this.#close()
      return
    }
    const id = JSON.stringify(message.id)
    if (
      !REPLAYABLE.has(message.method) ||
      this.#entries.length >= MAX_EXCHANGES ||
      this.#entries.some((entry) => entry.id === id)
    ) {
      this.#close()
      return
    }
    this.#entries.push({ key: requestKey(message), id })
  }

  /** Sees every outbound message (answers the launcher already sent included). */
  outbound(message: unknown): void {
    if (
      !this.#entries.length ||
      !isRecord(message) ||
      message.method !== undefined ||
      message.id === undefined
    )
      return
    const id = JSON.stringify(message.id)
    const index = this.#entries.findIndex((entry) => entry.id === id && entry.result === undefined)
    if (index === -1) return
    const entry = this.#entries[index] as { key: string; id: string }
    if (message.result === undefined) {
      // An error is no answer to keep: the record ends before it.
      this.#entries.length = index
      this.#close()
    } else this.#entries[index] = { ...entry, result: JSON.stringify(message.result) }
    this.#schedule(this.#open ? IDLE_WRITE_MS : CLOSED_WRITE_MS)
  }

  /** No more requests join the record: it is written shortly (off the way of the request that closed it). */
  #close(): void {
    if (!this.#open) return
    this.#open = false
    this.#schedule(CLOSED_WRITE_MS)
  }

  /**
   * Writes the record `delay` ms from now, or at exit if that comes first: once the handshake is
   * over (a request the record does not take, or a pause), not after each answer.
   */
  #schedule(delay: number): void {
    if (!this.#atExit) {
      this.#atExit = true
      process.once('exit', () => this.#write())
    }
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => this.#write(), delay)
    this.#timer.unref()
  }

  #write(): void {
    clearTimeout(this.#timer)
    // Only requests that have their answers, in order: the record ends at the first without one.
    const answered = this.#entries.findIndex((entry) => entry.result === undefined)
    const entries = answered === -1 ? this.#entries : this.#entries.slice(0, answered)
    if (!entries.length || this.#writes >= MAX_RECORDS) return
    const inputs = this.#context.inputs()
    if (!inputs) return
    // One record per inputs and client (its first request): two clients that start the server
    // with the same configuration keep a record each.
    const identity = (candidate: unknown) =>
      isRecord(candidate) && Array.isArray(candidate.exchanges) && isRecord(candidate.exchanges[0])
        ? JSON.stringify([candidate.inputs, candidate.exchanges[0].request])
        : undefined
    const own = JSON.stringify([inputs, entries[0]?.key])
    const others = this.#context.records.filter((other) => identity(other) !== own)
    const same = this.#context.records.find((other) => identity(other) === own) as
      | { exchanges: unknown[] }
      | undefined
    // This start's answers, after what the record already held for other requests (a start that
    // only called a tool after initialize keeps the listing an earlier start recorded: an answer
    // depends only on the inputs and the request).
    const merged = new Map<string, string>()
    for (const exchange of same?.exchanges ?? [])
      if (isRecord(exchange) && typeof exchange.request === 'string' && typeof exchange.result === 'string')
        merged.set(exchange.request, exchange.result)
    for (const { key, result } of entries) merged.set(key, result as string)
    const exchanges = [...merged].slice(0, MAX_EXCHANGES).map(([request, result]) => ({ request, result }))
    const record = { inputs, exchanges }
    if (same && JSON.stringify(same) === JSON.stringify(record)) return
    const text = JSON.stringify({ version: 1, records: [record, ...others].slice(0, MAX_RECORDS) })
    // Never a secret on disk: a record that holds one anywhere (an answer that quotes it) is not kept.
    // (Secrets shorter than the redactor's minimum would match ordinary text: they are gaps in the
    // inputs, and no answer quotes them.)
    if (this.#context.secrets().some((secret) => secret.length >= 6 && text.includes(secret))) return
    this.#writes += 1
    this.#context.records = [record, ...others].slice(0, MAX_RECORDS)
    try {
      const temporary = `${this.#context.file}.${process.pid}.tmp`
      writeFileSync(temporary, text, { mode: 0o600 })
      renameSync(temporary, this.#context.file)
    } catch {}
  }
}
