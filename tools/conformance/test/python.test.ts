import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  type PythonPlan,
  type PythonRun,
  type PythonTarget,
  pythonMcp,
  runPythonClient,
  spawnHttp,
} from '@keel-mcp/core/testing'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'

// The official suite has no 2026-07-28 scenarios yet: the Python MCP SDK (whose default is that
// revision) checks what the revision asks of a server, against core's conformance fixture:
// `server/discover`, cache hints, per-request log levels and `input_required` elicitation.
const BIN = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'dist/index.js')
const LISTING_TTL_MS = 300_000

const servers: Array<{ close(): Promise<unknown> }> = []
beforeAll(async () => {
  await pythonMcp()
}, 300_000)
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

const targets: Array<[string, () => Promise<PythonTarget>]> = [
  ['stdio', async () => ({ command: process.execPath, args: [BIN] })],
  [
    'Streamable HTTP',
    async () => {
      const server = await spawnHttp(process.execPath, [BIN])
      servers.push(server)
      return { url: server.url }
    },
  ],
]

/**
 * The same Python client plan run against the HTTP bin (started with `args`) with core's fast paths
 * and without them (KEEL_FAST_PATH=0): what the two runs saw must match.
 */
async function withAndWithoutFastPath(args: string[], plan: Omit<PythonPlan, 'target'>) {
  const runWith = async (env: Record<string, string>) => {
    const server = await spawnHttp(process.execPath, [BIN, ...args], { env })
    servers.push(server)
    return runPythonClient({ target: { url: server.url }, ...plan })
  }
  return { fast: await runWith({}), sdk: await runWith({ KEEL_FAST_PATH: '0' }) }
}

function ok(run: PythonRun, index: number): any {
  const result = run.results[index]
  if (!result || !('ok' in result))
    throw new Error(
      `step ${index}: ${JSON.stringify(result)}; ${run.connectError ?? ''} ${run.stderr.slice(-1500)}`,
    )
  return result.ok
}

const text = (result: any): string =>
  result.content.map((block: { text?: string }) => block.text ?? '').join('\n')

const logLevels = (run: PythonRun) =>
  run.notifications.filter((note) => note.method === 'notifications/message').map((note) => note.params.level)

const elicit = {
  action: 'accept' as const,
  content: { username: 'ada', email: 'ada@example.com', name: 'Ada' },
}

describe.each(targets)('2026-07-28 with the Python MCP SDK over %s', (_transport, target) => {
  it('discovers the server fully, caches fixed listings, logs at the asked level and elicits through input_required', async () => {
    const run = await runPythonClient({
      target: await target(),
      mode: 'auto',
      logLevel: 'info',
      elicit,
      steps: [
        { op: 'info' },
        { op: 'list_tools' },
        { op: 'list_prompts' },
        { op: 'list_resources' },
        { op: 'call_tool', name: 'test_logging_tool' },
        { op: 'call_tool', name: 'test_elicitation', arguments: { message: 'Who are you?' } },
        { op: 'call_tool', name: 'test_input_required_result_elicitation' },
      ],
    })
    expect(run.protocolVersion).toBe('2026-07-28')
    const { discover } = ok(run, 0)
    expect(discover.supportedVersions).toContain('2026-07-28')
    expect(discover.capabilities).toMatchObject({ tools: {}, resources: { subscribe: true }, prompts: {} })
    expect(discover._meta['io.modelcontextprotocol/serverInfo']).toMatchObject({
      name: 'conformance-fixture',
    })
    // Fixed for the life of the process: reusable for a while; resource lists change: not cached.
    expect(discover).toMatchObject({ ttlMs: LISTING_TTL_MS, cacheScope: 'public' })
    expect(ok(run, 1)).toMatchObject({ ttlMs: LISTING_TTL_MS, cacheScope: 'public' })
    expect(ok(run, 2)).toMatchObject({ ttlMs: LISTING_TTL_MS, cacheScope: 'public' })
    expect(ok(run, 3)).toMatchObject({ ttlMs: 0 })
    // The request's own level (in its _meta envelope) decides: info and above, no debug.
    expect(text(ok(run, 4))).toBe('Logging completed')
    expect(logLevels(run)).toEqual(['info', 'warning', 'error'])
    // A lone request cannot ask the client mid-call: the question goes out as input_required.
    expect(text(ok(run, 5))).toBe(
      'User response: action=accept, content={"username":"ada","email":"ada@example.com","name":"Ada"}',
    )
    expect(text(ok(run, 6))).toBe('Hello, Ada!')
  })
})

describe('a 2026-07-28 request that asks for no log level', () => {
  it('gets no log messages, not even warnings and errors', async () => {
    const run = await runPythonClient({
      target: { command: process.execPath, args: [BIN] },
      mode: 'auto',
      steps: [{ op: 'call_tool', name: 'test_logging_tool' }],
    })
    expect(text(ok(run, 0))).toBe('Logging completed')
    expect(logLevels(run)).toEqual([])
  })
})

describe('2026-07-28 tool calls over Streamable HTTP with the Python MCP SDK, no log level asked', () => {
  // Calls that ask for no progress and no log messages are served by core's HTTP fast path; the
  // same steps against the same bin with it off (KEEL_FAST_PATH=0) must give the same results.
  const steps = [
    { op: 'call_tool' as const, name: 'test_simple_text' },
    { op: 'call_tool' as const, name: 'test_image_content' },
    { op: 'call_tool' as const, name: 'test_multiple_content_types' },
    { op: 'call_tool' as const, name: 'test_error_handling' },
    { op: 'call_tool' as const, name: 'test_input_required_result_elicitation' },
    { op: 'call_tool' as const, name: 'test_input_required_result_multi_round' },
  ]
  it('gives the same results with core’s fast path as through the SDK', async () => {
    const { fast, sdk } = await withAndWithoutFastPath([], { mode: 'auto', elicit, steps })
    expect(fast.protocolVersion).toBe('2026-07-28')
    expect(fast.results).toEqual(sdk.results)
    expect(text(ok(fast, 0))).toBeTruthy()
    expect(text(ok(fast, 4))).toBe('Hello, Ada!')
    expect(logLevels(fast)).toEqual([])
  })
})

describe('2025-era tool calls over stateless Streamable HTTP with the Python MCP SDK', () => {
  // With --stateless, 2025-era calls are served by core's HTTP fast path as the SDK's per-request
  // transport serves them (SSE); the same steps with it off (KEEL_FAST_PATH=0) must match.
  const steps = [
    { op: 'call_tool' as const, name: 'test_simple_text' },
    { op: 'call_tool' as const, name: 'test_image_content' },
    { op: 'call_tool' as const, name: 'test_error_handling' },
    { op: 'call_tool' as const, name: 'test_tool_with_logging' },
    { op: 'call_tool' as const, name: 'test_tool_with_progress', meta: { progressToken: 'py-progress' } },
  ]
  it('gives the same results and notifications with core’s fast path as through the SDK', async () => {
    const { fast, sdk } = await withAndWithoutFastPath(['--stateless'], { mode: 'legacy', steps })
    expect(fast.results).toEqual(sdk.results)
    expect(fast.notifications).toEqual(sdk.notifications)
    expect(text(ok(fast, 0))).toBeTruthy()
    expect(fast.results.every((result) => 'ok' in result)).toBe(true)
    // The progress of the call that asked for it reached the client, in order.
    expect(fast.notifications.map((note) => note.method)).toEqual([
      'notifications/progress',
      'notifications/progress',
      'notifications/progress',
    ])
  })
})

describe('2025-era sessions over Streamable HTTP with the Python MCP SDK', () => {
  // A session's tool calls are taken in by core without the SDK's Node adapter and served by the
  // session's own transport and server; the same steps with it off (KEEL_FAST_PATH=0) must match:
  // results, the level the session sets, progress, and an elicitation on the call's stream.
  const steps = [
    { op: 'set_logging_level' as const, level: 'info' },
    { op: 'call_tool' as const, name: 'test_simple_text' },
    { op: 'call_tool' as const, name: 'test_image_content' },
    { op: 'call_tool' as const, name: 'test_error_handling' },
    { op: 'call_tool' as const, name: 'test_logging_tool' },
    { op: 'call_tool' as const, name: 'test_tool_with_progress', meta: { progressToken: 'py-progress' } },
    { op: 'call_tool' as const, name: 'test_input_required_result_elicitation' },
  ]
  it('gives the same results and notifications with core’s path as through the SDK’s adapter', async () => {
    const { fast, sdk } = await withAndWithoutFastPath([], { mode: 'legacy', elicit, steps })
    expect(fast.results).toEqual(sdk.results)
    expect(fast.notifications).toEqual(sdk.notifications)
    expect(fast.results.every((result) => 'ok' in result)).toBe(true)
    expect(logLevels(fast)).toEqual(['info', 'warning', 'error'])
    expect(fast.notifications.filter((note) => note.method === 'notifications/progress')).toHaveLength(3)
    expect(text(ok(fast, 6))).toBe('Hello, Ada!')
  })
})

describe('the initialize handshake with the Python MCP SDK', () => {
  it('keeps logging/setLevel and in-call elicitation working as in 2025', async () => {
    const run = await runPythonClient({
      target: { command: process.execPath, args: [BIN] },
      mode: 'legacy',
      elicit,
      steps: [
        { op: 'set_logging_level', level: 'info' },
        { op: 'call_tool', name: 'test_logging_tool' },
        { op: 'call_tool', name: 'test_input_required_result_elicitation' },
      ],
    })
    expect(run.protocolVersion).toBe('2025-11-25')
    expect(logLevels(run)).toEqual(['info', 'warning', 'error'])
    expect(text(ok(run, 2))).toBe('Hello, Ada!')
  })
})
