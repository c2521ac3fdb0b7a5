import { request as httpRequest } from 'node:http'
import { describe, expect, it } from 'vitest'
import { defineTool } from '../src/index.js'
import {
  askingFixture,
  CAPABILITIES,
  envelopeOf,
  type HttpServer,
  httpPair,
  INFO,
  LEVEL,
  normalized,
  VERSION,
  withChanges,
} from './fast-path-harness.js'

// Core's fast path for 2026-07-28 tool calls over Streamable HTTP (http/fast-call.ts) against the
// SDK's per-request handler: every POST below is sent to a server with the fast path and to one
// without (KEEL_FAST_PATH=0), and the status, the content type and the answer must be the same.

const envelope = envelopeOf('http-fast-path-test')

const whoAsks = defineTool({
  name: 'who_asks',
  title: 'Who asks',
  description: 'Names the client that called.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: (_args, { client }) => ({
    text: `asked by ${client.info?.name ?? 'nobody'} ${client.info?.version ?? ''}`,
  }),
})

const spec = askingFixture(whoAsks)

type Server = HttpServer

/**
 * Sends each POST of `script` to both servers in turn: their answers, normalized, and how many
 * calls the first one's fast path served for each.
 */
async function playBoth(
  fast: Server,
  sdk: Server,
  script: Array<{ headers: Record<string, string>; body: string }>,
) {
  const answers = { fast: [] as Answer[], sdk: [] as Answer[] }
  const served: number[] = []
  for (const step of script) {
    const before = fast.http.fastPathServed
    answers.fast.push(normalized(await post(fast.http.url, step.headers, step.body)))
    served.push(fast.http.fastPathServed - before)
    answers.sdk.push(normalized(await post(sdk.http.url, step.headers, step.body)))
  }
  return { answers, served }
}

interface Answer {
  status: number
  type: string | undefined
  body: unknown
}

function post(url: string, headers: Record<string, string>, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        const type = response.headers['content-type']
        let parsed: unknown = text
        // An SSE answer: its message frames, in order.
        if (type?.startsWith('text/event-stream')) {
          parsed = text
            .split('\n\n')
            .filter((frame) => frame.startsWith('event: message'))
            .map((frame) => JSON.parse(frame.slice(frame.indexOf('data: ') + 6)))
        } else if (text) parsed = JSON.parse(text)
        resolve({ status: response.statusCode ?? 0, type, body: parsed })
      })
    })
    request.on('error', reject)
    request.end(body)
  })
}

const headersFor = (name: string | undefined, extra: Record<string, string | undefined> = {}) => {
  const headers: Record<string, string | undefined> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/call',
    ...(name !== undefined ? { 'mcp-name': name } : {}),
    ...extra,
  }
  for (const key of Object.keys(headers)) if (headers[key] === undefined) delete headers[key]
  return headers as Record<string, string>
}

const call = (
  id: number,
  name: string,
  args: unknown = {},
  meta: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: {
      name,
      ...(args !== undefined ? { arguments: args } : {}),
      _meta: withChanges(envelope, meta),
      ...extra,
    },
  })

// Each step: headers and body of one POST.
const script: Array<{ headers: Record<string, string>; body: string }> = [
  { headers: headersFor('echo'), body: call(1, 'echo', { message: 'hi', times: 2 }) },
  { headers: headersFor('echo'), body: call(2, 'echo', { message: 5 }) },
  { headers: headersFor('no_such_tool'), body: call(3, 'no_such_tool') },
  { headers: headersFor('fail'), body: call(4, 'fail', { how: 'tool_error' }) },
  { headers: headersFor('fail'), body: call(5, 'fail', { how: 'crash' }) },
  { headers: headersFor('fail'), body: call(6, 'fail', { how: 'secret' }) },
  { headers: headersFor('fail'), body: call(7, 'fail', { how: 'bad_output' }) },
  { headers: headersFor('get_picture'), body: call(8, 'get_picture') },
  { headers: headersFor('hang'), body: call(9, 'hang') },
  { headers: headersFor('increment'), body: call(10, 'increment') },
  { headers: headersFor('ask_user'), body: call(11, 'ask_user') },
  { headers: headersFor('ask_user'), body: call(12, 'ask_user', {}, { [CAPABILITIES]: {} }) },
  { headers: headersFor('who_asks'), body: call(13, 'who_asks') },
  { headers: headersFor('who_asks'), body: call(14, 'who_asks', {}, { [INFO]: undefined }) },
  {
    headers: headersFor('echo'),
    body: call(
      15,
      'echo',
      { message: 'x' },
      { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    ),
  },
  // Progress and log messages: the answer becomes an SSE stream at the first notification.
  { headers: headersFor('slow'), body: call(16, 'slow', { steps: 2, step_ms: 1 }, { progressToken: 'p16' }) },
  { headers: headersFor('slow'), body: call(17, 'slow', { steps: 1, step_ms: 1 }, { [LEVEL]: 'info' }) },
  { headers: headersFor('slow'), body: call(18, 'slow', { steps: 1, step_ms: 1 }) },
  // Left to the SDK: a retry, headers missing or disagreeing, another revision, a bad envelope or
  // content type, other methods, a 2025-era request.
  {
    headers: headersFor('ask_user'),
    body: call(19, 'ask_user', {}, {}, { inputResponses: { keel_elicit_0: { action: 'decline' } } }),
  },
  { headers: headersFor('ask_user'), body: call(20, 'ask_user', {}, {}, { requestState: 'forged' }) },
  { headers: headersFor(undefined), body: call(21, 'echo', { message: 'x' }) },
  { headers: headersFor('other'), body: call(22, 'echo', { message: 'x' }) },
  { headers: headersFor('echo', { 'mcp-method': undefined }), body: call(23, 'echo', { message: 'x' }) },
  { headers: headersFor('echo', { 'mcp-method': 'tools/list' }), body: call(24, 'echo', { message: 'x' }) },
  {
    headers: headersFor('echo', { 'mcp-protocol-version': undefined }),
    body: call(25, 'echo', { message: 'x' }),
  },
  {
    headers: headersFor('echo', { 'mcp-protocol-version': '2025-06-18' }),
    body: call(26, 'echo', { message: 'x' }),
  },
  { headers: headersFor('echo', { 'mcp-name': ' echo' }), body: call(27, 'echo', { message: 'x' }) },
  {
    headers: headersFor('echo', { 'mcp-protocol-version': '2099-01-01' }),
    body: call(28, 'echo', { message: 'x' }, { [VERSION]: '2099-01-01' }),
  },
  { headers: headersFor('echo'), body: call(29, 'echo', { message: 'x' }, { [CAPABILITIES]: undefined }) },
  { headers: headersFor('echo'), body: call(30, 'echo', { message: 'x' }, { [INFO]: { name: 5 } }) },
  { headers: headersFor('echo', { 'content-type': 'text/plain' }), body: call(31, 'echo', { message: 'x' }) },
  {
    headers: headersFor('echo'),
    body: call(32, 'echo', { message: 'x' }, { 'io.modelcontextprotocol/related-task': { taskId: 5 } }),
  },
  {
    headers: headersFor('echo'),
    body: `{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x","__proto__":{"times":3}},"_meta":${JSON.stringify(envelope)}}}`,
  },
  {
    headers: headersFor(undefined, { 'mcp-method': 'tools/list' }),
    body: JSON.stringify({ jsonrpc: '2.0', id: 34, method: 'tools/list', params: { _meta: envelope } }),
  },
  {
    headers: headersFor('echo', { 'mcp-protocol-version': '2025-06-18' }),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 35,
      method: 'tools/call',
      params: { name: 'echo', arguments: {} },
    }),
  },
  { headers: headersFor('echo'), body: call(36, 'echo', [], {}) },
  { headers: headersFor('echo'), body: call(37, 'echo', { message: 'é ✓ \u2028 "quoted"' }) },
]

describe('Streamable HTTP fast path, 2026-07-28 tool calls', () => {
  const pair = httpPair(spec)

  it('answers every POST of the script as the SDK does', async () => {
    const { answers, served } = await playBoth(pair.fast, pair.sdk, script)
    expect(answers.fast).toEqual(answers.sdk)
    expect(pair.sdk.http.fastPathServed).toBe(0)
    // Served here: the calls 1–18 (16 and 17 answered over SSE: progress, log messages), 37, and
    // 27, whose header's surrounding whitespace Node drops as the Fetch API does, whatever their
    // answer; the SDK: everything else.
    const plain = new Set([26, 36])
    expect(served).toEqual(script.map((_, index) => (index < 18 || plain.has(index) ? 1 : 0)))
    // What the script exercises, read off the answers.
    const body = (index: number) =>
      answers.fast[index]?.body as { result?: Record<string, unknown>; error?: { code: number } }
    expect(answers.fast[0]).toMatchObject({ status: 200, type: 'application/json' })
    expect(body(0).result).toMatchObject({ resultType: 'complete', structuredContent: { echoed: 'hi hi' } })
    expect(body(10).result).toMatchObject({ resultType: 'input_required', requestState: 'STATE' })
    expect(answers.fast[11]).toMatchObject({ status: 400, body: { error: { code: -32021 } } })
    expect(body(12).result).toMatchObject({ content: [{ text: 'asked by http-fast-path-test 1.0.0' }] })
    expect(answers.fast[15]?.type).toBe('text/event-stream')
    expect(answers.fast[20]?.status).toBe(400)
  })

  it('completes an elicitation round: the question here, the retry through the SDK', async () => {
    const asked = (await post(pair.fast.http.url, headersFor('ask_user'), call(40, 'ask_user'))).body as {
      result: { inputRequests: Record<string, unknown>; requestState: string }
    }
    const [key] = Object.keys(asked.result.inputRequests)
    const answered = await post(
      pair.fast.http.url,
      headersFor('ask_user'),
      call(
        41,
        'ask_user',
        {},
        {},
        {
          inputResponses: { [key as string]: { action: 'accept', content: { name: 'Ada' } } },
          requestState: asked.result.requestState,
        },
      ),
    )
    expect(answered.body).toMatchObject({ result: { content: [{ type: 'text', text: 'accept: Ada' }] } })
  })

  it('stops a call whose client hangs up', async () => {
    const deps = pair.fast.runtime.deps
    const before = deps.seenSignals.length
    const request = httpRequest(pair.fast.http.url, { method: 'POST', headers: headersFor('slow') })
    request.on('error', () => {})
    request.end(call(42, 'slow', { steps: 100, step_ms: 50 }))
    for (let tries = 0; tries < 200 && deps.seenSignals.length === before; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const signal = deps.seenSignals[before]
    expect(signal?.aborted).toBe(false)
    const aborted = new Promise((resolve) => signal?.addEventListener('abort', resolve, { once: true }))
    request.destroy()
    await aborted
    expect(signal?.aborted).toBe(true)
    const after = await post(
      pair.fast.http.url,
      headersFor('echo'),
      call(43, 'echo', { message: 'still here' }),
    )
    expect(after.body).toMatchObject({ result: { structuredContent: { echoed: 'still here' } } })
  })
})

describe('Streamable HTTP fast path, 2025-era tool calls with --stateless', () => {
  const pair = httpPair(spec, ['--stateless'])

  const legacyHeaders = (extra: Record<string, string | undefined> = {}) =>
    withChanges(
      {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
        ...extra,
      },
      {},
    ) as Record<string, string>
  const legacyCall = (id: number, name: string, args: unknown = {}, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra } })

  const script: Array<{ headers: Record<string, string>; body: string; served: 0 | 1 }> = [
    { headers: legacyHeaders(), body: legacyCall(1, 'echo', { message: 'hi', times: 2 }), served: 1 },
    { headers: legacyHeaders(), body: legacyCall(2, 'echo', { message: 5 }), served: 1 },
    { headers: legacyHeaders(), body: legacyCall(3, 'no_such_tool'), served: 1 },
    { headers: legacyHeaders(), body: legacyCall(4, 'fail', { how: 'crash' }), served: 1 },
    { headers: legacyHeaders(), body: legacyCall(5, 'fail', { how: 'bad_output' }), served: 1 },
    { headers: legacyHeaders(), body: legacyCall(6, 'get_picture'), served: 1 },
    { headers: legacyHeaders(), body: legacyCall(7, 'hang'), served: 1 },
    // Warnings go to a 2025 client unasked; progress with a token.
    { headers: legacyHeaders(), body: legacyCall(8, 'slow', { steps: 2, step_ms: 1 }), served: 1 },
    {
      headers: legacyHeaders(),
      body: legacyCall(9, 'slow', { steps: 2, step_ms: 1 }, { _meta: { progressToken: 'p9' } }),
      served: 1,
    },
    // No capabilities on a stateless 2025 request: asking the client is refused.
    { headers: legacyHeaders(), body: legacyCall(10, 'ask_user'), served: 1 },
    {
      headers: legacyHeaders({ 'mcp-protocol-version': undefined }),
      body: legacyCall(11, 'echo'),
      served: 1,
    },
    {
      headers: legacyHeaders(),
      body: legacyCall(
        12,
        'echo',
        { message: 'x' },
        { _meta: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } },
      ),
      served: 1,
    },
    // Left to the SDK.
    { headers: legacyHeaders({ accept: 'application/json' }), body: legacyCall(20, 'echo'), served: 0 },
    { headers: legacyHeaders({ 'content-type': 'text/plain' }), body: legacyCall(21, 'echo'), served: 0 },
    {
      headers: legacyHeaders({ 'mcp-protocol-version': '1999-01-01' }),
      body: legacyCall(22, 'echo'),
      served: 0,
    },
    {
      headers: legacyHeaders({ 'mcp-protocol-version': '2026-07-28' }),
      body: legacyCall(23, 'echo'),
      served: 0,
    },
    { headers: legacyHeaders({ 'mcp-method': 'tools/list' }), body: legacyCall(24, 'echo'), served: 0 },
    { headers: legacyHeaders(), body: legacyCall(25, 'echo', {}, { task: {} }), served: 0 },
    {
      headers: legacyHeaders(),
      body: legacyCall(26, 'echo', {}, { _meta: { 'io.modelcontextprotocol/logLevel': 'debug' } }),
      served: 0,
    },
    { headers: legacyHeaders(), body: `[${legacyCall(27, 'echo')}]`, served: 0 },
    {
      headers: legacyHeaders(),
      body: JSON.stringify({ jsonrpc: '2.0', id: 28, method: 'tools/list' }),
      served: 0,
    },
    {
      headers: legacyHeaders(),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 29,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
      served: 0,
    },
    { headers: legacyHeaders(), body: legacyCall(30, 'echo', []), served: 0 },
  ]

  it('answers every POST of the script as the SDK does', async () => {
    const { answers, served } = await playBoth(pair.fast, pair.sdk, script)
    expect(answers.fast).toEqual(answers.sdk)
    expect(served).toEqual(script.map((step) => step.served))
    expect(answers.fast[0]).toMatchObject({
      status: 200,
      type: 'text/event-stream',
      body: [{ result: { structuredContent: { echoed: 'hi hi' } } }],
    })
    const progressed = answers.fast[8]?.body as Array<{ method?: string }>
    expect(progressed.filter((message) => message.method === 'notifications/progress')).toHaveLength(2)
  })
})
