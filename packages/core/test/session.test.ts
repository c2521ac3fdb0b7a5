import { afterEach, describe, expect, it } from 'vitest'
import { defineServer, toolFactory, z } from '../src/index.js'
import { type RunningServer, run } from '../src/run.js'
import { type Connection, connectHttp, connectInMemory } from '../src/testing/index.js'

interface Deps {
  closed: string[]
}

const whoami = toolFactory<Deps>()({
  name: 'get_connection',
  title: 'Connection',
  description: 'Reports the connection id and whether a bearer was presented.',
  input: {},
  output: { session: z.string().nullable(), token: z.string().nullable() },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: (_input, context) => {
    const id = context.session.id
    context.session.onClose(() => {
      context.deps.closed.push(id ?? 'request')
    })
    return { data: { session: id ?? null, token: context.auth?.token ?? null } }
  },
})

const spec = defineServer<Deps, Record<string, never>>({
  name: 'session-fixture',
  version: '1.0.0',
  description: 'session fixture',
  tools: [whoami],
  createDeps: () => ({ closed: [] }),
})

type Http = RunningServer<Deps, Record<string, never>> & {
  http: NonNullable<RunningServer<Deps, Record<string, never>>['http']>
}

const open: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => {})
})

async function startHttp(extra: string[] = []): Promise<Http> {
  const server = await run(spec, {
    argv: ['--transport', 'http', '--port', '0', ...extra],
    env: { LOG_LEVEL: 'silent' },
    manageProcess: false,
  })
  if (!server?.http) throw new Error('no http endpoint')
  open.push(server)
  return server as Http
}

async function connection(server: Http, options: Parameters<typeof connectHttp>[1]): Promise<Connection> {
  const client = await connectHttp(server.http.url, options)
  open.push(client)
  return client
}

async function ask(client: Connection) {
  const result = await client.client.callTool({ name: 'get_connection', arguments: {} })
  return result.structuredContent as { session: string | null; token: string | null }
}

describe('ToolContext.session and ToolContext.auth', () => {
  it('gives each 2025-era HTTP session its own stable id, and runs onClose when it ends', async () => {
    const server = await startHttp()
    // The v1 client ends its session with DELETE on close; the v2 client leaves it to idle reaping.
    const first = await connection(server, { generation: 'v1' })
    const second = await connection(server, {})
    const a1 = await ask(first)
    const a2 = await ask(first)
    const b = await ask(second)
    expect(a1.session).toMatch(/^[0-9a-f-]{36}$/)
    expect(a2.session).toBe(a1.session)
    expect(b.session).toMatch(/^[0-9a-f-]{36}$/)
    expect(b.session).not.toBe(a1.session)
    await first.close()
    await expect.poll(() => server.runtime.deps.closed).toContain(a1.session)
    expect(server.runtime.deps.closed).not.toContain(b.session)
  })

  it('gives a 2026-07-28 request no connection id, and closes it when the request is answered', async () => {
    const server = await startHttp()
    const modern = await connection(server, { era: 'modern' })
    expect((await ask(modern)).session).toBeNull()
    await expect.poll(() => server.runtime.deps.closed).toContain('request')
    // The SDK's v2 client sends what core's HTTP fast path serves: the same holds there.
    expect(server.http.fastPathServed).toBeGreaterThan(0)
  })

  it('hands each request its own bearer and none when there is none', async () => {
    const server = await startHttp()
    const alice = await connection(server, { token: 'alice-token-1' })
    const bob = await connection(server, { token: 'bob-token-2', era: 'modern' })
    const anonymous = await connection(server, {})
    expect((await ask(alice)).token).toBe('alice-token-1')
    expect((await ask(bob)).token).toBe('bob-token-2')
    expect((await ask(anonymous)).token).toBeNull()
  })

  it('gives in-memory connections distinct ids and no bearer', async () => {
    const one = await connectInMemory(spec)
    const two = await connectInMemory(spec)
    open.push(one, two)
    const a = await ask(one)
    const b = await ask(two)
    expect(a.session).toMatch(/^memory-/)
    expect(b.session).not.toBe(a.session)
    expect(a.token).toBeNull()
  })
})
