import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http'
import { describe, expect, it, vi } from 'vitest'
import { BoundedEventStore } from '../src/event-store.js'
import { connectHttp } from '../src/testing/index.js'
import { askingFixture, type HttpServer, httpPair, normalized } from './fast-path-harness.js'

// Core's path for a `tools/call` POST of a 2025-era HTTP session (http/session-post.ts) against
// the SDK's Node adapter: the same POSTs, on a session of a server with it and of one without
// (KEEL_FAST_PATH=0), must get the same status, content type and messages; a client that loses its
// stream must get the rest of it with `Last-Event-ID`, a cancelled call must stop, and the SDK's
// v1 and v2 clients (progress, elicitation on the call's stream) must be served by it.

const spec = askingFixture()

type Server = HttpServer

/** One SSE frame: its id (if any), and its message (undefined for a priming event). */
interface Frame {
  id?: string
  message?: Record<string, unknown>
}

function framesOf(text: string): Frame[] {
  return text
    .split('\n\n')
    .filter((frame) => frame.trim() && !frame.startsWith(':'))
    .map((frame) => {
      const lines = frame.split('\n')
      const id = lines.find((line) => line.startsWith('id: '))?.slice(4)
      const data = lines.find((line) => line.startsWith('data: '))?.slice(6)
      return { ...(id ? { id } : {}), ...(data ? { message: JSON.parse(data) } : {}) }
    })
}

interface Answer {
  status: number
  type: string | undefined
  /** SSE: the messages of the frames, in order; JSON: the body. */
  body: unknown
  /** SSE: a priming frame (an id, no message) came first. */
  primed?: boolean
  /** SSE: every message frame carried an event id. */
  ids?: boolean
}

/** A POST whose answer is read as it comes: `frames` grows, `ended` settles at the end. */
interface Streaming {
  request: ClientRequest
  response: Promise<IncomingMessage>
  frames: Frame[]
  /** Everything the answer's body held so far. */
  raw: { text: string }
  ended: Promise<void>
}

function stream(url: string, method: string, headers: Record<string, string>, body?: string): Streaming {
  const frames: Frame[] = []
  const raw = { text: '' }
  let text = ''
  let resolveResponse: (response: IncomingMessage) => void = () => {}
  let resolveEnded: () => void = () => {}
  const response = new Promise<IncomingMessage>((resolve) => {
    resolveResponse = resolve
  })
  const ended = new Promise<void>((resolve) => {
    resolveEnded = resolve
  })
  const request = httpRequest(url, { method, headers }, (res) => {
    resolveResponse(res)
    res.on('data', (chunk: Buffer) => {
      raw.text += chunk.toString()
      text += chunk.toString()
      const complete = text.lastIndexOf('\n\n')
      if (complete < 0) return
      frames.push(...framesOf(text.slice(0, complete + 2)))
      text = text.slice(complete + 2)
    })
    res.on('end', resolveEnded)
    res.on('error', resolveEnded)
    res.on('close', resolveEnded)
  })
  request.on('error', () => resolveEnded())
  request.end(body)
  return { request, response, frames, raw, ended }
}

async function post(url: string, headers: Record<string, string>, body: string): Promise<Answer> {
  const { response, frames, raw, ended } = stream(url, 'POST', headers, body)
  const res = await response
  const type = res.headers['content-type']
  await ended
  if (type?.startsWith('text/event-stream')) {
    const messages = frames.filter((frame) => frame.message)
    return {
      status: res.statusCode ?? 0,
      type,
      body: messages.map((frame) => frame.message),
      primed: frames[0] !== undefined && frames[0].message === undefined && frames[0].id !== undefined,
      ids: messages.every((frame) => frame.id !== undefined),
    }
  }
  return { status: res.statusCode ?? 0, type, body: raw.text ? JSON.parse(raw.text) : raw.text }
}

async function until<T>(read: () => T, done: (value: T) => boolean, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms
  let value = read()
  while (!done(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5))
    value = read()
  }
  return value
}

const BASE_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }

/** A 2025-era session of `server` at `version`: its headers for later POSTs. */
async function openSession(server: Server, version: string): Promise<Record<string, string>> {
  const { response, ended } = stream(
    server.http.url,
    'POST',
    BASE_HEADERS,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: version,
        capabilities: {},
        clientInfo: { name: 'session-test', version: '1.0.0' },
      },
    }),
  )
  const res = await response
  res.resume()
  await ended
  const session = res.headers['mcp-session-id']
  if (typeof session !== 'string') throw new Error('no session id')
  const headers = { ...BASE_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': version }
  await post(
    server.http.url,
    headers,
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  )
  return headers
}

const call = (id: number, name: string, args: unknown = {}, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra } })

/** One POST of a script: its body, headers changed from the session's, and whether core takes it. */
interface Step {
  body: string
  headers?: Record<string, string | undefined>
  served: 0 | 1
}

const script: Step[] = [
  { body: call(1, 'echo', { message: 'hi', times: 2 }), served: 1 },
  { body: call(2, 'echo', { message: 5 }), served: 1 },
  { body: call(3, 'no_such_tool'), served: 1 },
  { body: call(4, 'fail', { how: 'tool_error' }), served: 1 },
  { body: call(5, 'fail', { how: 'crash' }), served: 1 },
  { body: call(6, 'fail', { how: 'secret' }), served: 1 },
  { body: call(7, 'fail', { how: 'bad_output' }), served: 1 },
  { body: call(8, 'get_picture'), served: 1 },
  { body: call(9, 'hang'), served: 1 },
  { body: call(10, 'increment'), served: 1 },
  { body: call(11, 'increment'), served: 1 },
  // Warnings unasked, progress with a token; no elicitation capability in this session.
  { body: call(12, 'slow', { steps: 2, step_ms: 1 }, { _meta: { progressToken: 'p12' } }), served: 1 },
  { body: call(13, 'ask_user'), served: 1 },
  {
    body: call(
      14,
      'echo',
      { message: 'x' },
      { _meta: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } },
    ),
    served: 1,
  },
  { body: call(15, 'echo', { message: 'é ✓ \u2028 "quoted"' }), served: 1 },
  {
    body: call(16, 'echo', { message: 'no version header' }),
    headers: { 'mcp-protocol-version': undefined },
    served: 1,
  },
  // The level the session sets counts for the calls after it.
  {
    body: JSON.stringify({ jsonrpc: '2.0', id: 17, method: 'logging/setLevel', params: { level: 'info' } }),
    served: 0,
  },
  { body: call(18, 'slow', { steps: 1, step_ms: 1 }), served: 1 },
  // Left to the SDK's adapter.
  { body: call(20, 'echo'), headers: { accept: 'application/json' }, served: 0 },
  { body: call(21, 'echo'), headers: { 'content-type': 'text/plain' }, served: 0 },
  { body: call(22, 'echo'), headers: { 'mcp-protocol-version': '1999-01-01' }, served: 0 },
  { body: call(23, 'echo', {}, { task: {} }), served: 0 },
  { body: call(24, 'echo', {}, { _meta: { 'io.modelcontextprotocol/logLevel': 'debug' } }), served: 0 },
  { body: `[${call(25, 'echo', { message: 'batch' })}]`, served: 0 },
  { body: JSON.stringify({ jsonrpc: '2.0', id: 26, method: 'tools/list' }), served: 0 },
  { body: JSON.stringify({ jsonrpc: '2.0', id: 27, method: 'ping' }), served: 0 },
  { body: call(28, 'echo', []), served: 0 },
  {
    body: `{"jsonrpc":"2.0","id":29,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x","__proto__":{"times":3}}}}`,
    served: 0,
  },
  { body: call(30, 'echo', { message: 'no session' }), headers: { 'mcp-session-id': undefined }, served: 0 },
]

/** Starts a long `slow` call on `session`: its stream, and its signal once the tool runs. */
async function startSlow(server: Server, session: Record<string, string>, id: number) {
  const deps = server.runtime.deps
  const before = deps.seenSignals.length
  const running = stream(server.http.url, 'POST', session, call(id, 'slow', { steps: 100, step_ms: 50 }))
  await until(
    () => deps.seenSignals.length,
    (count) => count > before,
  )
  return { running, signal: deps.seenSignals[before] }
}

function headersOf(session: Record<string, string>, changes: Record<string, string | undefined> = {}) {
  const headers: Record<string, string | undefined> = { ...session, ...changes }
  for (const key of Object.keys(headers)) if (headers[key] === undefined) delete headers[key]
  return headers as Record<string, string>
}

describe('2025-era HTTP sessions: tool calls taken in by core', () => {
  const pair = httpPair(spec)

  for (const version of ['2025-06-18', '2025-11-25']) {
    it(`answers every POST of the script as the SDK does (${version})`, async () => {
      const sessions = {
        fast: await openSession(pair.fast, version),
        sdk: await openSession(pair.sdk, version),
      }
      const answers = { fast: [] as Answer[], sdk: [] as Answer[] }
      const served: number[] = []
      for (const step of script) {
        const before = pair.fast.http.fastPathServed
        answers.fast.push(
          normalized(await post(pair.fast.http.url, headersOf(sessions.fast, step.headers), step.body)),
        )
        served.push(pair.fast.http.fastPathServed - before)
        answers.sdk.push(
          normalized(await post(pair.sdk.http.url, headersOf(sessions.sdk, step.headers), step.body)),
        )
      }
      expect(answers.fast).toEqual(answers.sdk)
      expect(served).toEqual(script.map((step) => step.served))
      expect(pair.sdk.http.fastPathServed).toBe(0)
      // What the script exercises, read off the answers: a result over SSE (primed for resumption
      // from 2025-11-25 on, every event with its id), the counter the session keeps, progress and
      // the level set by the session.
      expect(answers.fast[0]).toMatchObject({
        status: 200,
        type: 'text/event-stream',
        body: [{ result: { structuredContent: { echoed: 'hi hi' } } }],
        primed: version === '2025-11-25',
        ids: true,
      })
      // The SDK's refusals, with their JSON bodies: a missing media type, an unsupported version.
      expect(answers.fast[18]).toMatchObject({ status: 406, body: { error: { code: -32000 } } })
      expect(answers.fast[20]).toMatchObject({ status: 400, body: { error: { code: -32000 } } })
      const counted = (index: number) =>
        Number(/counter=(\d+)/.exec(JSON.stringify(answers.fast[index]?.body))?.[1])
      expect(counted(10)).toBe(counted(9) + 1)
      const progressed = answers.fast[11]?.body as Array<{ method?: string }>
      expect(progressed.filter((message) => message.method === 'notifications/progress')).toHaveLength(2)
      const levelled = answers.fast[17]?.body as Array<{ method?: string; params?: { level?: string } }>
      expect(
        levelled.filter((message) => message.method === 'notifications/message').map((m) => m.params?.level),
      ).toEqual(['warning', 'info'])
    })
  }

  it('lets a client that lost the stream of a call resume it with Last-Event-ID, as the SDK does', async () => {
    const resumed: Record<'fast' | 'sdk', unknown[]> = { fast: [], sdk: [] }
    for (const [name, server] of [
      ['fast', pair.fast],
      ['sdk', pair.sdk],
    ] as const) {
      const session = await openSession(server, '2025-11-25')
      const before = server.http.fastPathServed
      const first = stream(
        server.http.url,
        'POST',
        session,
        call(40, 'slow', { steps: 4, step_ms: 60 }, { _meta: { progressToken: 'p40' } }),
      )
      // The first progress event, then the connection drops.
      const seen = await until(
        () => first.frames,
        (frames) => frames.some((frame) => frame.message?.method === 'notifications/progress'),
      )
      const last = seen.filter((frame) => frame.id).at(-1)?.id as string
      first.request.destroy()
      const messages = seen.flatMap((frame) => (frame.message ? [frame.message] : []))
      const again = stream(server.http.url, 'GET', {
        ...headersOf(session),
        accept: 'text/event-stream',
        'last-event-id': last,
      })
      const rest = await until(
        () => again.frames,
        (frames) => frames.some((frame) => (frame.message as { id?: unknown } | undefined)?.id === 40),
      )
      again.request.destroy()
      messages.push(...rest.flatMap((frame) => (frame.message ? [frame.message] : [])))
      resumed[name] = messages
      expect(server.http.fastPathServed - before).toBe(name === 'fast' ? 1 : 0)
    }
    expect(normalized(resumed.fast)).toEqual(normalized(resumed.sdk))
    const progress = resumed.fast.filter(
      (message) => (message as { method?: string }).method === 'notifications/progress',
    )
    expect(progress).toHaveLength(4)
    expect(resumed.fast.at(-1)).toMatchObject({
      id: 40,
      result: { content: [{ text: 'done after 4 steps' }] },
    })
  })

  it('answers as the SDK does when the event store fails before anything is written', async () => {
    const answers: Answer[] = []
    for (const server of [pair.fast, pair.sdk]) {
      const session = await openSession(server, '2025-11-25')
      // The priming event is the first thing the stream stores.
      const store = vi
        .spyOn(BoundedEventStore.prototype, 'storeEvent')
        .mockRejectedValueOnce(new Error('store down'))
      try {
        answers.push(await post(server.http.url, session, call(45, 'echo', { message: 'x' })))
      } finally {
        store.mockRestore()
      }
      const next = await post(server.http.url, session, call(46, 'echo', { message: 'after' }))
      expect(next.body).toMatchObject([{ result: { structuredContent: { echoed: 'after' } } }])
    }
    expect(answers[0]).toEqual(answers[1])
    expect(answers[0]).toMatchObject({
      status: 400,
      body: { error: { code: -32700, data: 'Error: store down' } },
    })
  })

  it('stops a call its client cancels, and the session serves the next one', async () => {
    const session = await openSession(pair.fast, '2025-06-18')
    const { running, signal } = await startSlow(pair.fast, session, 50)
    expect(signal?.aborted).toBe(false)
    const cancelled = await post(
      pair.fast.http.url,
      session,
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 50, reason: 'enough' },
      }),
    )
    expect(cancelled.status).toBe(202)
    await until(
      () => signal?.aborted,
      (aborted) => aborted === true,
    )
    expect(signal?.aborted).toBe(true)
    running.request.destroy()
    const next = await post(pair.fast.http.url, session, call(51, 'echo', { message: 'still here' }))
    expect(next.body).toMatchObject([{ result: { structuredContent: { echoed: 'still here' } } }])
  })

  it('ends the stream of a call when its session is deleted, and stops the call', async () => {
    const session = await openSession(pair.fast, '2025-06-18')
    const { running, signal } = await startSlow(pair.fast, session, 60)
    const deleted = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(pair.fast.http.url, { method: 'DELETE', headers: session }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      request.on('error', reject)
      request.end()
    })
    expect(deleted).toBe(200)
    await running.ended
    await until(
      () => signal?.aborted,
      (aborted) => aborted === true,
    )
    expect(signal?.aborted).toBe(true)
  })

  it.each([
    ['v2', { generation: 'v2' as const }],
    ['v1', { generation: 'v1' as const }],
  ])(
    'serves the SDK %s client: results, progress, and an elicitation on the call’s stream',
    async (_label, options) => {
      const before = pair.fast.http.fastPathServed
      const connection = await connectHttp(pair.fast.http.url, {
        ...options,
        onElicit: async () => ({ action: 'accept', content: { name: 'Ada' } }),
      })
      try {
        const echoed = await connection.client.callTool({
          name: 'echo',
          arguments: { message: 'over a session' },
        })
        expect(echoed.structuredContent).toEqual({ echoed: 'over a session' })
        const updates: unknown[] = []
        await connection.client.callTool(
          { name: 'slow', arguments: { steps: 2, step_ms: 5 } },
          { onprogress: (update) => updates.push(update) },
        )
        expect(updates).toHaveLength(2)
        const asked = await connection.client.callTool({ name: 'ask_user', arguments: {} })
        expect(asked.content).toEqual([{ type: 'text', text: 'accept: Ada' }])
        expect(pair.fast.http.fastPathServed - before).toBe(3)
      } finally {
        await connection.close()
      }
    },
  )
})

describe('a session whose server core did not build', () => {
  it('is served through the transport’s onmessage (the SDK’s own tools/call handler), on the same stream', async () => {
    const { createServer } = await import('node:http')
    const { randomUUID } = await import('node:crypto')
    const { NodeStreamableHTTPServerTransport } = await import('@modelcontextprotocol/node')
    const { McpServer } = await import('@modelcontextprotocol/server')
    const { z } = await import('zod')
    const { sessionCall } = await import('../src/http/session-post.js')
    const mcp = new McpServer({ name: 'plain', version: '1.0.0' })
    mcp.registerTool('shout', { inputSchema: { text: z.string() } }, ({ text }) => ({
      content: [{ type: 'text', text: text.toUpperCase() }],
    }))
    const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() })
    await mcp.connect(transport)
    let taken = 0
    const http = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined
        const viaSdk = () => transport.handleRequest(req, res, body)
        const work = sessionCall(req, res, body, { transport, server: mcp }, viaSdk)
        if (work) taken++
        void (work ?? viaSdk)()
      })
    })
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`
      const session = await openSession({ http: { url } } as unknown as Server, '2025-11-25')
      const answer = await post(url, session, call(1, 'shout', { text: 'hi' }))
      expect(taken).toBe(1)
      expect(answer).toMatchObject({
        status: 200,
        type: 'text/event-stream',
        primed: false,
        body: [{ id: 1, result: { content: [{ type: 'text', text: 'HI' }] } }],
      })
    } finally {
      await mcp.close()
      await new Promise((resolve) => http.close(resolve))
    }
  })
})
