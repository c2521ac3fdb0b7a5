import { request as httpRequest } from 'node:http'
import { connect as netConnect, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { type HttpEndpoint, type HttpLimits, serveHttp } from '../src/http.js'
import { createLogger, type LogRecord } from '../src/logger.js'
import { prepare } from '../src/run.js'
import { connectHttp } from '../src/testing/index.js'
import { fixture } from './fixture.js'

/**
 * The HTTP front door against what an attack pass on the open network tried: oversized bodies a
 * fetch client must still be able to read the answer to, trickling sockets, session floods, and
 * messages that deserve a precise code. Bounded in count and time; loopback only.
 */
const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => {})
})

async function start(limits: Partial<HttpLimits> = {}, argv: string[] = []) {
  const records: LogRecord[] = []
  const logger = createLogger({ level: 'silent', name: 'front-door' }, {})
  logger.addForwarder((record) => {
    records.push(record)
  })
  const shutdown = new AbortController()
  const runtime = await prepare(fixture, {
    argv: ['--transport', 'http', '--port', '0', ...argv],
    env: { LOG_LEVEL: 'silent' },
    shutdownSignal: shutdown.signal,
    logger,
  })
  const endpoint: HttpEndpoint = await serveHttp(runtime, limits)
  open.push({
    close: async () => {
      shutdown.abort()
      await endpoint.close()
    },
  })
  return { endpoint, records }
}

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
const initialize = (id: number | string = 1) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'flood', version: '1' } },
  })

function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: options.method ?? 'POST', headers: options.headers },
      (response) => {
        let body = ''
        response.on('data', (chunk: Buffer) => {
          body += chunk
        })
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }))
      },
    )
    request.on('error', reject)
    request.end(options.body)
  })
}

async function sessionCount(endpoint: HttpEndpoint): Promise<number> {
  const health = await fetch(endpoint.url.replace('/mcp', '/healthz'))
  return ((await health.json()) as { sessions: number }).sessions
}

describe('the front door', () => {
  it('answers an oversized body with a 413 that a fetch client can read', async () => {
    const { endpoint } = await start()
    const response = await fetch(endpoint.url, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: 'x'.repeat(5 * 1024 * 1024),
    })
    expect(response.status).toBe(413)
    expect(((await response.json()) as { error: { code: number } }).error.code).toBe(-32600)
  })

  it('closes, rather than reads, a body past the discard bound', async () => {
    const { endpoint } = await start({ discardBodyBytes: 1024 * 1024 })
    const outcome = await fetch(endpoint.url, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: 'x'.repeat(8 * 1024 * 1024),
    }).then(
      (response) => response.status,
      () => 'closed',
    )
    expect([413, 'closed']).toContain(outcome)
    expect((await raw(endpoint.url, { headers: JSON_HEADERS, body: initialize() })).status).toBe(200)
  })

  it('closes sockets that trickle headers or a body, within seconds', async () => {
    const { endpoint } = await start({ headersTimeoutMs: 800, requestTimeoutMs: 1200 })
    const { port } = new URL(endpoint.url)
    const sockets: Socket[] = []
    const closed: Array<Promise<number>> = []
    const started = Date.now()
    for (let index = 0; index < 20; index++) {
      const socket = netConnect(Number(port), '127.0.0.1')
      sockets.push(socket)
      closed.push(new Promise((resolve) => socket.once('close', () => resolve(Date.now() - started))))
      socket.on('error', () => {})
      const trickleBody = index % 2 === 1
      socket.write(
        trickleBody
          ? `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`
          : `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`,
      )
      const timer = setInterval(() => socket.writable && socket.write(trickleBody ? ' ' : 'X'), 300)
      socket.once('close', () => clearInterval(timer))
    }
    const times = await Promise.all(closed)
    expect(Math.max(...times)).toBeLessThan(8000)
    for (const socket of sockets) socket.destroy()
  })

  it('does not cut a response stream that is still sending (progress over SSE outlives the request timeout)', async () => {
    const { endpoint } = await start({ headersTimeoutMs: 500, requestTimeoutMs: 800 })
    const connection = await connectHttp(endpoint.url)
    open.push(connection)
    const progress: unknown[] = []
    const result = await connection.client.callTool(
      { name: 'slow', arguments: { steps: 8, step_ms: 200 } },
      { onprogress: (update) => progress.push(update) },
    )
    expect(result.isError).toBeFalsy()
    expect(progress.length).toBeGreaterThan(5)
  })

  it('keeps one client within its session cap: its oldest idle session gives way, others are untouched', async () => {
    const { endpoint } = await start({ maxSessionsPerClient: 4, maxSessions: 16 })
    const other = await connectHttp(endpoint.url, { token: 'other-client-token-000' })
    open.push(other)
    for (let index = 0; index < 10; index++) {
      const response = await raw(endpoint.url, {
        headers: { ...JSON_HEADERS, authorization: 'Bearer flooding-client-token-1' },
        body: initialize(index),
      })
      expect(response.status).toBe(200)
    }
    expect(await sessionCount(endpoint)).toBe(5)
    expect(
      (await other.client.callTool({ name: 'echo', arguments: { message: 'still here' } })).isError,
    ).toBeFalsy()
  })

  it('never refuses a new client while idle sessions can give way, and never evicts a busy one', async () => {
    const { endpoint } = await start({ maxSessionsPerClient: 100, maxSessions: 6 })
    const busy = await connectHttp(endpoint.url, { token: 'busy-client-token-0000' })
    open.push(busy)
    const call = busy.client.callTool({ name: 'slow', arguments: { steps: 10, step_ms: 100 } })
    for (let index = 0; index < 30; index++) {
      const response = await raw(endpoint.url, {
        headers: { ...JSON_HEADERS, authorization: `Bearer abandoned-client-${index}-0000` },
        body: initialize(index),
      })
      expect(response.status).toBe(200)
    }
    expect((await call).isError).toBeFalsy()
    expect(await sessionCount(endpoint)).toBeLessThanOrEqual(6)
  })

  it('stays bounded in sessions and memory with 10,000 sessions opened and abandoned', async () => {
    const { endpoint } = await start({ maxSessionsPerClient: 32, maxSessions: 256 })
    const heapBefore = process.memoryUsage().heapUsed
    for (let index = 0; index < 10_000; index++) {
      const response = await raw(endpoint.url, { headers: JSON_HEADERS, body: initialize(index) })
      if (response.status !== 200) throw new Error(`session ${index}: ${response.status} ${response.body}`)
    }
    expect(await sessionCount(endpoint)).toBeLessThanOrEqual(32)
    globalThis.gc?.()
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(200 * 1024 * 1024)
  }, 120_000)

  it.each([
    ['params as an array', { jsonrpc: '2.0', id: 7, method: 'tools/list', params: [] }, -32602, 7],
    ['a float id', { jsonrpc: '2.0', id: 1.5, method: 'ping' }, -32600, null],
    ['an id of 1e308', { jsonrpc: '2.0', id: 1e308, method: 'ping' }, -32600, null],
    [
      'a malformed _meta (once answered with -32700 and id null)',
      { jsonrpc: '2.0', id: 8, method: 'ping', params: { _meta: { progressToken: {} } } },
      -32602,
      8,
    ],
  ])('answers %s with the precise code', async (_what, message, code, id) => {
    const { endpoint } = await start()
    const response = await raw(endpoint.url, { headers: JSON_HEADERS, body: JSON.stringify(message) })
    expect(response.status).toBe(400)
    expect(JSON.parse(response.body)).toMatchObject({ id, error: { code } })
  })

  it('refuses a malformed Host header with a 400 and no error in the log', async () => {
    const { endpoint, records } = await start()
    const { port } = new URL(endpoint.url)
    const response = await raw(endpoint.url, {
      headers: { ...JSON_HEADERS, host: `localhost:${port}@evil.example` },
      body: initialize(),
    })
    expect(response.status).toBe(400)
    expect(records.filter((record) => record.level === 'error')).toEqual([])
  })
})
