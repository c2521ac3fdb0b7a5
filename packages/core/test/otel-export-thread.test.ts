import { createServer, type IncomingHttpHeaders } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { Worker } from 'node:worker_threads'
import { gunzipSync } from 'node:zlib'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { otlpExports } from '../src/observe/otel.js'
import { type ExportSignal, ExportThread } from '../src/observe/otel-export-thread.js'
import * as sdk from '../src/observe/otel-sdk.vendor.js'
import { selfSignedCertificate } from '../src/testing/tls.js'

// The OTLP exports' HTTP requests leave from a worker thread that takes their bytes from shared
// memory: what arrives, in what order, what a failure answers, and that the main thread holds no
// socket of its own.

interface Received {
  path: string
  headers: IncomingHttpHeaders
  body: Buffer
}

// The receiver runs in a worker thread of its own, so that this thread's sockets are the exporter's.
const RECEIVER = `
const { createServer } = require('node:http')
const { parentPort } = require('node:worker_threads')
// The statuses to answer with, in turn; 200 once they are used up. A 503 says to retry at once.
let statuses = []
parentPort.on('message', (next) => { statuses = next })
const server = createServer((request, response) => {
  const chunks = []
  request.on('data', (chunk) => chunks.push(chunk))
  request.on('end', () => {
    parentPort.postMessage({ path: request.url, headers: request.headers, body: Buffer.concat(chunks) })
    response.statusCode = statuses.shift() ?? 200
    if (response.statusCode === 503) response.setHeader('retry-after', '0')
    response.setHeader('content-type', 'application/json')
    response.end('{}')
  })
})
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }))
`
let receiver: Worker
let base = ''
const received: Received[] = []

beforeAll(async () => {
  receiver = new Worker(RECEIVER, { eval: true })
  const port = await new Promise<number>((resolve) =>
    receiver.on('message', (message: Received | { port: number }) => {
      if ('port' in message) resolve(message.port)
      else received.push({ ...message, body: Buffer.from(message.body) })
    }),
  )
  base = `http://127.0.0.1:${port}`
})

afterAll(() => receiver.terminate())

/** The statuses the receiver answers the next requests with (then 200). */
const answer = (...statuses: number[]) => receiver.postMessage(statuses)

/** Waits (up to `within` ms) until the receiver has reported `count` requests (its messages trail the responses). */
async function arrived(count: number, within = 5000) {
  for (let waited = 0; received.length < count && waited < within; waited += 10)
    await new Promise((resolve) => setTimeout(resolve, 10))
  return received
}

const threads: ExportThread[] = []
afterEach(async () => {
  received.length = 0
  answer()
  delete process.env.OTEL_EXPORTER_OTLP_HEADERS
  delete process.env.OTEL_EXPORTER_OTLP_COMPRESSION
  delete process.env.OTEL_EXPORTER_OTLP_TIMEOUT
  await Promise.all(threads.splice(0).map((thread) => thread.close()))
})

/** A thread for the two signals under `url`, configured as tracing configures it (the variables read now). */
async function thread(url = base) {
  const made = new ExportThread((await otlpExports(sdk, url)).signals)
  threads.push(made)
  return made
}

const bytes = (text: string) => new TextEncoder().encode(text)

describe('the OTLP export thread', () => {
  it('sends each signal to its URL with the standard variables applied, and the main thread opens no socket', async () => {
    process.env.OTEL_EXPORTER_OTLP_HEADERS = 'x-team=keel'
    const exports = await thread()
    const traces = await exports.transport('TRACES').send(bytes('{"resourceSpans":[]}'))
    const metrics = await exports.transport('METRICS').send(bytes('{"resourceMetrics":[]}'))
    expect(traces).toEqual({ status: 'success' })
    expect(metrics).toEqual({ status: 'success' })
    expect((await arrived(2)).map(({ path, body }) => [path, body.toString()])).toEqual([
      ['/v1/traces', '{"resourceSpans":[]}'],
      ['/v1/metrics', '{"resourceMetrics":[]}'],
    ])
    expect(received[0]?.headers['x-team']).toBe('keel')
    expect(received[0]?.headers['content-type']).toBe('application/json')
    // The exporter keeps its connection alive: in the worker, not here.
    expect(process.getActiveResourcesInfo().filter((kind) => /TCP/.test(kind))).toEqual([])
  })

  it('hands over exports larger than the mailbox, and many at once, intact', async () => {
    const exports = await thread()
    const transport = exports.transport('TRACES')
    // 1.5 MiB (the mailbox starts at 256 KiB) of varying bytes, then 20 small ones while it waits.
    const large = new Uint8Array(1.5 * 1024 * 1024).map((_, index) => 32 + (index % 90))
    const expected = Buffer.from(large)
    const results = await Promise.all([
      transport.send(large),
      ...Array.from({ length: 20 }, (_, index) => transport.send(bytes(`{"n":${index}}`))),
    ])
    expect(results.every((result) => result.status === 'success')).toBe(true)
    expect(await arrived(21)).toHaveLength(21)
    // Handed over in order; sent concurrently, as the SDK's exporter sends them.
    const [big, ...small] = [...received].sort((a, b) => b.body.length - a.body.length)
    expect(big?.body.equals(expected)).toBe(true)
    expect(small.map(({ body }) => JSON.parse(body.toString()).n).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, index) => index),
    )
  })

  it('compresses as OTEL_EXPORTER_OTLP_COMPRESSION asks, and retries what the receiver says to retry', async () => {
    process.env.OTEL_EXPORTER_OTLP_COMPRESSION = 'gzip'
    answer(503, 503)
    const body = `{"resourceSpans":[${'{},'.repeat(200)}{}]}`
    const result = await (await thread()).transport('TRACES').send(bytes(body))
    expect(result).toEqual({ status: 'success' })
    const tries = await arrived(3)
    expect(tries).toHaveLength(3)
    for (const attempt of tries) {
      expect(attempt.headers['content-encoding']).toBe('gzip')
      expect(gunzipSync(attempt.body).toString()).toBe(body)
    }
  })

  it('trusts the certificate OTEL_EXPORTER_OTLP_CERTIFICATE names for an https receiver, and only it', async () => {
    const tls = await selfSignedCertificate()
    const bodies: string[] = []
    const secure = createHttpsServer({ key: tls.key, cert: tls.cert }, (request, response) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        bodies.push(`${request.url} ${Buffer.concat(chunks).toString()}`)
        response.end('{}')
      })
    })
    await new Promise<void>((resolve) => secure.listen(0, '127.0.0.1', resolve))
    const url = `https://127.0.0.1:${(secure.address() as AddressInfo).port}`
    try {
      const untrusted = await (await thread(url)).transport('TRACES').send(bytes('{"n":1}'))
      expect(untrusted.status).toBe('failure')
      expect(untrusted.status === 'failure' && untrusted.error.message).toMatch(/self[- ]signed/i)
      process.env.OTEL_EXPORTER_OTLP_CERTIFICATE = tls.certFile
      const trusted = await (await thread(url)).transport('METRICS').send(bytes('{"n":2}'))
      expect(trusted).toEqual({ status: 'success' })
      expect(bodies).toEqual(['/v1/metrics {"n":2}'])
    } finally {
      delete process.env.OTEL_EXPORTER_OTLP_CERTIFICATE
      await new Promise((resolve) => secure.close(resolve))
      await tls.close()
    }
  })

  it('answers a refused export and an unreachable receiver with a failure that says why', async () => {
    answer(400)
    const refused = await (await thread()).transport('TRACES').send(bytes('{}'))
    expect(refused.status).toBe('failure')
    expect(refused.status === 'failure' && refused.error.message).toMatch(/400|Bad Request/)
    // A closed port on loopback: the connection is refused (retried until the timeout).
    process.env.OTEL_EXPORTER_OTLP_TIMEOUT = '300'
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const unreachable = await (await thread(`http://127.0.0.1:${port}`))
      .transport('METRICS')
      .send(bytes('{}'))
    expect(unreachable.status).not.toBe('success')
    expect(unreachable.status !== 'success' && unreachable.error?.message).toMatch(/ECONNREFUSED/)
  })

  it('at shutdown, sends from this thread what a worker still starting has not taken, each once', async () => {
    const exports = await thread()
    const transport = exports.transport('TRACES')
    // The worker cannot have said it is ready yet: its messages come on a later turn.
    const first = transport.send(bytes('{"n":1}'))
    exports.draining()
    const second = transport.send(bytes('{"n":2}'))
    expect(await Promise.all([first, second])).toEqual([{ status: 'success' }, { status: 'success' }])
    expect((await arrived(2)).map(({ body }) => body.toString()).sort()).toEqual(['{"n":1}', '{"n":2}'])
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(received).toHaveLength(2)
  })

  it('fails what is sent after close, and a signal it was not given', async () => {
    const exports = await thread()
    await exports.close()
    const late = await exports.transport('TRACES').send(bytes('{}'))
    expect(late).toMatchObject({ status: 'failure', error: { message: 'the OTLP export thread was closed' } })
    expect(await arrived(1, 300)).toEqual([])
    expect(() => exports.transport('LOGS' as ExportSignal['signal'])).toThrow(/no OTLP signal LOGS/)
  })
})
