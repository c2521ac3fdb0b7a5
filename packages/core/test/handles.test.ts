import { afterEach, describe, expect, it, vi } from 'vitest'
import { bindHandle, handlesOf, parseHandle, stateRoute } from '../src/handles.js'
import { defineServer, handleArgument, toolFactory, z } from '../src/index.js'
import { createLogger } from '../src/logger.js'
import { Observer } from '../src/observe/observer.js'
import { prepare } from '../src/run.js'
import { type Connection, connectInMemory } from '../src/testing/index.js'
import { observeConfig } from './observe-fixture.js'

// Explicit state handles: a counter per handle (or per connection), so what a call sees shows
// which state it was bound to.

interface Deps {
  counters: Map<string, number>
  closed: string[]
}

const tool = toolFactory<Deps>()
const counter = handleArgument('Counter handle from open_counter')

const openCounter = tool({
  name: 'open_counter',
  title: 'Open counter',
  description: 'Opens a counter.',
  input: {},
  output: { counter: z.string().optional() },
  annotations: { readOnlyHint: false, openWorldHint: false },
  handle: { kind: 'counter', opens: 'always' },
  run: () => ({ data: {}, text: 'opened' }),
})

const bump = tool({
  name: 'bump',
  title: 'Bump',
  description: 'Adds one to the counter.',
  input: { counter, fail: z.boolean().optional() },
  output: { value: z.number(), counter: z.string().optional() },
  annotations: { readOnlyHint: false, openWorldHint: false },
  handle: { kind: 'counter', opens: 'when-missing' },
  run: ({ fail }, { deps, handle }) => {
    if (fail) throw new Error('boom')
    const key = handle?.key ?? 'none'
    const value = (deps.counters.get(key) ?? 0) + 1
    deps.counters.set(key, value)
    return { data: { value } }
  },
})

const peek = tool({
  name: 'peek',
  title: 'Peek',
  description: 'Reads the counter.',
  input: { counter },
  output: { value: z.number(), counter: z.string().optional() },
  annotations: { readOnlyHint: true, openWorldHint: false },
  handle: { kind: 'counter' },
  run: (_args, { deps, handle }) => ({ data: { value: deps.counters.get(handle?.key ?? 'none') ?? 0 } }),
})

const closeCounter = tool({
  name: 'close_counter',
  title: 'Close counter',
  description: 'Ends a counter.',
  input: { counter },
  annotations: { readOnlyHint: false, openWorldHint: false },
  handle: { kind: 'counter' },
  run: async (_args, { handle }) => {
    await handle?.close()
    return { text: 'closed' }
  },
})

function spec(maxPerSubject?: number, maxTotal?: number) {
  return defineServer<Deps, Record<string, never>>({
    name: 'handles-fixture',
    version: '1.0.0',
    description: 'handles fixture',
    tools: [openCounter, bump, peek, closeCounter],
    handles: {
      counter: {
        opener: 'open_counter',
        closer: 'close_counter',
        ...(maxPerSubject ? { maxPerSubject } : {}),
        ...(maxTotal ? { maxTotal } : {}),
        close: (key, deps) => {
          deps.counters.delete(key)
          deps.closed.push(key)
        },
      },
    },
    createDeps: () => ({ counters: new Map(), closed: [] }),
  })
}

const open: Connection[] = []
afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close()
})

async function connect(era: 'modern' | 'legacy', maxPerSubject?: number) {
  const connection = await connectInMemory(spec(maxPerSubject), { era })
  open.push(connection)
  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const result = await connection.client.callTool({ name, arguments: args })
    return {
      isError: result.isError === true,
      text: (result.content as Array<{ text?: string }>).map((block) => block.text ?? '').join('\n'),
      structured: result.structuredContent as Record<string, unknown> | undefined,
    }
  }
  return { connection, call }
}

describe('explicit state handles on lone (2026-07-28) requests', () => {
  it('mints an opaque signed handle, returns it in structuredContent and the text, and binds later calls to it', async () => {
    const { call } = await connect('modern')
    const opened = await call('open_counter')
    const handle = opened.structured?.counter as string
    expect(parseHandle(handle)).toMatchObject({ kind: 'counter' })
    expect(opened.text).toContain(handle)
    expect((await call('bump', { counter: handle })).structured).toEqual({ value: 1, counter: handle })
    expect((await call('bump', { counter: handle })).structured?.value).toBe(2)
    const other = (await call('open_counter')).structured?.counter as string
    expect(other).not.toBe(handle)
    expect((await call('peek', { counter: other })).structured?.value).toBe(0)
    expect((await call('peek', { counter: handle })).structured?.value).toBe(2)
  })

  it('opens state for a tool that opens it when no handle is passed, and refuses one that needs it', async () => {
    const { call } = await connect('modern')
    const first = await call('bump')
    expect(first.isError).toBe(false)
    const handle = first.structured?.counter as string
    expect(first.text).toContain(`counter="${handle}"`)
    expect((await call('bump', { counter: handle })).structured?.value).toBe(2)
    const refused = await call('peek')
    expect(refused.isError).toBe(true)
    expect(refused.text).toMatch(/peek needs counter/)
    expect(refused.text).toMatch(/open_counter/)
  })

  it('refuses forged, malformed, closed and unknown handles with a tool error that says what to do', async () => {
    const { call, connection } = await connect('modern')
    const handle = (await call('open_counter')).structured?.counter as string
    const parsed = parseHandle(handle)!
    const forged = `counter.${parsed.replica}.${'A'.repeat(22)}.${parsed.mac}`
    expect((await call('peek', { counter: forged })).text).toMatch(
      /not issued by this server[\s\S]*open_counter/,
    )
    expect((await call('peek', { counter: 'session-42' })).text).toMatch(/not a counter handle/)
    expect((await call('close_counter', { counter: handle })).isError).toBe(false)
    const closed = await call('peek', { counter: handle })
    expect(closed.isError).toBe(true)
    expect(closed.text).toMatch(/^not_found: The counter handle has ended[\s\S]*Call open_counter/)
    const deps = (connection as unknown as { runtime: { deps: Deps } }).runtime.deps
    expect(deps.closed).toEqual([`handle:${parsed.id}`])
    // A handle another process minted (another key): refused, not looked up.
    const elsewhere = `counter.0123456789ab.${parsed.id}.${parsed.mac}`
    expect((await call('peek', { counter: elsewhere })).isError).toBe(true)
  })

  it('ends a handle minted by a call that failed (the model never saw it)', async () => {
    const { call, connection } = await connect('modern')
    const failed = await call('bump', { fail: true })
    expect(failed.isError).toBe(true)
    expect(failed.text).not.toMatch(/counter\./)
    const runtime = (connection as unknown as { runtime: Parameters<typeof handlesOf>[0] }).runtime
    expect(handlesOf(runtime).size).toBe(0)
  })

  it('keeps at most maxPerSubject handles: the least recently used one gives way', async () => {
    const { call, connection } = await connect('modern', 2)
    // Every use within one millisecond (as on a fast machine): the order of uses still decides.
    const now = vi.spyOn(Date, 'now').mockReturnValue(Date.now())
    const a = (await call('open_counter')).structured?.counter as string
    const b = (await call('open_counter')).structured?.counter as string
    await call('bump', { counter: a })
    const c = (await call('open_counter')).structured?.counter as string
    now.mockRestore()
    expect((await call('peek', { counter: a })).isError).toBe(false)
    expect((await call('peek', { counter: c })).isError).toBe(false)
    const evicted = await call('peek', { counter: b })
    expect(evicted.text).toMatch(/has ended/)
    const runtime = (connection as unknown as { runtime: Parameters<typeof handlesOf>[0] }).runtime
    expect(handlesOf(runtime).size).toBe(2)
  })

  it('ends handles idle past the idle time', async () => {
    const { call, connection } = await connect('modern')
    const handle = (await call('open_counter')).structured?.counter as string
    const runtime = (connection as unknown as { runtime: Parameters<typeof handlesOf>[0] }).runtime
    handlesOf(runtime).sweep(Date.now() + runtime.config.sessionIdleMs + 1000)
    expect((await call('peek', { counter: handle })).text).toMatch(/idle longer than 600 s/)
  })
})

describe('metrics', () => {
  it('counts the open handles in mcp_handles once the operations observer is on', async () => {
    const { connection, call } = await connect('modern')
    const observer = new Observer({
      config: observeConfig(),
      serviceName: 'x',
      serviceVersion: '1.0.0',
      logger: createLogger({ name: 'x', level: 'error' }),
      limiter: undefined,
      tracing: undefined,
    })
    connection.runtime.operations = { observer } as never
    try {
      const first = (await call('open_counter')).structured?.counter as string
      await call('open_counter')
      expect(observer.registry.render()).toMatch(/^mcp_handles 2$/m)
      await call('close_counter', { counter: first })
      expect(observer.registry.render()).toMatch(/^mcp_handles 1$/m)
    } finally {
      await observer.close()
    }
  })
})

describe('the connection default on stdio and 2025-era sessions', () => {
  it('binds calls without a handle to the connection, so nothing changes for those clients', async () => {
    const { call } = await connect('legacy')
    const first = await call('bump')
    expect(first.structured).toEqual({ value: 1 })
    expect(first.text).not.toMatch(/counter/)
    expect((await call('bump')).structured).toEqual({ value: 2 })
    expect((await call('peek')).structured).toEqual({ value: 2 })
    // An explicit handle works on a connection too, beside its default.
    const handle = (await call('open_counter')).structured?.counter as string
    expect((await call('peek', { counter: handle })).structured?.value).toBe(0)
  })
})

describe('subjects', () => {
  it("refuses another subject's handle", async () => {
    const runtime = await prepare(spec(), { argv: [], env: { LOG_LEVEL: 'silent' } })
    const session = { id: undefined, onClose() {} }
    const opened = bindHandle(runtime as never, openCounter as never, {
      args: {},
      session,
      subject: 'alice',
    })!
    opened.release()
    expect(() =>
      bindHandle(runtime as never, peek as never, {
        args: { counter: opened.token },
        session,
        subject: 'mallory',
      }),
    ).toThrow(/belongs to another caller/)
    const again = bindHandle(runtime as never, peek as never, {
      args: { counter: opened.token },
      session,
      subject: 'alice',
    })
    expect(again?.key).toBe(opened.key)
  })

  it('keeps at most maxTotal handles across subjects, and refuses a new one when all are busy', async () => {
    const runtime = await prepare(spec(8, 2), { argv: [], env: { LOG_LEVEL: 'silent' } })
    const session = { id: undefined, onClose() {} }
    const open = (subject: string) =>
      bindHandle(runtime as never, openCounter as never, { args: {}, session, subject })!
    const alice = open('alice')
    alice.release()
    const busy = open('alice')
    const bob = open('bob')
    expect(() =>
      bindHandle(runtime as never, peek as never, {
        args: { counter: alice.token },
        session,
        subject: 'alice',
      }),
    ).toThrow(/has ended/)
    expect(runtime.deps.closed).toEqual([alice.key])
    expect(() => open('carol')).toThrow(/All 2 open counter handles of this server are in use/)
    bob.release()
    busy.release()
  })

  it('verifies handles across processes that share --state-secret', async () => {
    const secret = 'a-state-secret-shared-by-every-replica-0123456789'
    const one = await prepare(spec(), { argv: ['--state-secret', secret], env: { LOG_LEVEL: 'silent' } })
    const two = await prepare(spec(), { argv: ['--state-secret', secret], env: { LOG_LEVEL: 'silent' } })
    const three = await prepare(spec(), { argv: [], env: { LOG_LEVEL: 'silent' } })
    const token = handlesOf(one as never).mint('counter', '').token
    const parsed = parseHandle(token)!
    expect(handlesOf(two as never).authentic(parsed)).toBe(true)
    expect(handlesOf(three as never).authentic(parsed)).toBe(false)
  })

  it('routes a call by the handle it carries: another replica, the connection, or here', async () => {
    const secret = 'a-state-secret-shared-by-every-replica-0123456789'
    const minter = await prepare(spec(), { argv: ['--state-secret', secret], env: { LOG_LEVEL: 'silent' } })
    const here = await prepare(spec(), { argv: ['--state-secret', secret], env: { LOG_LEVEL: 'silent' } })
    const token = handlesOf(minter as never).mint('counter', '').token
    const message = (name: string, args: Record<string, unknown>) => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name, arguments: args },
    })
    const owner = handlesOf(minter as never).replica
    expect(stateRoute(here as never, message('peek', { counter: token }))).toEqual({ owner })
    expect(stateRoute(minter as never, message('peek', { counter: token }))).toBeUndefined()
    expect(stateRoute(here as never, message('peek', {}))).toBe('connection')
    expect(stateRoute(here as never, message('open_counter', {}))).toBeUndefined()
    // A made-up handle naming another replica is refused here, never relayed, when a secret is shared.
    const parsed = parseHandle(token)!
    const forged = `counter.${parsed.replica}.${'B'.repeat(22)}.${parsed.mac}`
    expect(stateRoute(here as never, message('peek', { counter: forged }))).toBeUndefined()
  })
})
