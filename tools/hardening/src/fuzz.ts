/**
 * Deterministic generator of malformed and hostile JSON-RPC messages. The same seed gives the same
 * messages in the same order, so a failure names its seed and index and can be replayed.
 *
 * Every case says what a correct server does with it: answer an error with a given code (and with
 * `id: null` when the message carries no usable id), answer anything (a valid or borderline
 * request), or stay silent (notifications and responses).
 */

/** What a correct server sends back for one message. */
export type Expected =
  | {
      kind: 'error'
      code: number
      id: string | number | null
      /** Codes also accepted, with the reason (a known gap, stated in docs/security.md). */
      alsoAccepted?: { codes: number[]; reason: string }
    }
  | { kind: 'answer'; id: string | number }
  /** A tool result with `isError: true` and an `invalid_argument:` text (SEP-1303 validation failure). */
  | { kind: 'tool error'; id: string | number }
  | { kind: 'silent' }

export interface FuzzCase {
  /** Position in the generated sequence. */
  index: number
  /** The category the generator drew (for the report and failure messages). */
  category: string
  /** The exact bytes sent (one line; never contains a raw newline). */
  payload: string
  expected: Expected
}

/** A tool call that is valid for the server under test (answered with a result, maybe `isError`). */
export interface ToolCall {
  name: string
  arguments: Record<string, unknown>
}

export interface FuzzOptions {
  seed: number
  count: number
  /** A valid, cheap call of the server under test, mixed in between the hostile messages. */
  cheapCall: ToolCall
  /** Biggest string or nesting the generator makes (bytes); default 1 MiB. */
  maxGiantBytes?: number
}

/** mulberry32: a tiny, fast, seedable PRNG (uniform in [0, 1)). */
export function prng(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export const PARSE_ERROR = -32700
export const INVALID_REQUEST = -32600
export const METHOD_NOT_FOUND = -32601
export const INVALID_PARAMS = -32602

/** Methods every Keel server serves (request methods of the 2025 generation). */
const KNOWN_METHODS = ['ping', 'tools/list', 'resources/list', 'resources/templates/list']

/** Valid JSON values of many types, for wrong-type fields. */
const ODD_VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  1e308,
  -0,
  '',
  ' ',
  'null',
  '\u0000',
  '\ud800',
  '😀'.repeat(3),
  [],
  [1, 2],
  {},
  { a: 1 },
  '__proto__',
  { __proto__: null },
]

type Rng = () => number

const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T
const int = (rng: Rng, min: number, max: number) => min + Math.floor(rng() * (max - min + 1))

function randomText(rng: Rng, length: number): string {
  const alphabet = 'abcXYZ019 _-/.\\"\'{}[]:,\u00e9\u4e2d\u0000\t'
  let text = ''
  for (let index = 0; index < length; index++) text += alphabet[Math.floor(rng() * alphabet.length)]
  return text
}

function nested(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array'
    ? `${'['.repeat(depth)}${']'.repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
}

/** Generates `count` cases from `seed`. Ids are unique per case: `f<seed>-<index>` or an integer. */
export function generate(options: FuzzOptions): FuzzCase[] {
  const rng = prng(options.seed)
  const giant = options.maxGiantBytes ?? 1024 * 1024
  const cases: FuzzCase[] = []
  const categories = categoryTable(options.cheapCall, giant)
  const total = categories.reduce((sum, category) => sum + category.weight, 0)
  for (let index = 0; index < options.count; index++) {
    let roll = rng() * total
    let chosen = categories[0] as Category
    for (const category of categories) {
      roll -= category.weight
      if (roll < 0) {
        chosen = category
        break
      }
    }
    // Half the ids are strings, half integers; integers are unique too (index-based).
    const id: string | number = rng() < 0.5 ? `f${options.seed}-${index}` : 1_000_000 + index
    const made = chosen.make(rng, id, index)
    if (made.payload.includes('\n')) throw new Error(`generator bug: newline in ${chosen.name}`)
    cases.push({ index, category: chosen.name, payload: made.payload, expected: made.expected })
  }
  return cases
}

interface Category {
  name: string
  weight: number
  make(rng: Rng, id: string | number, index: number): { payload: string; expected: Expected }
}

const request = (id: string | number, method: string, params?: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) })

function categoryTable(cheapCall: ToolCall, giant: number): Category[] {
  const errorFor = (id: string | number | null, code: number): Expected => ({ kind: 'error', code, id })
  return [
    {
      name: 'broken JSON',
      weight: 10,
      make(rng, id) {
        const valid = request(id, 'ping')
        const mutations = [
          () => valid.slice(0, int(rng, 1, valid.length - 1)),
          () => `${valid}}`,
          () => valid.replace('"jsonrpc"', 'jsonrpc'),
          () => valid.replace(':', ''),
          () => `{${randomText(rng, int(rng, 1, 40))}`,
          () => randomText(rng, int(rng, 1, 60)).replace(/^[\s\d"[{tfn-]+/, 'x'),
          () => "{'jsonrpc':'2.0','id':1,'method':'ping'}",
          () => `${valid.slice(0, -1)},}`,
          () => `\u0000${valid}`,
          () => '{"jsonrpc":"2.0","id":1,"method":"ping"',
          () => 'NaN',
          () => '{"a":01}',
        ]
        const payload = pick(rng, mutations)()
        // A mutation may still be valid JSON by chance; the generator classifies by parsing.
        return classifyUnknown(payload)
      },
    },
    {
      name: 'not an object',
      weight: 4,
      make(rng) {
        const payload = JSON.stringify(pick(rng, [0, 42, -1.5, 'ping', true, false, null, '']))
        return { payload, expected: errorFor(null, INVALID_REQUEST) }
      },
    },
    {
      name: 'batch',
      weight: 5,
      make(rng, id) {
        const items = [request(id, 'ping'), '1', '{}', request(`${id}-b`, 'tools/list'), '[]']
        const count = int(rng, 0, 4)
        const chosen = Array.from({ length: count }, () => pick(rng, items))
        // 2025-06-18 and later (what these servers negotiate) have no batches: one -32600, id null.
        return { payload: `[${chosen.join(',')}]`, expected: errorFor(null, INVALID_REQUEST) }
      },
    },
    {
      name: 'wrong jsonrpc version',
      weight: 5,
      make(rng, id) {
        const version = pick(rng, ['1.0', '2', 2, 2.0, null, '', '2.0 ', undefined])
        const message: Record<string, unknown> = { id, method: 'ping' }
        if (version !== undefined) message.jsonrpc = version
        return { payload: JSON.stringify(message), expected: errorFor(id, INVALID_REQUEST) }
      },
    },
    {
      name: 'bad method type',
      weight: 5,
      make(rng, id) {
        const method = pick(rng, [1, null, true, [], {}, ''])
        return {
          payload: JSON.stringify({ jsonrpc: '2.0', id, method }),
          expected: errorFor(id, INVALID_REQUEST),
        }
      },
    },
    {
      name: 'odd id',
      weight: 8,
      make(rng) {
        const id = pick(rng, [1.5, -0.25, 2 ** 53, -(2 ** 53), 1e300, true, false, [], [1], {}, { id: 1 }])
        return {
          payload: JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }),
          expected: errorFor(null, INVALID_REQUEST),
        }
      },
    },
    {
      name: 'huge or odd valid id',
      weight: 6,
      make(rng, id, index) {
        // Every id stays unique across the run (the index is in each).
        const odd = pick(rng, [
          Number.MAX_SAFE_INTEGER - index,
          -Number.MAX_SAFE_INTEGER + index,
          -(index + 1),
          `${id}-${'x'.repeat(int(rng, 1, 8192))}`,
          `${id}-\u0000\u2028\u{1f600}"\\`,
          `${id}-${' '.repeat(int(rng, 1, 64))}`,
          ` ${id}`,
        ])
        return { payload: request(odd, 'ping'), expected: { kind: 'answer', id: odd } }
      },
    },
    {
      name: 'params not an object',
      weight: 5,
      make(rng, id) {
        const params = pick(rng, [1, 'x', true, null])
        return {
          payload: JSON.stringify({ jsonrpc: '2.0', id, method: 'ping', params }),
          expected: errorFor(id, INVALID_REQUEST),
        }
      },
    },
    {
      name: 'positional params',
      weight: 3,
      make(rng, id) {
        const params = pick(rng, [[], [1], ['ping'], [{}]])
        return {
          payload: JSON.stringify({ jsonrpc: '2.0', id, method: pick(rng, KNOWN_METHODS), params }),
          expected: errorFor(id, INVALID_PARAMS),
        }
      },
    },
    {
      name: 'unknown method',
      weight: 10,
      make(rng, id) {
        const method = pick(rng, [
          'nope',
          'tools/nope',
          'tools/List',
          'TOOLS/LIST',
          ' ping',
          'ping ',
          '__proto__',
          'constructor',
          'hasOwnProperty',
          'toString',
          'rpc.discover',
          'sampling/createMessage',
          'roots/list',
          'elicitation/create',
          `x/${randomText(rng, int(rng, 1, 200))}`,
        ])
        return { payload: request(id, method, {}), expected: errorFor(id, METHOD_NOT_FOUND) }
      },
    },
    {
      name: 'notification with an id',
      weight: 4,
      make(rng, id) {
        // An id makes it a request, and no server serves notification names as requests.
        const method = pick(rng, [
          'notifications/initialized',
          'notifications/cancelled',
          'notifications/progress',
          'notifications/roots/list_changed',
        ])
        return { payload: request(id, method, {}), expected: errorFor(id, METHOD_NOT_FOUND) }
      },
    },
    {
      name: 'notification',
      weight: 8,
      make(rng) {
        const method = pick(rng, [
          'notifications/initialized',
          'notifications/cancelled',
          'notifications/progress',
          'notifications/roots/list_changed',
          'notifications/nope',
          'nope',
          'tools/list',
          'tools/call',
        ])
        const params = pick(rng, [undefined, {}, { requestId: 'nothing' }, { progressToken: 1, progress: 1 }])
        return {
          payload: JSON.stringify({ jsonrpc: '2.0', method, ...(params ? { params } : {}) }),
          expected: { kind: 'silent' },
        }
      },
    },
    {
      name: 'response from the client',
      weight: 3,
      make(rng, id) {
        const body = pick(rng, [
          { result: {} },
          { error: { code: 1, message: 'x' } },
          { result: { _meta: {} } },
        ])
        return { payload: JSON.stringify({ jsonrpc: '2.0', id, ...body }), expected: { kind: 'silent' } }
      },
    },
    {
      name: 'no method, no result',
      weight: 3,
      make(_rng, id) {
        return { payload: JSON.stringify({ jsonrpc: '2.0', id }), expected: errorFor(id, INVALID_REQUEST) }
      },
    },
    {
      name: 'malformed _meta',
      weight: 5,
      make(rng, id) {
        const meta = pick(rng, [
          5,
          'x',
          [],
          { progressToken: {} },
          { progressToken: [] },
          { progressToken: 1.5 },
          { progressToken: null },
        ])
        const method = pick(rng, ['ping', 'tools/list', 'tools/call'])
        const params = method === 'tools/call' ? { ...cheapCall, _meta: meta } : { _meta: meta }
        return { payload: request(id, method, params), expected: errorFor(id, INVALID_PARAMS) }
      },
    },
    {
      name: 'spec method with wrong param types',
      weight: 4,
      make(rng, id) {
        const [method, params] = pick(rng, [
          ['tools/list', { cursor: pick(rng, [{}, 5, [], true]) }],
          ['resources/list', { cursor: pick(rng, [{}, 5]) }],
          ['resources/read', { uri: pick(rng, [5, null, {}]) }],
          ['resources/read', {}],
          ['logging/setLevel', { level: pick(rng, ['bogus', 5, 'DEBUG']) }],
          ['initialize', pick(rng, [{}, { protocolVersion: 5 }])],
          ['tasks/get', { taskId: pick(rng, [5, {}]) }],
        ] as const)
        return {
          payload: request(id, method, params),
          expected: {
            kind: 'error',
            code: INVALID_PARAMS,
            id,
            alsoAccepted: {
              // -32601 is right where the server lacks the capability (no resources, no tasks).
              codes: [METHOD_NOT_FOUND, -32603],
              reason:
                'the SDK validates the params of the methods it routes and answers -32603 when they fail',
            },
          },
        }
      },
    },
    {
      name: 'tools/call with bad params',
      weight: 8,
      make(rng, id) {
        const params = pick(rng, [
          {},
          {
            name: pick(
              rng,
              ODD_VALUES.filter((value) => typeof value !== 'string'),
            ),
          },
          { name: cheapCall.name, arguments: pick(rng, [1, 'x', [], true]) },
          { name: `${cheapCall.name}_nope` },
          { name: '' },
          { name: 'x'.repeat(int(rng, 65, 4096)) },
          { name: cheapCall.name, arguments: { ...cheapCall.arguments, unexpected: 1, '': [] } },
        ])
        // Extra arguments may be allowed by a tool's schema: then the call is simply answered.
        const strictlyBad = !(
          'arguments' in params &&
          typeof params.arguments === 'object' &&
          !Array.isArray(params.arguments)
        )
        return {
          payload: request(id, 'tools/call', params),
          expected: strictlyBad ? errorFor(id, INVALID_PARAMS) : { kind: 'answer', id },
        }
      },
    },
    {
      name: 'tools/call with wrong argument types',
      weight: 6,
      make(rng, id) {
        const keys = Object.keys(cheapCall.arguments)
        const args: Record<string, unknown> = { ...cheapCall.arguments }
        const value = pick(rng, [{}, [], true, { nested: [1, { a: null }] }])
        if (keys.length) args[pick(rng, keys)] = value
        else args.unexpected = value
        return {
          payload: request(id, 'tools/call', { name: cheapCall.name, arguments: args }),
          // Arguments that fail the schema are a tool error the model reads (SEP-1303), not -32602.
          expected: keys.length ? { kind: 'tool error', id } : { kind: 'answer', id },
        }
      },
    },
    {
      name: 'giant string',
      weight: 1,
      make(rng, id) {
        const size = int(rng, 64 * 1024, giant)
        const text = 'A'.repeat(size)
        const where = pick(rng, ['method', 'argument', 'id', 'extra'])
        if (where === 'method')
          return { payload: request(id, `x/${text}`, {}), expected: errorFor(id, METHOD_NOT_FOUND) }
        if (where === 'id') {
          const longId = `${id}-${text}`
          return { payload: request(longId, 'ping'), expected: { kind: 'answer', id: longId } }
        }
        if (where === 'extra')
          return { payload: request(id, 'ping', { padding: text }), expected: { kind: 'answer', id } }
        const keys = Object.keys(cheapCall.arguments)
        const args: Record<string, unknown> = { ...cheapCall.arguments }
        args[keys.length ? pick(rng, keys) : 'padding'] = text
        // The tool answers with a result: its own, or (when the schema caps the length) an
        // invalid_argument tool error.
        return {
          payload: request(id, 'tools/call', { name: cheapCall.name, arguments: args }),
          expected: { kind: 'answer', id },
        }
      },
    },
    {
      name: 'deep nesting',
      weight: 2,
      make(rng, id) {
        const depth = int(rng, 1000, Math.min(100_000, Math.floor(giant / 6)))
        const kind = rng() < 0.5 ? 'array' : 'object'
        const where = pick(rng, ['params', 'argument', 'top'])
        if (where === 'top') {
          const payload = nested(depth, kind)
          return { payload, expected: errorFor(null, INVALID_REQUEST) }
        }
        if (where === 'params') {
          const payload = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"ping","params":{"deep":${nested(depth, kind)}}}`
          return { payload, expected: { kind: 'answer', id } }
        }
        const payload = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":${JSON.stringify(cheapCall.name)},"arguments":{"deep":${nested(depth, kind)}}}}`
        return { payload, expected: { kind: 'answer', id } }
      },
    },
    {
      name: 'prototype keys',
      weight: 3,
      make(rng, id) {
        const payload = pick(rng, [
          `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"ping","__proto__":{"method":"tools/call"}}`,
          `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":${JSON.stringify(cheapCall.name)},"arguments":{"__proto__":{"polluted":true}}}}`,
          `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"ping","params":{"constructor":{"prototype":{"polluted":true}}}}`,
        ])
        return { payload, expected: { kind: 'answer', id } }
      },
    },
    {
      name: 'duplicate keys',
      weight: 2,
      make(_rng, id) {
        // JSON.parse keeps the last one: a request for ping.
        const payload = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"nope","method":"ping"}`
        return { payload, expected: { kind: 'answer', id } }
      },
    },
    {
      name: 'valid request',
      weight: 10,
      make(rng, id) {
        const choice = pick(rng, ['ping', 'tools/list', 'call'])
        const payload = choice === 'call' ? request(id, 'tools/call', cheapCall) : request(id, choice)
        return { payload, expected: { kind: 'answer', id } }
      },
    },
  ]
}

/** Classifies a payload by parsing it: not JSON → -32700; otherwise as the envelope rules say. */
function classifyUnknown(payload: string): { payload: string; expected: Expected } {
  try {
    JSON.parse(payload)
  } catch {
    return { payload, expected: { kind: 'error', code: PARSE_ERROR, id: null } }
  }
  // Valid JSON by chance (a number, a string, …): anything that is not a request object.
  return { payload, expected: { kind: 'error', code: INVALID_REQUEST, id: null } }
}

/** Parsed answer of a server to one message. */
export interface Answer {
  id?: unknown
  result?: unknown
  error?: { code?: unknown; message?: unknown }
}

/** Checks one answer against the expectation; a message naming the input when wrong. */
export function checkAnswer(
  fuzzCase: FuzzCase,
  answer: Answer | undefined,
  seed: number,
): string | undefined {
  const { expected } = fuzzCase
  const name = () =>
    `seed ${seed} case #${fuzzCase.index} (${fuzzCase.category}): ${fuzzCase.payload.slice(0, 300)}${fuzzCase.payload.length > 300 ? `… (${fuzzCase.payload.length} bytes)` : ''}`
  if (expected.kind === 'silent') {
    return answer === undefined
      ? undefined
      : `${name()} expected no answer, got ${JSON.stringify(answer).slice(0, 300)}`
  }
  if (answer === undefined) return `${name()} got no answer`
  if (expected.kind === 'tool error') {
    if (answer.id !== expected.id) return `${name()} answered with id ${JSON.stringify(answer.id)}`
    const result = answer.result as { isError?: unknown; content?: Array<{ text?: unknown }> } | undefined
    const text = result?.content?.[0]?.text
    if (result?.isError !== true || typeof text !== 'string' || !text.startsWith('invalid_argument: '))
      return `${name()} expected an invalid_argument tool error, got ${JSON.stringify(answer).slice(0, 300)}`
    return undefined
  }
  if (expected.kind === 'answer') {
    if (answer.id !== expected.id) return `${name()} answered with id ${JSON.stringify(answer.id)}`
    if (answer.error && (answer.error.code === -32603 || typeof answer.error.code !== 'number'))
      return `${name()} answered an internal error: ${JSON.stringify(answer.error).slice(0, 300)}`
    return undefined
  }
  if (answer.id !== expected.id)
    return `${name()} answered with id ${JSON.stringify(answer.id)}, expected ${JSON.stringify(expected.id)}`
  if (!answer.error) return `${name()} expected error ${expected.code}, got a result`
  if (
    answer.error.code !== expected.code &&
    !expected.alsoAccepted?.codes.includes(answer.error.code as number)
  )
    return `${name()} expected error ${expected.code}, got ${JSON.stringify(answer.error).slice(0, 300)}`
  return undefined
}
