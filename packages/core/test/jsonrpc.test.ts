import { isJSONRPCRequest } from '@modelcontextprotocol/server'
import { describe, expect, it } from 'vitest'
import { checkEnvelope, INVALID_PARAMS, INVALID_REQUEST } from '../src/jsonrpc.js'

// checkEnvelope answers a request the SDK would drop unanswered (its `isJSONRPCRequest` refuses it)
// with its own checks instead of the SDK's zod schema. Its verdicts must be the SDK's: every
// request below, hand-picked and generated, gets the same verdict from both.

/** The verdict the SDK's schema gives a request that passed the envelope's first checks. */
function sdkVerdict(record: Record<string, unknown>): number | undefined {
  if (isJSONRPCRequest(record)) return undefined
  const bare: Record<string, unknown> = { jsonrpc: '2.0', id: record.id, method: record.method }
  if ('params' in record) bare.params = record.params
  return isJSONRPCRequest(bare) ? INVALID_REQUEST : INVALID_PARAMS
}

function ourVerdict(record: Record<string, unknown>): number | undefined {
  const check = checkEnvelope(record)
  return check.ok ? undefined : check.code
}

const metas: unknown[] = [
  undefined,
  {},
  null,
  [],
  'meta',
  7,
  { progressToken: 'p' },
  { progressToken: 3 },
  { progressToken: -3 },
  { progressToken: 1.5 },
  { progressToken: 2 ** 53 },
  { progressToken: 2 ** 53 - 1 },
  { progressToken: null },
  { progressToken: true },
  { progressToken: {} },
  { progressToken: ['p'] },
  { other: 'kept' },
  { 'io.modelcontextprotocol/related-task': { taskId: 't' } },
  { 'io.modelcontextprotocol/related-task': { taskId: 't', more: 1 } },
  { 'io.modelcontextprotocol/related-task': { taskId: 1 } },
  { 'io.modelcontextprotocol/related-task': {} },
  { 'io.modelcontextprotocol/related-task': null },
  { 'io.modelcontextprotocol/related-task': [] },
  { 'io.modelcontextprotocol/related-task': 't' },
  { progressToken: 'p', 'io.modelcontextprotocol/related-task': { taskId: 't' } },
  { progressToken: 1.5, 'io.modelcontextprotocol/related-task': { taskId: 't' } },
  JSON.parse('{"__proto__": {"progressToken": 1.5}}'),
  JSON.parse('{"progressToken": "p", "__proto__": null}'),
]
const extras: Array<Record<string, unknown>> = [
  {},
  { extra: 1 },
  { result: {} },
  { error: { code: 1, message: 'm' } },
  JSON.parse('{"__proto__": {"x": 1}}'),
]
const ids: unknown[] = ['a', 0, 1, 2 ** 53 - 1]

/** Every request built from the parts above: ids × params (with each _meta, or none) × extra members. */
function* requests(): Generator<Record<string, unknown>> {
  for (const id of ids)
    for (const extra of extras) {
      yield { jsonrpc: '2.0', id, method: 'tools/call', ...extra }
      yield { jsonrpc: '2.0', id, method: 'tools/call', params: {}, ...extra }
      for (const meta of metas) {
        const params: Record<string, unknown> = { name: 'x', arguments: { a: 1 } }
        if (meta !== undefined) params._meta = meta
        yield { jsonrpc: '2.0', id, method: 'tools/call', params, ...extra }
        // The same request as a client's JSON would bring it, key order and all.
        yield JSON.parse(JSON.stringify({ ...extra, params, method: 'ping', id, jsonrpc: '2.0' }))
      }
    }
}

describe('checkEnvelope against the SDK’s request schema', () => {
  it('gives every generated request the SDK’s verdict', () => {
    let refused = 0
    let count = 0
    for (const request of requests()) {
      count++
      const expected = sdkVerdict(request)
      if (expected !== undefined) refused++
      expect({ request, verdict: ourVerdict(request) }).toEqual({ request, verdict: expected })
    }
    // Both kinds of refusal and acceptance all occur.
    expect(count).toBeGreaterThan(500)
    expect(refused).toBeGreaterThan(100)
    expect(count - refused).toBeGreaterThan(50)
  })

  it('answers a malformed _meta with -32602 and a stray member with -32600, the _meta first', () => {
    const base = { jsonrpc: '2.0', id: 1, method: 'tools/call' }
    expect(checkEnvelope({ ...base, params: { _meta: { progressToken: 1.5 } } })).toMatchObject({
      ok: false,
      id: 1,
      code: INVALID_PARAMS,
    })
    expect(checkEnvelope({ ...base, stray: true })).toMatchObject({ ok: false, id: 1, code: INVALID_REQUEST })
    expect(checkEnvelope({ ...base, stray: true, params: { _meta: [] } })).toMatchObject({
      code: INVALID_PARAMS,
    })
    expect(checkEnvelope({ ...base, params: { _meta: { progressToken: 'p', custom: [1] } } })).toEqual({
      ok: true,
    })
  })
})
