import { fileURLToPath } from 'node:url'
import { type Connection, connectHttp, spawnHttp } from '@keel-mcp/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { call, connect, hosts, until } from './helpers.js'

/** The built bin (`pnpm run build` first). */
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))

const open: Connection[] = []
afterAll(async () => {
  for (const connection of open) await connection.close().catch(() => undefined)
})

const textOf = (result: { content?: unknown }) =>
  ((result.content ?? []) as Array<{ text?: string }>).map((block) => block.text ?? '').join('\n')

describe('what one browser may hold', () => {
  it('holds at most --max-contexts browser contexts (one per HTTP session), and says so when full', async () => {
    // Sessions idle for a second are closed, so that a client that went away frees its context soon.
    const server = await spawnHttp(process.execPath, [
      BIN,
      '--max-contexts',
      '2',
      '--session-idle-ms',
      '1000',
    ])
    try {
      const sessions = await Promise.all([
        connectHttp(server.url),
        connectHttp(server.url),
        connectHttp(server.url),
      ])
      open.push(...sessions)
      const newTab = (session: Connection) => session.client.callTool({ name: 'new_tab', arguments: {} })
      const [first, second, third] = sessions as [Connection, Connection, Connection]
      expect((await newTab(first)).isError).toBeFalsy()
      expect((await newTab(second)).isError).toBeFalsy()
      const refused = await newTab(third)
      expect(refused.isError).toBe(true)
      expect(textOf(refused)).toMatch(
        /^rate_limited: The browser holds 2 sessions' contexts, its limit \(--max-contexts 2\)\nHint: Close other MCP sessions/,
      )
      // A session that ends gives its context back (once the server has closed it, idle).
      await first.close()
      const admitted = await until(
        () => newTab(third),
        (result) => !result.isError,
      )
      expect(admitted.isError, textOf(admitted)).toBeFalsy()
    } finally {
      await server.close()
    }
  })

  it('holds at most --max-tabs tabs a session, pop-ups included', async () => {
    const connection = await connect(['--max-tabs', '3'])
    open.push(connection)
    for (let index = 0; index < 3; index++) expect((await call(connection, 'new_tab')).isError).toBe(false)
    const refused = await call(connection, 'new_tab')
    expect(refused.text).toMatch(/^rate_limited: This session has 3 tabs open, its limit \(--max-tabs 3\)/)
  })

  it("measures Chromium's memory (all its processes) and opens nothing past --max-memory", async () => {
    const connection = await connect(['--max-memory', '1'])
    open.push(connection)
    const refused = await call(connection, 'new_tab')
    expect(refused.text).toMatch(/^rate_limited: Chromium uses \d+ MiB, at its ceiling \(--max-memory 1\)/)
    const used = await hosts.at(-1)?.memoryBytes()
    // A running Chromium: its browser, GPU/utility and renderer processes hold tens of MiB at least.
    expect(used).toBeGreaterThan(20 * 1024 * 1024)
  })
})
