import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, vi } from 'vitest'
import { createSlackApi, SlackError } from '../src/lib/slack.js'
import { IDLE_MS, READ_IDLE_MS, READ_METHODS } from '../src/lib/transport.js'
import { BOT_TOKEN } from './fake-slack.js'
import { fake, useCleanup } from './helpers.js'

useCleanup()

const quiet = { log: () => {} }

// The real @slack/web-api client (its queue, retries and 429 handling) on the keep-alive transport.
describe("the Web API client's transport", () => {
  it('keeps one connection for calls made one after another, and opens one more per call in flight', async () => {
    const slack = await fake({ latencyMs: 50 })
    const api = createSlackApi(BOT_TOKEN, { apiUrl: slack.url, ...quiet })
    for (let index = 0; index < 5; index++) expect((await api.apiCall('auth.test')).ok).toBe(true)
    expect(slack.connections.opened).toBe(1)
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        api.apiCall('conversations.history', { channel: 'C0GENERAL', limit: 2 }),
      ),
    )
    expect(answers.map((answer) => answer.messages.length)).toEqual(Array(8).fill(2))
    expect(slack.peakInFlight).toBe(8)
    expect(slack.connections.opened).toBe(8)
  })

  it('waits for an answer slower than the idle limit, and closes a connection idle past it', async () => {
    const slack = await fake({ latencyMs: 300 })
    const api = createSlackApi(BOT_TOKEN, { apiUrl: slack.url, idleMs: 100, ...quiet })
    expect((await api.apiCall('auth.test')).ok).toBe(true)
    await vi.waitFor(() => expect(slack.connections.open).toBe(0), { timeout: 5_000, interval: 20 })
    expect((await api.apiCall('auth.test')).ok).toBe(true)
    expect(slack.connections.opened).toBe(2)
  })

  it('refuses a redirect: the call fails and the token never reaches the other host', async () => {
    const slack = await fake()
    const seen: Array<string | undefined> = []
    const other = createServer((request, response) => {
      seen.push(request.headers.authorization)
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
    })
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
    const closeOther = { close: () => new Promise((resolve) => other.close(resolve)) }
    try {
      const { port } = other.address() as AddressInfo
      slack.fail({ method: 'auth.test', status: 302, location: `http://127.0.0.1:${port}/api/auth.test` })
      const api = createSlackApi(BOT_TOKEN, { apiUrl: slack.url, retries: 0, ...quiet })
      const failure = await api.apiCall('auth.test').catch((error: unknown) => error)
      expect(failure).toBeInstanceOf(SlackError)
      expect((failure as SlackError).error).toBe('request_error')
      expect(String((failure as Error).message)).not.toContain(BOT_TOKEN)
      expect(seen).toEqual([])
      expect((await api.apiCall('auth.test')).ok).toBe(true)
    } finally {
      await closeOther.close()
    }
  })

  it('fails a call whose connection closes inside the answer, without waiting', async () => {
    const broken = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' })
      response.write('{"ok":true,')
      setTimeout(() => response.socket?.destroy(), 20)
    })
    await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = broken.address() as AddressInfo
      const api = createSlackApi(BOT_TOKEN, { apiUrl: `http://127.0.0.1:${port}/api/`, retries: 0, ...quiet })
      const failure = await api.apiCall('auth.test').catch((error: unknown) => error)
      expect(failure).toBeInstanceOf(SlackError)
      expect((failure as SlackError).error).toBe('request_error')
    } finally {
      broken.closeAllConnections()
      await new Promise((resolve) => broken.close(resolve))
    }
  })

  it('asks for compressed answers and reads them', async () => {
    const slack = await fake({ gzip: true })
    const api = createSlackApi(BOT_TOKEN, { apiUrl: slack.url, ...quiet })
    const history = await api.apiCall('conversations.history', { channel: 'C0GENERAL', limit: 3 })
    expect(history.messages.map((message: { text: string }) => message.text)).toEqual([
      'a thread starter',
      'message 24 in general',
      'message 23 in general',
    ])
  })

  it('keeps the connection of a read across a pause longer than the one of a write', async () => {
    const slack = await fake()
    const api = createSlackApi(BOT_TOKEN, { apiUrl: slack.url, idleMs: 100, readIdleMs: 10_000, ...quiet })
    const read = () => api.apiCall('conversations.history', { channel: 'C0GENERAL', limit: 2 })
    const write = () => api.apiCall('chat.postMessage', { channel: 'C0GENERAL', text: 'hello' })
    expect((await read()).ok).toBe(true)
    await pause(400)
    expect((await read()).ok).toBe(true)
    expect(slack.connections.opened).toBe(1)
    // A write goes over a connection of its own, which closes after its 100 ms.
    expect((await write()).ok).toBe(true)
    expect(slack.connections.opened).toBe(2)
    await pause(400)
    expect(slack.connections.open).toBe(1)
    expect((await write()).ok).toBe(true)
    expect(slack.connections.opened).toBe(3)
    expect((await read()).ok).toBe(true)
    expect(slack.connections.opened).toBe(3)
  })

  it("by default keeps a read's connection past undici's 4 s, and a write's not", async () => {
    expect(IDLE_MS).toBe(4_000)
    expect(READ_IDLE_MS).toBeGreaterThan(4_500)
    // A server's `Keep-Alive: timeout=` hint shortens what the client keeps (Node's own 5 s would
    // close both at 4 s): this one keeps idle connections for a minute.
    const slack = await fake({ keepAliveMs: 60_000 })
    const api = createSlackApi(BOT_TOKEN, { apiUrl: slack.url, ...quiet })
    expect((await api.apiCall('users.info', { user: 'U00000002' })).ok).toBe(true)
    expect((await api.apiCall('chat.postMessage', { channel: 'C0GENERAL', text: 'hello' })).ok).toBe(true)
    expect(slack.connections.opened).toBe(2)
    await vi.waitFor(() => expect(slack.connections.open).toBe(1), { timeout: 6_000, interval: 50 })
    await pause(300)
    expect((await api.apiCall('conversations.info', { channel: 'C0GENERAL' })).ok).toBe(true)
    expect(slack.connections.opened).toBe(2)
  }, 15_000)

  it('sends a read again at once when its kept connection closes under it, and a write never', async () => {
    const slack = await fake()
    // No retries by the client: what is sent again is sent by the transport.
    const api = createSlackApi(BOT_TOKEN, { apiUrl: slack.url, retries: 0, ...quiet })
    const sent = (method: string) => slack.calls.filter((call) => call.method === method).length
    expect((await api.apiCall('auth.test')).ok).toBe(true)
    slack.fail({ method: 'conversations.history', drop: true })
    const history = await api.apiCall('conversations.history', { channel: 'C0GENERAL', limit: 2 })
    expect(history.messages).toHaveLength(2)
    expect(sent('conversations.history')).toBe(2)
    expect(slack.connections.opened).toBe(2)

    expect((await api.apiCall('chat.postMessage', { channel: 'C0GENERAL', text: 'first' })).ok).toBe(true)
    slack.fail({ method: 'chat.postMessage', drop: true })
    const failure = await api
      .apiCall('chat.postMessage', { channel: 'C0GENERAL', text: 'second' })
      .catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(SlackError)
    expect((failure as SlackError).error).toBe('request_error')
    expect(sent('chat.postMessage')).toBe(2)
    expect(slack.messages.get('C0GENERAL')?.filter((message) => message.text === 'second')).toEqual([])
  })

  it('knows every Web API method the server calls as a read or a write', () => {
    // Slack's methods that change something. A method the server starts calling must be added here
    // or to READ_METHODS (only if it changes nothing): until then this test fails.
    const writes = new Set([
      'canvases.create',
      'canvases.edit',
      'chat.delete',
      'chat.deleteScheduledMessage',
      'chat.postMessage',
      'chat.scheduleMessage',
      'chat.update',
      'conversations.mark',
      'files.completeUploadExternal',
      'files.getUploadURLExternal',
      'reactions.add',
    ])
    const source = fileURLToPath(new URL('../src/', import.meta.url))
    const called = new Set<string>()
    for (const file of readdirSync(source, { recursive: true, encoding: 'utf8' })) {
      if (!file.endsWith('.ts') || file.endsWith('.test.ts')) continue
      const text = readFileSync(join(source, file), 'utf8')
      for (const match of text.matchAll(/apiCall\(\s*'([\w.]+)'/g)) called.add(match[1] as string)
    }
    expect(called.size).toBeGreaterThan(20)
    const unknown = [...called].filter((method) => !READ_METHODS.has(method) && !writes.has(method))
    expect(unknown).toEqual([])
    expect([...READ_METHODS].filter((method) => writes.has(method))).toEqual([])
    expect([...READ_METHODS].filter((method) => !called.has(method))).toEqual([])
  })
})

// A write Slack may have received is never sent again: chat.postMessage twice is a message posted twice.
describe('writes are sent once', () => {
  it('sends a read again after a 5xx or a lost connection; a write once, marked unconfirmed', async () => {
    const slack = await fake()
    const api = createSlackApi(BOT_TOKEN, { apiUrl: slack.url, retries: 2, minRetryMs: 10, ...quiet })
    const sent = (method: string) => slack.calls.filter((call) => call.method === method).length
    slack.fail({ method: 'users.info', status: 503 })
    slack.fail({ method: 'users.info', drop: true })
    expect((await api.apiCall('users.info', { user: 'U00000002' })).ok).toBe(true)
    expect(sent('users.info')).toBe(3)

    const faults = [
      { status: 503 },
      { status: 500, body: 'upstream failed' },
      { drop: true },
      { status: 200, body: '{"ok": tru <html>' },
      { error: 'internal_error' },
      { error: 'fatal_error' },
    ]
    for (const fault of faults) {
      slack.fail({ method: 'chat.postMessage', ...fault })
      const before = sent('chat.postMessage')
      const failure = await api
        .apiCall('chat.postMessage', { channel: 'C0GENERAL', text: 'once' })
        .catch((error: unknown) => error)
      expect(failure, JSON.stringify(fault)).toBeInstanceOf(SlackError)
      expect((failure as SlackError).details.unconfirmed, JSON.stringify(fault)).toBe(true)
      expect(sent('chat.postMessage') - before, JSON.stringify(fault)).toBe(1)
    }

    // A refusal and a rate limit are answers that nothing was done: not unconfirmed, and a 429
    // within the inline wait is sent again.
    slack.fail({ method: 'chat.postMessage', error: 'channel_not_found' })
    const refused = await api
      .apiCall('chat.postMessage', { channel: 'C0GENERAL', text: 'refused' })
      .catch((error: unknown) => error)
    expect((refused as SlackError).error).toBe('channel_not_found')
    expect((refused as SlackError).details.unconfirmed).toBeUndefined()
    slack.fail({ method: 'chat.postMessage', status: 429, retryAfter: 1 })
    const before = sent('chat.postMessage')
    expect((await api.apiCall('chat.postMessage', { channel: 'C0GENERAL', text: 'later' })).ok).toBe(true)
    expect(sent('chat.postMessage') - before).toBe(2)
    expect(slack.messages.get('C0GENERAL')?.filter((message) => message.text === 'later')).toHaveLength(1)
  })

  it('sends a write again when it never reached Slack (connection refused)', async () => {
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const { port } = probe.address() as AddressInfo
    await new Promise((resolve) => probe.close(resolve))
    const received: string[] = []
    const late = createServer((request, response) => {
      received.push(String(request.url))
      request.resume()
      request.on('end', () =>
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end('{"ok":true,"channel":"C0GENERAL","ts":"1700000200.000100"}'),
      )
    })
    const api = createSlackApi(BOT_TOKEN, {
      apiUrl: `http://127.0.0.1:${port}/api/`,
      retries: 3,
      minRetryMs: 150,
      ...quiet,
    })
    const answer = api.apiCall('chat.postMessage', { channel: 'C0GENERAL', text: 'after a refusal' })
    // The first attempt is refused; the server starts listening before the second.
    await pause(60)
    await new Promise<void>((resolve) => late.listen(port, '127.0.0.1', resolve))
    try {
      expect((await answer).ok).toBe(true)
      expect(received).toEqual(['/api/chat.postMessage'])
    } finally {
      late.closeAllConnections()
      await new Promise((resolve) => late.close(resolve))
    }

    // Refused every time: the write fails as not reached, not as unconfirmed.
    const nobody = createSlackApi(BOT_TOKEN, {
      apiUrl: `http://127.0.0.1:${port}/api/`,
      retries: 1,
      minRetryMs: 10,
      ...quiet,
    })
    const failure = await nobody
      .apiCall('chat.postMessage', { channel: 'C0GENERAL', text: 'never' })
      .catch((error: unknown) => error)
    expect((failure as SlackError).error).toBe('request_error')
    expect((failure as SlackError).details.unconfirmed).toBeUndefined()
  })
})

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
