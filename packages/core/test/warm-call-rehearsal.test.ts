import { afterEach, describe, expect, it } from 'vitest'
import { REHEARSALS } from '../src/fast-path.js'
import { defineServer, ToolError, toolFactory, z } from '../src/index.js'
import { installObserver } from '../src/observe/hooks.js'
import { type Message, stdioConnection } from './fast-path-harness.js'

// The spec's warm call over stdio with core's fast path: rehearsed REHEARSALS times on the way a
// client's call takes there (fast-path.ts), never written out, never observed; without the fast
// path, run once through the pipeline (warm-up.test.ts has the in-memory cases).

interface Deps {
  runs: Array<{ requestId: string | number; probe: number }>
  failWarm: boolean
  /** Resolves once `count` runs have been recorded. */
  ran(count: number): Promise<void>
  onRun: () => void
}

const defineTool = toolFactory<Deps>()

function spec(failWarm = false) {
  return defineServer<Deps>({
    name: 'rehearsal',
    version: '1.0.0',
    description: 'warm call rehearsal fixture',
    tools: [
      defineTool({
        name: 'probe',
        title: 'Probe',
        description: 'Records each run.',
        input: { probe: z.number() },
        output: { runs: z.number() },
        annotations: { readOnlyHint: true, openWorldHint: false },
        run: (input, { deps, requestId }) => {
          deps.runs.push({ requestId, probe: input.probe })
          deps.onRun()
          if (deps.failWarm && input.probe === 7) throw new ToolError('unavailable', 'database down')
          return { data: { runs: deps.runs.length } }
        },
      }),
    ],
    createDeps() {
      const waiting: Array<{ count: number; resolve: () => void }> = []
      const deps: Deps = {
        runs: [],
        failWarm,
        ran: (count) =>
          new Promise((resolve) => {
            if (deps.runs.length >= count) resolve()
            else waiting.push({ count, resolve })
          }),
        onRun: () => {
          for (const waiter of waiting.splice(0)) {
            if (deps.runs.length >= waiter.count) waiter.resolve()
            else waiting.push(waiter)
          }
        },
      }
      return deps
    },
    warmCall: { tool: 'probe', arguments: { probe: 7 } },
  })
}

const open: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of open.splice(0)) await close()
  installObserver(undefined)
})

/** A stdio connection to `server` (fast-path-harness.ts), with the answer to each request and a 2025 handshake. */
async function connect(server: ReturnType<typeof spec>, fastPath: boolean) {
  const connection = await stdioConnection(server, { fastPath, argv: [] })
  open.push(connection.close)
  const request = async (id: unknown, method: string, params?: unknown) =>
    (await connection.request(id, method, params)).find(
      (message) => message.id === id && message.method === undefined,
    ) as Message
  const initialize = async () => {
    await request(1, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'rehearsal-test', version: '1.0.0' },
    })
    connection.write('{"jsonrpc":"2.0","method":"notifications/initialized"}')
  }
  return {
    deps: connection.runtime.deps,
    seen: connection.seen,
    request,
    initialize,
    served: connection.served,
  }
}

describe('the warm call over stdio', () => {
  it('is rehearsed on the fast path after initialize, and nothing of it is written out', async () => {
    const connection = await connect(spec(), true)
    await connection.initialize()
    await connection.deps.ran(REHEARSALS)
    // Each rehearsal ran the tool with the warm call's arguments, checked, under an id of its own.
    expect(connection.deps.runs).toEqual(
      Array.from({ length: REHEARSALS }, (_, round) => ({ requestId: round, probe: 7 })),
    )
    const answer = await connection.request(2, 'tools/call', { name: 'probe', arguments: { probe: 1 } })
    expect(answer.result).toMatchObject({ structuredContent: { runs: REHEARSALS + 1 } })
    // The client saw its two answers and nothing else: no rehearsal's answer, log or notification.
    expect(connection.seen.map((message) => message.id)).toEqual([1, 2])
    // The client's call took the fast path the rehearsals took.
    expect(connection.served.fastPathServed).toBe(1)
  })

  it('is not observed: no metrics, audit line or rate budget for calls no client made', async () => {
    const calls: string[] = []
    const requests: string[] = []
    installObserver({
      sizes: false,
      request: (start: { method: string }) => {
        requests.push(start.method)
        return { run: (work: () => unknown) => work(), end() {} }
      },
      call: (start: { tool: string }) => {
        calls.push(start.tool)
        return { run: (work: () => Promise<unknown>) => work(), end() {} }
      },
      upstream: (_system: string, _operation: string, work: () => Promise<unknown>) => work(),
    } as never)
    const connection = await connect(spec(), true)
    await connection.initialize()
    await connection.deps.ran(REHEARSALS)
    await connection.request(2, 'tools/call', { name: 'probe', arguments: { probe: 1 } })
    expect(calls).toEqual(['probe'])
    expect(requests).toEqual(['initialize', 'tools/call'])
  })

  it('stops at the first rehearsal whose result is an error (the first call does the work then)', async () => {
    const connection = await connect(spec(true), true)
    await connection.initialize()
    await connection.deps.ran(1)
    const answer = await connection.request(2, 'tools/call', { name: 'probe', arguments: { probe: 1 } })
    expect(answer.result).toMatchObject({ structuredContent: { runs: 2 } })
    // One rehearsal (id 0, not the pipeline's 'warm-up'), then the client's call.
    expect(connection.deps.runs).toEqual([
      { requestId: 0, probe: 7 },
      { requestId: 2, probe: 1 },
    ])
    expect(connection.seen.map((message) => message.id)).toEqual([1, 2])
  })

  it("is rehearsed from core's handler on a 2026-07-28 connection, nothing written out", async () => {
    const connection = await connect(spec(), true)
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'rehearsal-test', version: '1.0.0' },
      'io.modelcontextprotocol/clientCapabilities': {},
    }
    await connection.request(1, 'server/discover', { _meta: envelope })
    const first = await connection.request(2, 'tools/call', {
      name: 'probe',
      arguments: { probe: 1 },
      _meta: envelope,
    })
    expect(first.result).toMatchObject({ structuredContent: { runs: expect.any(Number) } })
    await connection.deps.ran(REHEARSALS + 1)
    const rehearsed = connection.deps.runs.filter((run) => run.probe === 7)
    expect(rehearsed).toEqual(
      Array.from({ length: REHEARSALS }, (_, round) => ({ requestId: round, probe: 7 })),
    )
    const answer = await connection.request(3, 'tools/call', {
      name: 'probe',
      arguments: { probe: 1 },
      _meta: envelope,
    })
    expect(answer.result).toMatchObject({ structuredContent: { runs: REHEARSALS + 2 } })
    expect(connection.seen.map((message) => message.id)).toEqual([1, 2, 3])
  })

  it('runs once through the pipeline when the fast path is off', async () => {
    const connection = await connect(spec(), false)
    await connection.initialize()
    await connection.deps.ran(1)
    const answer = await connection.request(2, 'tools/call', { name: 'probe', arguments: { probe: 1 } })
    expect(answer.result).toMatchObject({ structuredContent: { runs: 2 } })
    expect(connection.deps.runs).toEqual([
      { requestId: 'warm-up', probe: 7 },
      { requestId: 2, probe: 1 },
    ])
    expect(connection.seen.map((message) => message.id)).toEqual([1, 2])
  })
})
