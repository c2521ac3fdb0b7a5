import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

// The OTLP exports' HTTP requests, sent from a worker thread.
//
// Why: once an HTTP client's socket exists in a process, V8 sees a second kind of object in Node's
// stream functions (Socket.read, Readable.push, writeOrBuffer, onStreamRead), deoptimizes them and
// optimizes them again for both; a stdio server's stdin and stdout run through the same functions
// and stay slower for good. Measured on the fs server (user CPU a call, one call at a time, 20,000
// calls after 3,000, medians of four to eight alternated runs): a preload that POSTs to a loopback
// receiver once a second, as the span exporter does, costs +5 µs a call from the main thread
// (43.3 against 38.5 µs) and nothing from a worker thread (38.0). A worker has an isolate of its
// own: its sockets leave the main thread's stream functions alone.
//
// The main thread still batches and serializes (the OpenTelemetry SDK's own exporter code, with
// this as its transport); the worker sends the bytes as the SDK's OTLP/HTTP exporter does, with the
// options the SDK read from --otel-endpoint and the OTEL_EXPORTER_OTLP_* variables (otlpSender).

/** What a transport answers the SDK's export code (the shape of `ExportResponse`). */
export type ExportResponse =
  | { status: 'success'; data?: Uint8Array }
  | { status: 'failure'; error: Error }
  | { status: 'retryable'; retryInMillis?: number | undefined; error?: Error }

/**
 * One OTLP signal's export, configured by the SDK's own code from --otel-endpoint and the
 * OTEL_EXPORTER_OTLP_* variables (see `otel.ts`): what the thread needs to send it.
 */
export interface ExportSignal {
  /** `TRACES` or `METRICS`. */
  readonly signal: 'TRACES' | 'METRICS'
  readonly url: string
  /** Every header, the variables' and Content-Type. */
  readonly headers: Readonly<Record<string, string>>
  readonly compression: 'gzip' | 'none'
  readonly timeoutMillis: number
  /** The HTTP(S) agent's options: keep-alive and, for https, the variables' certificates. */
  readonly agentOptions: Readonly<Record<string, unknown>>
  /** What the exporter adds to its User-Agent, if anything. */
  readonly userAgent?: string | undefined
}

// Exports reach the worker through shared memory, not postMessage: a main thread that posts a
// message a second pays as it does for the socket (43.8 against 38.0 µs; the same bytes handed
// over in shared memory: 36.0 against 36.8). The worker's stdout and stderr are never read, for the
// same reason (see below). The mailbox holds one export at a time: control[0] is 1 while it is
// full, [1] the length, [2] the export's id, [3] its signal's index. The worker takes the bytes,
// empties the box, says so (messages to the main thread cost it nothing measurable), sends them
// and answers { id, status?, error? }.
const EMPTY = 0
const FULL = 1
const BOX_BYTES = 256 * 1024
const BOX_MAX_BYTES = 64 * 1024 * 1024
// A growable SharedArrayBuffer (ES2024; in Node since 20), typed here for the older lib.
const GrowableSharedArrayBuffer = SharedArrayBuffer as unknown as new (
  length: number,
  options: { maxByteLength: number },
) => SharedArrayBuffer & { grow(length: number): void }

/**
 * Sends exports, with nothing but Node's own modules (a worker that loaded the SDK's exporter code
 * to send them would cost 20 to 27 MiB and 60 to 95 ms of CPU at every start; one with Node's http
 * alone 12 MiB and 20 ms). Each export is one POST, sent and retried as the SDK's OTLP/HTTP
 * exporter does it (@opentelemetry/otlp-exporter-base 0.212, its http and retrying transports):
 * gzip when asked, a timeout per attempt, 429/502/503/504 and network errors retried up to five
 * times after a growing, jittered pause or the receiver's Retry-After, within the export's timeout.
 *
 * The worker runs this function's source: it refers to nothing outside itself but `load`.
 */
export function otlpSender(load: (name: string) => unknown, signals: readonly ExportSignal[]) {
  type Http = typeof import('node:http')
  const USER_AGENT = 'OTel-OTLP-Exporter-JavaScript (keel-mcp)'
  const RETRYABLE_STATUS = new Set([429, 502, 503, 504])
  const RETRYABLE_CODES = new Set([
    'ECONNRESET',
    'ECONNREFUSED',
    'EPIPE',
    'ETIMEDOUT',
    'EAI_AGAIN',
    'ENOTFOUND',
    'ENETUNREACH',
    'EHOSTUNREACH',
  ])
  const agents = new Map<number, import('node:http').Agent>()
  const retryAfter = (value: string | undefined) => {
    if (value == null) return undefined
    const seconds = Number.parseInt(value, 10)
    if (Number.isInteger(seconds)) return seconds > 0 ? seconds * 1000 : -1
    const delay = new Date(value).getTime() - Date.now()
    return Math.max(delay, 0)
  }
  const attempt = (index: number, body: Uint8Array, timeoutMillis: number) => {
    const signal = signals[index] as ExportSignal
    const url = new URL(signal.url)
    const http = load(url.protocol === 'https:' ? 'node:https' : 'node:http') as Http
    let agent = agents.get(index)
    if (!agent) {
      const options: Record<string, unknown> = { ...signal.agentOptions }
      for (const key of ['ca', 'cert', 'key'])
        if (options[key] instanceof Uint8Array) options[key] = Buffer.from(options[key] as Uint8Array)
      agent = new http.Agent(options)
      agents.set(index, agent)
    }
    const headers: Record<string, string> = {
      ...signal.headers,
      'User-Agent': signal.userAgent ? `${signal.userAgent} ${USER_AGENT}` : USER_AGENT,
      'Content-Length': String(body.byteLength),
    }
    if (signal.compression === 'gzip') headers['Content-Encoding'] = 'gzip'
    return new Promise<ExportResponse>((resolve) => {
      let done = false
      const finish = (result: ExportResponse) => {
        if (done) return
        done = true
        resolve(result)
      }
      const request = http.request(
        {
          hostname: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          method: 'POST',
          headers,
          agent,
        },
        (response) => {
          const chunks: Buffer[] = []
          response.on('data', (chunk: Buffer) => chunks.push(chunk))
          response.on('error', (error) => finish({ status: 'failure', error }))
          response.on('end', () => {
            const status = response.statusCode ?? 0
            const said = `${status} ${response.statusMessage ?? ''}`.trim()
            if (status > 0 && status < 299) return finish({ status: 'success' })
            if (RETRYABLE_STATUS.has(status))
              return finish({
                status: 'retryable',
                retryInMillis: retryAfter(response.headers['retry-after']),
                error: new Error(said),
              })
            const text = Buffer.concat(chunks).toString().slice(0, 512)
            finish({ status: 'failure', error: new Error(text ? `${said}: ${text}` : said) })
          })
        },
      )
      request.setTimeout(timeoutMillis, () => {
        request.destroy()
        finish({ status: 'retryable', error: new Error('Request timed out') })
      })
      request.on('error', (error: Error & { code?: string }) =>
        finish({ status: RETRYABLE_CODES.has(error.code ?? '') ? 'retryable' : 'failure', error }),
      )
      request.end(body)
    })
  }
  return {
    /** Sends one export of signal `index`; never rejects. */
    async send(index: number, bytes: Uint8Array): Promise<ExportResponse> {
      const signal = signals[index] as ExportSignal
      const body =
        signal.compression === 'gzip'
          ? (load('node:zlib') as typeof import('node:zlib')).gzipSync(bytes)
          : bytes
      const deadline = Date.now() + signal.timeoutMillis
      let result = await attempt(index, body, signal.timeoutMillis)
      let pause = 1000
      for (let retries = 5; result.status === 'retryable' && retries > 0; retries--) {
        const jittered = Math.max(Math.min(pause * (1 + (Math.random() * 0.4 - 0.2)), 5000), 0)
        pause *= 1.5
        const wait = result.retryInMillis ?? jittered
        if (wait > deadline - Date.now()) break
        await new Promise((resolve) => setTimeout(resolve, wait))
        result = await attempt(index, body, Math.max(deadline - Date.now(), 1))
      }
      return result
    },
  }
}

// The worker: CommonJS, evaluated. It says when it is ready, then takes each export from the
// mailbox, empties it, says so, sends it and answers { id, status?, error? }.
const WORKER_SOURCE = `'use strict'
const { parentPort, workerData } = require('node:worker_threads')
const { signals, control: shared, box } = workerData
// Nothing reads this thread's stdout and stderr (see ExportThread): what it would write goes nowhere.
process.stdout.write = process.stderr.write = (_chunk, encoding, callback) => {
  const done = typeof encoding === 'function' ? encoding : callback
  if (typeof done === 'function') process.nextTick(done)
  return true
}
const control = new Int32Array(shared)
const sender = (${otlpSender.toString()})(require, signals)
const message = (error) => (error && error.message) || String(error)
function take() {
  const waited = Atomics.waitAsync(control, 0, ${EMPTY})
  const ready = waited.async ? waited.value : Promise.resolve()
  ready.then(() => {
    // The main thread may take back what a worker not yet ready left in the box (at shutdown).
    if (Atomics.load(control, 0) === ${FULL}) {
      const bytes = new Uint8Array(box, 0, control[1]).slice()
      const id = control[2]
      const index = control[3]
      if (Atomics.compareExchange(control, 0, ${FULL}, ${EMPTY}) === ${FULL}) {
        parentPort.postMessage({ taken: id })
        sender.send(index, bytes).then(
          (result) => parentPort.postMessage(result.status === 'success' ? { id } : { id, status: result.status, error: message(result.error) }),
          (error) => parentPort.postMessage({ id, status: 'failure', error: message(error) }),
        )
      }
    }
    take()
  })
}
take()
parentPort.postMessage({ ready: true })
// A pending Atomics.waitAsync does not keep a thread alive: this does, until the main thread ends
// it (which does not wait for it: the main thread holds the worker unreferenced when idle).
setInterval(() => {}, 0x7fffffff)
`

/**
 * One worker thread that sends every signal's exports, started by the first export: a server that
 * stops before it exports starts none (stopping while a worker boots waits for the boot, some 15
 * ms). It keeps the process alive only while an export is under way.
 */
export class ExportThread {
  readonly #signals: readonly ExportSignal[]
  #worker: Worker | undefined
  #control = new Int32Array(new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT))
  // Grown when an export is larger than it.
  #box = new GrowableSharedArrayBuffer(BOX_BYTES, { maxByteLength: BOX_MAX_BYTES })
  #next = 0
  /** Exports not yet in the mailbox, oldest first. */
  readonly #waiting: Array<{ id: number; index: number; data: Uint8Array }> = []
  readonly #pending = new Map<number, (response: ExportResponse) => void>()
  /** The export in the mailbox, until the worker takes it. */
  #inBox: { id: number; index: number; data: Uint8Array } | undefined
  #ready = false
  #draining = false
  #here: ReturnType<typeof otlpSender> | undefined
  #closed = false

  constructor(signals: readonly ExportSignal[]) {
    this.#signals = signals
  }

  /** A transport (the SDK's `IExporterTransport`) for one signal. */
  transport(signal: ExportSignal['signal']) {
    const index = this.#signals.findIndex((each) => each.signal === signal)
    if (index < 0) throw new Error(`no OTLP signal ${signal}`)
    return {
      send: (data: Uint8Array): Promise<ExportResponse> => this.#send(index, data),
      shutdown: () => {},
    }
  }

  /**
   * The server is shutting down: from now on, until the worker is ready, exports are sent from
   * this thread (what is sent now is the last of them, and the worker may still be starting: a
   * server stopped right after it started would otherwise wait for it). What the worker has not
   * taken is taken back.
   */
  draining(): void {
    this.#draining = true
    if (this.#ready) return
    const taken: Array<{ id: number; index: number; data: Uint8Array }> = []
    if (this.#inBox && Atomics.compareExchange(this.#control, 0, FULL, EMPTY) === FULL)
      taken.push(this.#inBox)
    this.#inBox = undefined
    taken.push(...this.#waiting.splice(0))
    for (const { id, index, data } of taken) this.#sendHere(id, index, data)
  }

  /** Ends the worker; exports still under way fail. */
  async close(): Promise<void> {
    this.#closed = true
    const worker = this.#worker
    this.#worker = undefined
    if (worker) await worker.terminate()
    this.#failAll(new Error('the OTLP export thread was closed'))
  }

  #send(index: number, data: Uint8Array): Promise<ExportResponse> {
    if (this.#closed) return Promise.resolve(failure('the OTLP export thread was closed'))
    if (data.byteLength > BOX_MAX_BYTES)
      return Promise.resolve(failure(`an OTLP export of ${data.byteLength} bytes is over ${BOX_MAX_BYTES}`))
    const id = ++this.#next
    if (this.#draining && !this.#ready)
      return new Promise((resolve) => {
        this.#pending.set(id, resolve)
        this.#sendHere(id, index, data)
      })
    const worker = this.#running()
    return new Promise((resolve) => {
      if (this.#pending.size === 0) worker.ref()
      this.#pending.set(id, resolve)
      this.#waiting.push({ id, index, data })
      this.#offer()
    })
  }

  #sendHere(id: number, index: number, data: Uint8Array) {
    // Node's http, https and zlib are loaded on this thread only if it sends (only Node's own
    // modules are required through this: the path it is made from does not matter).
    this.#here ??= otlpSender(createRequire(process.execPath), this.#signals)
    void this.#here.send(index, data).then((result) => this.#settle(id, result))
  }

  #settle(id: number, result: ExportResponse) {
    const resolve = this.#pending.get(id)
    if (!resolve) return
    this.#pending.delete(id)
    if (this.#pending.size === 0) this.#worker?.unref()
    resolve(result)
  }

  /** Puts the oldest waiting export in the mailbox, if it is empty. */
  #offer() {
    const next = this.#waiting[0]
    if (!next || Atomics.load(this.#control, 0) !== EMPTY) return
    this.#waiting.shift()
    this.#inBox = next
    const { id, index, data } = next
    if (data.byteLength > this.#box.byteLength)
      this.#box.grow(Math.min(BOX_MAX_BYTES, Math.max(data.byteLength, 2 * this.#box.byteLength)))
    new Uint8Array(this.#box, 0, data.byteLength).set(data)
    this.#control[1] = data.byteLength
    this.#control[2] = id
    this.#control[3] = index
    Atomics.store(this.#control, 0, FULL)
    Atomics.notify(this.#control, 0)
  }

  #running(): Worker {
    if (this.#worker) return this.#worker
    // A worker that died may have left the mailbox full: its export failed with it.
    Atomics.store(this.#control, 0, EMPTY)
    this.#ready = false
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        signals: this.#signals,
        control: this.#control.buffer,
        box: this.#box,
      },
      // The worker needs none of the server's flags (--heap-growing-percent and the like).
      execArgv: [],
      // Its stdout and stderr are streams of their own that nothing reads: the worker writes
      // nothing (below), and reading them would run the main thread's stream functions on a
      // third kind of stream, which costs every call as an HTTP socket does. stdout is the
      // protocol's in any case.
      stdout: true,
      stderr: true,
    })
    worker.unref()
    worker.on(
      'message',
      (message: { ready?: true; taken?: number; id?: number; status?: string; error?: string }) => {
        if (message.ready) this.#ready = true
        else if (message.taken !== undefined) {
          if (this.#inBox?.id === message.taken) this.#inBox = undefined
          this.#offer()
        } else if (message.error === undefined) this.#settle(message.id as number, { status: 'success' })
        else if (message.status === 'retryable')
          this.#settle(message.id as number, { status: 'retryable', error: new Error(message.error) })
        else this.#settle(message.id as number, failure(message.error))
      },
    )
    const lost = (error: Error) => {
      if (this.#worker === worker) this.#worker = undefined
      this.#failAll(error)
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`the OTLP export thread exited (code ${code})`)))
    this.#worker = worker
    return worker
  }

  #failAll(error: Error) {
    const pending = [...this.#pending.values()]
    this.#pending.clear()
    this.#waiting.length = 0
    this.#inBox = undefined
    for (const resolve of pending) resolve({ status: 'failure', error })
  }
}

const failure = (message: string): ExportResponse => ({ status: 'failure', error: new Error(message) })
