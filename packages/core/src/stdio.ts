import type { Readable, Writable } from 'node:stream'
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server'
import { checkEnvelope, errorResponse, INVALID_REQUEST, PARSE_ERROR } from './jsonrpc.js'
import { observer, type RequestObservation } from './observe/hooks.js'

/** Options of {@link LineTransport}. */
export interface LineTransportOptions {
  input?: Readable
  output?: Writable
  /** Largest accepted line in bytes; longer lines are answered with -32600 and discarded. */
  maxLineBytes?: number
  /** Called once when the input ends (the client closed stdin) or fails. */
  onEnd?: () => void
  /**
   * Sees every inbound message before the server does; when it returns a promise, that message
   * is delivered as the promise's value, and the ones after it wait their turn (order is kept).
   */
  prepare?: (message: JSONRPCMessage) => Promise<unknown> | undefined
  /**
   * Sees every parsed line first (while no prepared message is on its way) and may serve it itself
   * (core's fast path, `fast-path.ts`): it returns the work that serves the message, or undefined
   * to let the message take the usual way. Its answers go out through {@link LineTransport.send}.
   */
  claim?: (message: unknown) => (() => void) | undefined
  /**
   * What the bin's launcher read from stdin before the server started, and the requests in it it
   * answered from a record (see replay.ts): the lines are served first, as if read now, and an
   * answer to one of those requests is not written again but compared with what was sent;
   * `onReplayMismatch` hears of each that differs (its method).
   */
  replay?: {
    input?: Buffer
    answered?: ReadonlyArray<readonly [string, string, string]>
    ended?: boolean
    onReplayMismatch?: (method: string) => void
  }
  /** Sees every inbound message and every outbound one (the handshake recorder, replay.ts). */
  recorder?: { inbound(message: unknown): void; outbound(message: unknown): void; readonly finished: boolean }
}

/**
 * A result response's line, as `JSON.stringify` writes it, with the result serialized on its own,
 * and that result's size in bytes; undefined for any other shape.
 */
function resultLine(message: JSONRPCMessage): { result: unknown; bytes: number; text: string } | undefined {
  const { result, jsonrpc, id } = message as { result?: unknown; jsonrpc?: unknown; id?: unknown }
  if (typeof result !== 'object' || result === null || jsonrpc !== '2.0') return undefined
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined
  const json = JSON.stringify(result)
  let text = '{'
  for (const key in message) {
    if (text.length > 1) text += ','
    if (key === 'result') text += `"result":${json}`
    else if (key === 'jsonrpc') text += '"jsonrpc":"2.0"'
    else if (key === 'id') text += `"id":${JSON.stringify(id)}`
    else return undefined
  }
  return { result, bytes: Buffer.byteLength(json), text: `${text}}\n` }
}

/**
 * Newline-delimited JSON-RPC over stdin/stdout. Unlike the SDK's stdio transport it answers
 * malformed lines as JSON-RPC requires (-32700 with `id: null`; -32600 for a bad envelope)
 * instead of dropping them, so a client is never left waiting.
 */
export class LineTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: <T extends JSONRPCMessage>(message: T) => void

  readonly #input: Readable
  readonly #output: Writable
  readonly #maxLineBytes: number
  readonly #onEnd: (() => void) | undefined
  readonly #prepare: LineTransportOptions['prepare']
  readonly #claim: LineTransportOptions['claim']
  /** Set while a prepared message is on its way: later messages queue behind it. */
  #queue: Promise<void> | undefined
  #chunks: Buffer[] = []
  #pending = 0
  #discarding = false
  #closed = false
  #ended = false
  readonly #replay: LineTransportOptions['replay']
  /** Until the recorder has what it keeps: then the transport lets it go (no cost a message). */
  #recorder: LineTransportOptions['recorder']
  /** Requests the launcher answered: id as JSON → the result it sent (JSON) and the method. */
  readonly #answered = new Map<string, { result: string; method: string }>()
  /** Requests being served, while an observer is installed: ended when their response is sent. */
  readonly #observed = new Map<string | number, RequestObservation>()

  constructor(options: LineTransportOptions = {}) {
    this.#input = options.input ?? process.stdin
    this.#output = options.output ?? process.stdout
    this.#maxLineBytes = options.maxLineBytes ?? 32 * 1024 * 1024
    this.#onEnd = options.onEnd
    this.#prepare = options.prepare
    this.#claim = options.claim
    this.#replay = options.replay
    this.#recorder = options.recorder
    for (const [id, result, method] of options.replay?.answered ?? [])
      this.#answered.set(id, { result, method })
  }

  async start(): Promise<void> {
    this.#input.on('end', this.#onInputEnd)
    this.#input.on('close', this.#onInputEnd)
    this.#input.on('error', this.#onInputError)
    this.#output.on('error', this.#onOutputError)
    const input = this.#replay?.input
    if (input?.length) setImmediate(() => this.#feed(input, 0))
    else this.#listen()
  }

  #listen() {
    this.#input.on('data', this.#onData)
    this.#input.resume()
    // A stdin that ended while the launcher read it has no end event left to give.
    if (this.#replay?.ended) setImmediate(this.#onInputEnd)
  }

  /**
   * Serves the lines the launcher read, one a turn of the event loop as they would have arrived
   * (each request finds the server as the one before left it: a call after the handshake takes
   * the fast path), then reads stdin, whose data comes after them.
   */
  #feed(input: Buffer, from: number) {
    if (this.#closed) return
    const newline = input.indexOf(0x0a, from)
    const end = newline === -1 ? input.length : newline + 1
    this.#onData(input.subarray(from, end))
    if (end < input.length) setImmediate(() => this.#feed(input, end))
    else this.#listen()
  }

  #onData = (chunk: Buffer | string) => {
    const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    // Lines are decoded straight from the chunk by offsets: no buffer view per line.
    let start = 0
    let newline = data.indexOf(0x0a)
    while (newline !== -1) {
      if (this.#discarding) {
        this.#discarding = false
      } else if (this.#chunks.length) {
        this.#chunks.push(data.subarray(start, newline))
        const line = Buffer.concat(this.#chunks)
        this.#chunks = []
        this.#pending = 0
        this.#handleLine(line.toString('utf8'))
      } else {
        this.#pending = 0
        this.#handleLine(data.toString('utf8', start, newline))
      }
      start = newline + 1
      newline = data.indexOf(0x0a, start)
    }
    if (start === data.length || this.#discarding) return
    const rest = start === 0 ? data : data.subarray(start)
    this.#pending += rest.length
    if (this.#pending > this.#maxLineBytes) {
      this.#chunks = []
      this.#pending = 0
      this.#discarding = true
      this.#reply(
        errorResponse(
          null,
          INVALID_REQUEST,
          `Invalid Request: message larger than ${this.#maxLineBytes} bytes`,
        ),
      )
      return
    }
    this.#chunks.push(rest)
  }

  #handleLine(raw: string) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (line.trim() === '') return
    let message: unknown
    try {
      message = JSON.parse(line)
    } catch {
      this.#reply(errorResponse(null, PARSE_ERROR, 'Parse error: the line is not valid JSON'))
      return
    }
    if (this.#recorder) {
      this.#recorder.inbound(message)
      if (this.#recorder.finished) this.#recorder = undefined
    }
    const served = this.#claim && !this.#queue ? this.#claim(message) : undefined
    if (served) {
      this.#run(message, served)
      return
    }
    const check = checkEnvelope(message)
    if (!check.ok) {
      this.#reply(errorResponse(check.id, check.code, check.message))
      return
    }
    this.#run(message, () => this.#deliver(message as JSONRPCMessage))
  }

  /** Runs `work` for one message, observed (metrics, a span) when it is a request and an observer is installed. */
  #run(message: unknown, work: () => void) {
    const watching = observer()
    const request = message as { id?: string | number; method?: unknown; params?: unknown }
    if (watching && typeof request.method === 'string' && request.id !== undefined) {
      const observation = watching.request({
        method: request.method,
        id: request.id,
        transport: 'stdio',
        params: request.params,
      })
      this.#observed.set(request.id, observation)
      observation.run(work)
      return
    }
    work()
  }

  #deliver(message: JSONRPCMessage) {
    if (this.#queue) {
      const queue: Promise<void> = this.#queue.then(() => this.#dispatch(message))
      this.#queue = queue.finally(() => {
        if (this.#queue === queue) this.#queue = undefined
      })
      return
    }
    const prepared = this.#prepare?.(message)
    if (!prepared) {
      this.#emit(message)
      return
    }
    const queue: Promise<void> = prepared.then(
      (ready) => this.#emit(ready as JSONRPCMessage),
      (error: Error) => {
        this.onerror?.(error)
        this.#emit(message)
      },
    )
    this.#queue = queue.finally(() => {
      if (this.#queue === queue) this.#queue = undefined
    })
  }

  /** A message whose turn has come: prepared (awaited) in order, then delivered. */
  async #dispatch(message: JSONRPCMessage): Promise<void> {
    const prepared = this.#prepare?.(message)
    this.#emit(prepared ? ((await prepared.catch(() => message)) as JSONRPCMessage) : message)
  }

  #emit(message: JSONRPCMessage) {
    try {
      this.onmessage?.(message)
    } catch (error) {
      this.onerror?.(error as Error)
    }
  }

  #reply(message: unknown) {
    void this.#write(message).catch((error: Error) => this.onerror?.(error))
  }

  #onInputEnd = () => {
    if (this.#ended) return
    this.#ended = true
    void this.close()
    this.#onEnd?.()
  }

  #onInputError = (error: Error) => {
    this.onerror?.(error)
    this.#onInputEnd()
  }

  #onOutputError = (error: Error) => {
    // EPIPE: the client went away. Treat it like the end of input.
    this.onerror?.(error)
    this.#onInputEnd()
  }

  #write(message: unknown, line = `${JSON.stringify(message)}\n`): Promise<void> {
    if (this.#closed) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const flushed = this.#output.write(line, (error) => {
        if (error) reject(error)
      })
      if (flushed) resolve()
      else this.#output.once('drain', resolve)
    })
  }

  /**
   * Whether `message` answers a request the launcher already answered: then it is not written
   * again, and one that differs from what was sent is reported.
   */
  #answeredBefore(message: JSONRPCMessage): boolean {
    if (this.#recorder) {
      this.#recorder.outbound(message)
      if (this.#recorder.finished) this.#recorder = undefined
    }
    if (!this.#answered.size) return false
    const { id, method, result } = message as { id?: unknown; method?: unknown; result?: unknown }
    if (method !== undefined || id === undefined) return false
    const key = JSON.stringify(id)
    const sent = this.#answered.get(key)
    if (!sent) return false
    this.#answered.delete(key)
    if (result === undefined || JSON.stringify(result) !== sent.result)
      this.#replay?.onReplayMismatch?.(sent.method)
    // Its observation (metrics, audit) ends as any answer's does.
    this.#observedLine(message)
    return true
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.#answeredBefore(message)) return Promise.resolve()
    const line = this.#observedLine(message)
    return line === undefined ? this.#write(message) : this.#write(message, line)
  }

  /**
   * As {@link send}, for a caller that does not wait for the write (core's fast path answering a
   * request): no promise and no callback per message. A failed write still reaches `onerror`
   * through the output's error event, as it does for {@link send}.
   */
  post(message: JSONRPCMessage): void {
    if (this.#closed || this.#answeredBefore(message)) return
    this.#output.write(this.#observedLine(message) ?? `${JSON.stringify(message)}\n`)
  }

  /** Ends the observation of the request `message` answers, if any; the line when it measured it. */
  #observedLine(message: JSONRPCMessage): string | undefined {
    if (this.#observed.size) {
      const answer = message as { id?: string | number; method?: unknown; error?: { code?: number } }
      const observation =
        answer.method === undefined && answer.id !== undefined ? this.#observed.get(answer.id) : undefined
      if (observation) {
        this.#observed.delete(answer.id as string | number)
        if (answer.error) observation.end(answer.error.code ?? -32603)
        else {
          // The audit log records the result's size: taken from the line written here.
          const line = observer()?.sizes ? resultLine(message) : undefined
          observation.end(undefined, line)
          if (line) return line.text
        }
      }
    }
    return undefined
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#input.off('data', this.#onData)
    this.#input.off('error', this.#onInputError)
    this.#output.off('error', this.#onOutputError)
    // Stop reading so an open stdin does not keep the process alive after close.
    this.#input.pause()
    this.onclose?.()
  }
}
