import { afterEach, describe, expect, it } from 'vitest'
import {
  answersOfChunk,
  type Message,
  playScript,
  type ScriptStep,
  shutdownDuring,
  stdioConnection,
} from './fast-path-harness.js'
import { fixture } from './fixture.js'

// Core's stdio fast path (fast-path.ts) against the SDK's own handling of the same lines: every
// request below is answered on a server with the fast path and on one without, and the answers
// (and the notifications in between) must be the same. The 2026-07-28 generation's own script is
// fast-path-modern.test.ts.

const open: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of open.splice(0)) await close()
})

/** A 2025-era stdio connection to the fixture, initialized and warm. */
async function serve(fastPath: boolean) {
  const server = await stdioConnection(fixture, { fastPath })
  open.push(server.close)
  await server.request(0, 'initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'fast-path-test', version: '1.0.0' },
  })
  server.write('{"jsonrpc":"2.0","method":"notifications/initialized"}')
  await server.request('warm', 'ping')
  return server
}

const call = (name: string, args?: unknown, extra: Record<string, unknown> = {}) => ({
  name,
  ...(args !== undefined ? { arguments: args } : {}),
  ...extra,
})

// Each entry: [id, method, params] or a raw line with the id it is answered under.
const script: ScriptStep[] = [
  [1, 'tools/call', call('echo', { message: 'hi', times: 2 })],
  [2, 'tools/call', call('echo')],
  [3, 'tools/call', call('echo', { message: 5 })],
  [4, 'tools/call', call('echo', { message: 'x', times: 9 })],
  [5, 'tools/call', call('no_such_tool', {})],
  [6, 'tools/call', { name: 5 }],
  [7, 'tools/call', call('echo', [])],
  [8, 'tools/call', call('echo', null)],
  [9, 'tools/call', call('echo', { message: 'x' }, { extra: true })],
  [10, 'tools/call', call('echo', { message: 'x' }, { _meta: { progressToken: {} } })],
  [11, 'tools/call', call('echo', { message: 'x' }, { _meta: { other: 1 } })],
  ['twelve', 'tools/call', call('increment', {})],
  [13, 'tools/call', call('fail', { how: 'tool_error' })],
  [14, 'tools/call', call('fail', { how: 'crash' })],
  [15, 'tools/call', call('fail', { how: 'secret' })],
  [16, 'tools/call', call('fail', { how: 'mapped' })],
  [17, 'tools/call', call('fail', { how: 'bad_output' })],
  [18, 'tools/call', call('fail', { how: 'errno' })],
  [19, 'tools/call', call('get_picture', {})],
  [20, 'tools/call', call('slow', { steps: 2, step_ms: 1 }, { _meta: { progressToken: 'p-20' } })],
  [21, 'tools/call', call('slow', { steps: 2, step_ms: 1 }, { _meta: { progressToken: 21 } })],
  [22, 'tools/call', call('hang', {})],
  [23, 'ping'],
  [24, 'ping', {}],
  [25, 'ping', { _meta: { progressToken: 1 } }],
  [26, 'ping', { unexpected: 1 }],
  [27, 'tools/list'],
  [28, 'tools/call'],
  [29, 'tools/call', 'not an object'],
  { line: '{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"echo"},"__proto__":{}}', id: 30 },
  { line: '{"jsonrpc":"2.0","id":31.5,"method":"ping"}', id: null },
  { line: '{"jsonrpc":"1.0","id":32,"method":"ping"}', id: 32 },
  {
    line: '{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x","__proto__":{"times":3}}}}',
    id: 33,
  },
  [34, 'logging/setLevel', { level: 'debug' }],
  [35, 'tools/call', call('slow', { steps: 1, step_ms: 1 })],
  [36, 'tools/call', call('echo', { message: 'é ✓ \u2028 "quoted"' })],
  [37, 'resources/read', { uri: 'fixture://status' }],
  [38, 'no/such/method'],
  [39, 'logging/setLevel', { level: 'loud' }],
  [40, 'logging/setLevel', { level: 'error' }],
  [41, 'tools/call', call('slow', { steps: 1, step_ms: 1 })],
  [42, 'ping', { progressToken: 1 }],
  [43, 'tools/list', {}],
  [44, 'tools/list', { cursor: 'x' }],
  [45, 'tools/list', 'nope'],
  // `_meta` keys the SDK passes through (W3C trace context, a vendor's) and reserved ones it checks.
  [
    46,
    'tools/call',
    call(
      'slow',
      { steps: 1, step_ms: 1 },
      {
        _meta: {
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
          tracestate: 'k=v',
          progressToken: 46,
        },
      },
    ),
  ],
  [
    47,
    'tools/call',
    call('echo', { message: 'x' }, { _meta: { 'example.com/vendor': { any: [1, 'two'] } } }),
  ],
  [
    48,
    'tools/call',
    call('echo', { message: 'x' }, { _meta: { 'io.modelcontextprotocol/related-task': { taskId: 5 } } }),
  ],
  [
    49,
    'tools/call',
    call('echo', { message: 'x' }, { _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't' } } }),
  ],
  [
    50,
    'tools/call',
    call('echo', { message: 'x' }, { _meta: { 'io.modelcontextprotocol/logLevel': 'debug' } }),
  ],
  {
    line: '{"jsonrpc":"2.0","id":51,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"},"_meta":{"__proto__":{"progressToken":{}}}}}',
    id: 51,
  },
]

async function transcript(fastPath: boolean) {
  const server = await serve(fastPath)
  return { answers: await playScript(server, script), server }
}

describe('stdio fast path', () => {
  it('answers every request of the script as the SDK does, byte for byte', async () => {
    const fast = await transcript(true)
    const sdk = await transcript(false)
    expect(fast.answers).toEqual(sdk.answers)
    expect(JSON.stringify(fast.answers)).toBe(JSON.stringify(sdk.answers))
    // The script reaches the fast path (and the SDK's way for everything it leaves alone).
    expect(fast.server.served.fastPathServed).toBeGreaterThanOrEqual(20)
    expect(sdk.server.served.fastPathServed).toBe(0)
  })

  it('answers calls written in one chunk as the SDK does, a level set just before them included', async () => {
    const lines = [
      JSON.stringify({ jsonrpc: '2.0', id: 'level', method: 'logging/setLevel', params: { level: 'info' } }),
      ...Array.from({ length: 40 }, (_, index) =>
        JSON.stringify({
          jsonrpc: '2.0',
          id: index,
          method: 'tools/call',
          params:
            index % 10 === 0
              ? call('slow', { steps: 1, step_ms: 1 })
              : call('echo', { message: `m${index}` }),
        }),
      ),
      JSON.stringify({ jsonrpc: '2.0', id: 'last', method: 'ping' }),
    ].join('\n')
    const ids = Array.from({ length: 40 }, (_, id) => id)
    const answersOf = async (fastPath: boolean) => answersOfChunk(await serve(fastPath), lines, 'last', ids)
    const fast = await answersOf(true)
    const sdk = await answersOf(false)
    expect(fast.out).toEqual(sdk.out)
    // Both forward the info line of each slow call: the level set first counts on either path.
    expect(fast.out.filter((message) => message.method === 'notifications/message')).toHaveLength(8)
    expect(fast.served).toBeGreaterThan(40)
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
        params: call('slow', { steps: 100, step_ms: 50 }),
      }),
    )
    await server.next((message) => message.method === 'notifications/message')
    const signal = deps.seenSignals[before]
    expect(signal?.aborted).toBe(false)
    const aborted = new Promise((resolve) => signal?.addEventListener('abort', resolve, { once: true }))
    server.write(
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long","reason":"enough"}}',
    )
    await aborted
    expect(signal?.reason).toBe('enough')
    await server.request('after', 'ping')
    // The call stopped and was never answered; the server keeps serving.
    expect(server.seen.slice(from).some((message) => message.id === 'long')).toBe(false)
    const echoed = await server.request('again', 'tools/call', call('echo', { message: 'still here' }))
    expect(echoed.at(-1)?.result).toMatchObject({ structuredContent: { echoed: 'still here' } })
  })

  it('ends a running call on shutdown as the SDK does', async () => {
    const aborted: boolean[] = []
    const line = JSON.stringify({
      jsonrpc: '2.0',
      id: 'running',
      method: 'tools/call',
      params: call('slow', { steps: 100, step_ms: 50 }),
    })
    const endOf = async (fastPath: boolean) => {
      const ended = await shutdownDuring(await serve(fastPath), line)
      aborted.push(ended.aborted)
      return ended.out
    }
    const fast = await endOf(true)
    const sdk = await endOf(false)
    expect(fast).toEqual(sdk)
    // Either way the call's signal is aborted and the closing connection carries no answer to it.
    expect(fast.some((message: Message) => message.id === 'running')).toBe(false)
    expect(aborted).toEqual([true, true])
  })
})
