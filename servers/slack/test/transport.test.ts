import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it, vi } from 'vitest'
import { createSlackApi, SlackError } from '../src/lib/slack.js'
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
})
