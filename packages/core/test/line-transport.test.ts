import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { LineTransport } from '../src/stdio.js'

function setup(maxLineBytes?: number) {
  const input = new PassThrough()
  const output = new PassThrough()
  const written: unknown[] = []
  output.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) written.push(JSON.parse(line))
  })
  const received: unknown[] = []
  let ended = 0
  const transport = new LineTransport({
    input,
    output,
    ...(maxLineBytes ? { maxLineBytes } : {}),
    onEnd: () => ended++,
  })
  transport.onmessage = (message) => received.push(message)
  return { input, output, written, received, transport, ended: () => ended }
}

const flush = () => new Promise((resolve) => setImmediate(resolve))

describe('LineTransport', () => {
  it('delivers messages split across chunks and joined in one chunk', async () => {
    const { input, received, transport } = setup()
    await transport.start()
    input.write('{"jsonrpc":"2.0","id":1,"me')
    input.write('thod":"ping"}\n{"jsonrpc":"2.0","method":"notifications/initialized"}\r\n\n')
    await flush()
    expect(received).toEqual([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
    ])
  })

  it.each([
    ['not json', { id: null, code: -32700 }],
    ['{"id":7,"method":"ping"}', { id: 7, code: -32600 }],
    ['[{"jsonrpc":"2.0","id":1,"method":"ping"}]', { id: null, code: -32600 }],
    ['{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}', { id: null, code: -32600 }],
    ['{"jsonrpc":"2.0","id":3,"method":"ping","params":"x"}', { id: 3, code: -32600 }],
    ['42', { id: null, code: -32600 }],
    [
      '{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{"progressToken":{}}}}',
      { id: 4, code: -32602 },
    ],
    ['{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":5}}', { id: 5, code: -32602 }],
    [
      '{"jsonrpc":"2.0","id":"s","method":"ping","params":{"_meta":{"progressToken":1.5}}}',
      { id: 's', code: -32602 },
    ],
    ['{"jsonrpc":"2.0","id":6,"method":"ping","__proto__":{"method":"tools/call"}}', { id: 6, code: -32600 }],
  ])('answers %s with a JSON-RPC error and keeps reading', async (line, expected) => {
    const { input, written, received, transport } = setup()
    await transport.start()
    input.write(`${line}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n`)
    await flush()
    expect(written).toEqual([
      { jsonrpc: '2.0', id: expected.id, error: { code: expected.code, message: expect.any(String) } },
    ])
    expect(received).toEqual([{ jsonrpc: '2.0', id: 2, method: 'ping' }])
  })

  it('refuses an oversized line and resynchronises at the next newline', async () => {
    const { input, written, received, transport } = setup(64)
    await transport.start()
    input.write(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'x'.repeat(200)}`)
    input.write('"}}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    await flush()
    expect(written).toEqual([
      {
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: expect.stringContaining('larger than 64 bytes') },
      },
    ])
    expect(received).toEqual([{ jsonrpc: '2.0', id: 2, method: 'ping' }])
  })

  it('reports the end of input once and closes', async () => {
    const { input, transport, ended } = setup()
    let closed = 0
    transport.onclose = () => closed++
    await transport.start()
    input.end()
    await flush()
    expect(ended()).toBe(1)
    expect(closed).toBe(1)
  })
})
