import { PassThrough } from 'node:stream'
import { afterEach, describe, expect, it } from 'vitest'
import { prepare } from '../src/run.js'
import { serveStdioRuntime } from '../src/serve-stdio.js'
import {
  answersOfChunk,
  askingFixture,
  CAPABILITIES,
  envelopeOf,
  INFO,
  LEVEL,
  type Message,
  playScript,
  type ScriptStep,
  shutdownDuring,
  stdioConnection,
  VERSION,
  withChanges,
} from './fast-path-harness.js'

// Core's stdio fast path on a 2026-07-28 connection (fast-path.ts) against the SDK's own handling
// of the same lines: every request below is answered on a server with the fast path and on one
// without, and the answers (and the notifications in between) must be the same.

const envelope = envelopeOf('fast-path-modern-test')
const spec = askingFixture()

const open: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of open.splice(0)) await close()
})

/** A 2026-07-28 stdio connection to the fixture, pinned by its first call (after a discovery). */
async function serve(fastPath: boolean, opening: 'discover' | 'call' = 'discover') {
  const server = await stdioConnection(spec, { fastPath })
  open.push(server.close)
  if (opening === 'discover') await server.request(0, 'server/discover', { _meta: envelope })
  // The connection's first request after the discovery: the SDK pins its instance on it.
  await server.request('warm', 'tools/call', {
    name: 'echo',
    arguments: { message: 'warm' },
    _meta: envelope,
  })
  return server
}

/** A call's params with the envelope (and whatever else `meta` adds to or takes from `_meta`). */
const call = (
  name: string,
  args?: unknown,
  meta: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) => ({
  name,
  ...(args !== undefined ? { arguments: args } : {}),
  _meta: withChanges(envelope, meta),
  ...extra,
})

// Each entry: [id, method, params] or a raw line with the id it is answered under.
const script: ScriptStep[] = [
  [1, 'tools/call', call('echo', { message: 'hi', times: 2 })],
  [2, 'tools/call', call('echo')],
  [3, 'tools/call', call('echo', { message: 5 })],
  [4, 'tools/call', call('echo', { message: 'x', times: 9 })],
  [5, 'tools/call', call('no_such_tool', {})],
  [6, 'tools/call', { name: 5, _meta: envelope }],
  [7, 'tools/call', call('echo', [])],
  [8, 'tools/call', call('echo', null)],
  [9, 'tools/call', call('echo', { message: 'x' }, {}, { extra: true })],
  [10, 'tools/call', call('echo', { message: 'x' }, { progressToken: {} })],
  [11, 'tools/call', call('echo', { message: 'x' }, { other: 1 })],
  ['twelve', 'tools/call', call('increment', {})],
  [13, 'tools/call', call('fail', { how: 'tool_error' })],
  [14, 'tools/call', call('fail', { how: 'crash' })],
  [15, 'tools/call', call('fail', { how: 'secret' })],
  [16, 'tools/call', call('fail', { how: 'mapped' })],
  [17, 'tools/call', call('fail', { how: 'bad_output' })],
  [18, 'tools/call', call('fail', { how: 'errno' })],
  [19, 'tools/call', call('get_picture', {})],
  [20, 'tools/call', call('slow', { steps: 2, step_ms: 1 }, { progressToken: 'p-20' })],
  [21, 'tools/call', call('slow', { steps: 2, step_ms: 1 }, { progressToken: 21, [LEVEL]: 'debug' })],
  [22, 'tools/call', call('hang', {})],
  [23, 'tools/call', call('slow', { steps: 1, step_ms: 1 }, { [LEVEL]: 'warning' })],
  [24, 'tools/call', call('slow', { steps: 1, step_ms: 1 }, { [LEVEL]: 'loud' })],
  // The envelope: missing, another revision, a 2025 one, without capabilities, malformed parts.
  [25, 'tools/call', { name: 'echo', arguments: { message: 'x' } }],
  [26, 'tools/call', call('echo', { message: 'x' }, { [VERSION]: '2099-01-01' })],
  [27, 'tools/call', call('echo', { message: 'x' }, { [VERSION]: '2025-06-18' })],
  [28, 'tools/call', call('echo', { message: 'x' }, { [CAPABILITIES]: undefined })],
  [29, 'tools/call', call('echo', { message: 'x' }, { [CAPABILITIES]: 5 })],
  [30, 'tools/call', call('echo', { message: 'x' }, { [INFO]: { name: 5 } })],
  [31, 'tools/call', call('echo', { message: 'x' }, { [INFO]: undefined })],
  [32, 'tools/call', call('echo', { message: 'x' }, { [CAPABILITIES]: { sampling: {}, elicitation: {} } })],
  [33, 'tools/call', call('echo', { message: 'x' }, { [VERSION]: 7 })],
  [34, 'tools/call', call('echo', { message: 'x' }, { [CAPABILITIES]: { elicitation: 'yes' } })],
  [
    35,
    'tools/call',
    call(
      'echo',
      { message: 'x' },
      { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    ),
  ],
  [
    '35b',
    'tools/call',
    call(
      'slow',
      { steps: 2, step_ms: 1 },
      {
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        progressToken: 'p35',
        'example.com/vendor': [1],
      },
    ),
  ],
  [
    '35c',
    'tools/call',
    call('echo', { message: 'x' }, { 'io.modelcontextprotocol/related-task': { taskId: 5 } }),
  ],
  ['35d', 'tools/call', call('echo', { message: 'x' }, { 'io.modelcontextprotocol/other': 1 })],
  // Asking the client: an input_required answer where the capability is declared, -32021 where not.
  [36, 'tools/call', call('ask_user', {})],
  [37, 'tools/call', call('ask_model', {})],
  [38, 'tools/call', call('ask_user', {}, { [CAPABILITIES]: {} })],
  [39, 'tools/call', call('ask_user', {}, {}, { inputResponses: { keel_elicit_0: { action: 'decline' } } })],
  [40, 'tools/call', call('ask_user', {}, {}, { requestState: 'forged' })],
  [41, 'tools/list', { _meta: envelope }],
  [42, 'tools/call'],
  [43, 'tools/call', 'not an object'],
  {
    line: `{"jsonrpc":"2.0","id":44,"method":"tools/call","params":{"name":"echo","_meta":${JSON.stringify(envelope)}},"__proto__":{}}`,
    id: 44,
  },
  {
    line: `{"jsonrpc":"2.0","id":45,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x","__proto__":{"times":3}},"_meta":${JSON.stringify(envelope)}}}`,
    id: 45,
  },
  {
    line: `{"jsonrpc":"2.0","id":46,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"},"_meta":{"__proto__":{},${JSON.stringify(envelope).slice(1)}}}`,
    id: 46,
  },
  [47, 'tools/call', call('echo', { message: 'é ✓ \u2028 "quoted"' })],
  [48, 'resources/read', { uri: 'fixture://status', _meta: envelope }],
  [49, 'no/such/method', { _meta: envelope }],
  [
    50,
    'initialize',
    { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'late', version: '1' } },
  ],
  [51, 'tools/call', call('echo', { message: 'after all that' })],
]

async function transcript(fastPath: boolean) {
  const server = await serve(fastPath)
  return { answers: await playScript(server, script), server }
}

describe('stdio fast path, 2026-07-28', () => {
  it('answers every request of the script as the SDK does', async () => {
    const fast = await transcript(true)
    const sdk = await transcript(false)
    expect(fast.answers).toEqual(sdk.answers)
    // The script reaches the fast path (and the SDK's way for everything it leaves alone).
    expect(fast.server.served.fastPathServed).toBeGreaterThanOrEqual(20)
    expect(sdk.server.served.fastPathServed).toBe(0)
    // What the script exercises, read off the answers.
    const answerTo = (id: unknown) =>
      fast.answers.find((message: Message) => message.id === id && !message.method)
    expect(answerTo(1).result).toMatchObject({
      resultType: 'complete',
      structuredContent: { echoed: 'hi hi' },
    })
    expect(answerTo(1).result._meta['io.modelcontextprotocol/serverInfo']).toMatchObject({
      name: 'keel-fixture',
    })
    expect(answerTo(36).result).toMatchObject({ resultType: 'input_required', requestState: 'STATE' })
    expect(answerTo(38).error).toMatchObject({ code: -32021 })
    expect(answerTo(25).error).toMatchObject({ code: -32602 })
    expect(answerTo(51).result).toMatchObject({ structuredContent: { echoed: 'after all that' } })
  })

  it('answers byte for byte what the SDK writes for a plain call', async () => {
    const lines = async (fastPath: boolean) => {
      const server = await serve(fastPath)
      const raw: string[] = []
      const from = server.seen.length
      await server.request('plain', 'tools/call', call('echo', { message: 'bytes', times: 3 }))
      await server.request('picture', 'tools/call', call('get_picture', {}))
      for (const message of server.seen.slice(from)) raw.push(JSON.stringify(message))
      return { raw, served: server.served.fastPathServed }
    }
    const fast = await lines(true)
    const sdk = await lines(false)
    expect(fast.raw).toEqual(sdk.raw)
    expect(fast.served).toBe(2)
  })

  it('answers calls written in one chunk as the SDK does', async () => {
    const lines = [
      ...Array.from({ length: 40 }, (_, index) =>
        JSON.stringify({
          jsonrpc: '2.0',
          id: index,
          method: 'tools/call',
          params:
            index % 10 === 0
              ? call('slow', { steps: 1, step_ms: 1 }, { [LEVEL]: 'info' })
              : call('echo', { message: `m${index}` }),
        }),
      ),
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'last',
        method: 'tools/call',
        params: call('echo', { message: 'last' }),
      }),
    ].join('\n')
    const ids = Array.from({ length: 40 }, (_, id) => id)
    const answersOf = async (fastPath: boolean) => answersOfChunk(await serve(fastPath), lines, 'last', ids)
    const fast = await answersOf(true)
    const sdk = await answersOf(false)
    expect(fast.out).toEqual(sdk.out)
    // Both forward the info and warning lines of each slow call: its envelope opts in at info.
    expect(fast.out.filter((message) => message.method === 'notifications/message')).toHaveLength(8)
    expect(fast.served).toBe(41)
  })

  it('ends a running call on shutdown as the SDK does', async () => {
    const aborted: boolean[] = []
    const line = JSON.stringify({
      jsonrpc: '2.0',
      id: 'running',
      method: 'tools/call',
      params: call('slow', { steps: 100, step_ms: 50 }, { [LEVEL]: 'info' }),
    })
    const endOf = async (fastPath: boolean) => {
      const ended = await shutdownDuring(await serve(fastPath), line)
      aborted.push(ended.aborted)
      return ended.out
    }
    const fast = await endOf(true)
    const sdk = await endOf(false)
    expect(fast).toEqual(sdk)
    expect(fast.some((message: Message) => message.id === 'running')).toBe(false)
    expect(aborted).toEqual([true, true])
  })

  it('completes an elicitation round: the question here, the retry through the SDK', async () => {
    const server = await serve(true)
    const asked = (await server.request('ask', 'tools/call', call('ask_user', {}))).at(-1)?.result as {
      resultType: string
      inputRequests: Record<string, unknown>
      requestState: string
    }
    expect(asked.resultType).toBe('input_required')
    const [key] = Object.keys(asked.inputRequests)
    const answered = await server.request(
      'retry',
      'tools/call',
      call(
        'ask_user',
        {},
        {},
        {
          inputResponses: { [key as string]: { action: 'accept', content: { name: 'Ada' } } },
          requestState: asked.requestState,
        },
      ),
    )
    expect(answered.at(-1)?.result).toMatchObject({ content: [{ type: 'text', text: 'accept: Ada' }] })
  })

  it.each([true, false])('stops a cancelled call and does not answer it (fast path %s)', async (fastPath) => {
    const server = await serve(fastPath)
    const deps = server.runtime.deps
    const before = deps.seenSignals.length
    const from = server.seen.length
    server.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'long',
        method: 'tools/call',
        params: call('slow', { steps: 100, step_ms: 50 }, { progressToken: 'long' }),
      }),
    )
    await server.next((message) => message.method === 'notifications/progress')
    const signal = deps.seenSignals[before]
    expect(signal?.aborted).toBe(false)
    const aborted = new Promise((resolve) => signal?.addEventListener('abort', resolve, { once: true }))
    server.write(
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 'long', reason: 'enough', _meta: envelope },
      }),
    )
    await aborted
    expect(signal?.reason).toBe('enough')
    // The call stopped and was never answered; the server keeps serving.
    const echoed = await server.request('again', 'tools/call', call('echo', { message: 'still here' }))
    expect(server.seen.slice(from).some((message) => message.id === 'long' && !message.method)).toBe(false)
    expect(echoed.at(-1)?.result).toMatchObject({ structuredContent: { echoed: 'still here' } })
  })

  it('serves a connection opened by a call (no discovery) once the SDK has pinned it', async () => {
    const server = await serve(true, 'call')
    // The opening call went to the SDK: it pins the instance on it.
    expect(server.served.fastPathServed).toBe(0)
    await server.request(1, 'tools/call', call('echo', { message: 'one' }))
    expect(server.served.fastPathServed).toBe(1)
  })

  it('leaves the probe to the SDK: a 2025 initialize after discovery is served as 2025', async () => {
    const shutdown = new AbortController()
    const runtime = await prepare(spec, {
      argv: [],
      env: { LOG_LEVEL: 'silent' },
      shutdownSignal: shutdown.signal,
    })
    const input = new PassThrough()
    const output = new PassThrough()
    const lines: Message[] = []
    output.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line))
    })
    const served = serveStdioRuntime(runtime, { input, output, fastPath: true })
    open.push(async () => {
      shutdown.abort()
      await served.close()
    })
    const answer = async (id: number) => {
      for (let tries = 0; tries < 200 && !lines.some((message) => message.id === id); tries++) {
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      return lines.find((message) => message.id === id)
    }
    input.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope } })}\n`,
    )
    expect((await answer(1))?.result).toBeDefined()
    input.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } })}\n`,
    )
    expect((await answer(2))?.result).toMatchObject({ protocolVersion: '2025-06-18' })
    input.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    input.write('{"jsonrpc":"2.0","id":"after","method":"ping"}\n')
    for (let tries = 0; tries < 200 && !lines.some((message) => message.id === 'after'); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const before = served.fastPathServed
    input.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { message: 'old' } } })}\n`,
    )
    const third = await answer(3)
    expect(third?.result).toMatchObject({ structuredContent: { echoed: 'old' } })
    // A 2025 answer: no resultType, no identity stamp.
    expect(third?.result).not.toHaveProperty('resultType')
    expect(served.fastPathServed).toBe(before + 1)
  })
})
