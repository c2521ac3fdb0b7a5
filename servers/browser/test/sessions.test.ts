import { type Connection, connectInMemory } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Fixtures, startFixtures } from './fixtures.js'
import { browseFlow, call, testServer } from './helpers.js'

// Browser sessions as explicit handles: 2026-07-28 lone requests carry `session`; stdio-like
// connections (in memory here) and 2025-era sessions keep their own session without one.

let fixtures: Fixtures
let modern: Connection
beforeAll(async () => {
  fixtures = await startFixtures()
  modern = await connectInMemory(testServer, {
    era: 'modern',
    argv: ['--allow-private-network', '--timeout-navigation', '20000'],
  })
})
afterAll(async () => {
  await modern?.close()
  await fixtures?.close()
})

describe('2026-07-28 lone requests carry a session handle', () => {
  it('navigate without session starts one and returns it; every later call with it finds the same browser', async () => {
    const navigated = await call(modern, 'navigate', { url: `${fixtures.url}/form` })
    expect(navigated.isError, navigated.text).toBe(false)
    const session = navigated.structured?.session as string
    expect(session).toMatch(/^session\./)
    expect(navigated.text).toContain(`session="${session}"`)
    const { tabs } = await browseFlow(modern, fixtures.url, session)
    expect(tabs.structured?.session).toBe(session)
    await call(modern, 'close_session', { session })
  })

  it('refuses a stateful call without session, naming the tools that start one', async () => {
    const result = await call(modern, 'snapshot')
    expect(result.isError).toBe(true)
    expect(result.text).toMatch(/^invalid_argument: snapshot needs session[\s\S]*open_session/)
  })

  it('never shares cookies, storage or tabs between two sessions', async () => {
    const one = (await call(modern, 'open_session')).structured?.session as string
    const two = (await call(modern, 'open_session')).structured?.session as string
    expect(one).not.toBe(two)
    await call(modern, 'navigate', { url: `${fixtures.url}/cookie?set=alpha`, session: one })
    await call(modern, 'navigate', { url: `${fixtures.url}/storage?set=red`, session: one })
    expect((await call(modern, 'navigate', { url: `${fixtures.url}/cookie`, session: two })).text).toContain(
      'cookie: none',
    )
    expect((await call(modern, 'navigate', { url: `${fixtures.url}/storage`, session: two })).text).toContain(
      'storage: none',
    )
    expect((await call(modern, 'navigate', { url: `${fixtures.url}/cookie`, session: one })).text).toContain(
      'cookie: k=alpha',
    )
    expect((await call(modern, 'navigate', { url: `${fixtures.url}/storage`, session: one })).text).toContain(
      'storage: red',
    )
    await call(modern, 'new_tab', { session: one })
    expect((await call(modern, 'list_tabs', { session: one })).structured?.tabs).toHaveLength(2)
    expect((await call(modern, 'list_tabs', { session: two })).structured?.tabs).toHaveLength(1)
    await call(modern, 'close_session', { session: one })
    await call(modern, 'close_session', { session: two })
  })

  it('close_session ends the session: its handle is refused afterwards, with what to do', async () => {
    const session = (await call(modern, 'open_session')).structured?.session as string
    const closed = await call(modern, 'close_session', { session })
    expect(closed.isError, closed.text).toBe(false)
    const after = await call(modern, 'list_tabs', { session })
    expect(after.isError).toBe(true)
    expect(after.text).toMatch(/^not_found: The session handle has ended[\s\S]*open_session/)
    const forged = await call(modern, 'list_tabs', { session: `${session.slice(0, -4)}AAAA` })
    expect(forged.text).toMatch(/not issued by this server/)
  })
})

describe('the context limit', () => {
  it('lets the least recently used idle session give way before --max-contexts would refuse a new one', async () => {
    const small = await connectInMemory(testServer, {
      era: 'modern',
      argv: ['--allow-private-network', '--max-contexts', '2'],
    })
    try {
      const sessions: string[] = []
      // A client that never passes the handle on opens a session with each navigate.
      for (let index = 0; index < 3; index++) {
        const navigated = await call(small, 'navigate', { url: `${fixtures.url}/` })
        expect(navigated.isError, navigated.text).toBe(false)
        sessions.push(navigated.structured?.session as string)
      }
      const first = await call(small, 'list_tabs', { session: sessions[0] })
      expect(first.text).toMatch(/^not_found: The session handle has ended/)
      expect((await call(small, 'list_tabs', { session: sessions[2] })).structured?.tabs).toHaveLength(1)
    } finally {
      await small.close()
    }
  })
})

describe('history and waiting', () => {
  it('go_back and go_forward with no history are a clear tool error', async () => {
    const session = (await call(modern, 'open_session')).structured?.session as string
    for (const name of ['go_back', 'go_forward']) {
      const result = await call(modern, name, { session })
      expect(result.isError).toBe(true)
      expect(result.text).toMatch(/^not_found: No (earlier|later) page in this tab's history/)
    }
    await call(modern, 'navigate', { url: `${fixtures.url}/`, session })
    const forward = await call(modern, 'go_forward', { session })
    expect(forward.text).toMatch(/^not_found: No later page/)
    await call(modern, 'close_session', { session })
  })

  it('wait_for with text and seconds waits at most seconds', async () => {
    const navigated = await call(modern, 'navigate', { url: `${fixtures.url}/` })
    const session = navigated.structured?.session as string
    const started = Date.now()
    const result = await call(modern, 'wait_for', { text: 'never on this page', seconds: 1, session })
    expect(result.isError).toBe(true)
    expect(result.text).toMatch(/^timeout: "never on this page" did not appear within 1 s/)
    // The navigation timeout is 20 s: a wait bounded by it would take far longer than this.
    expect(Date.now() - started).toBeLessThan(15_000)
    await call(modern, 'close_session', { session })
  })
})

describe.each(['v2', 'v1'] as const)('a 2025-era connection (%s client) needs no handle', (generation) => {
  it('runs the same flow on the connection’s own session', async () => {
    const connection = await connectInMemory(testServer, { generation, argv: ['--allow-private-network'] })
    try {
      const navigated = await call(connection, 'navigate', { url: `${fixtures.url}/form` })
      expect(navigated.isError, navigated.text).toBe(false)
      expect(navigated.structured?.session).toBeUndefined()
      expect(navigated.text).not.toContain('session')
      await browseFlow(connection, fixtures.url)
    } finally {
      await connection.close()
    }
  })
})
