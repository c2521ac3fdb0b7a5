import type { ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Connection, connectHttp, connectStdio, runProcess, spawnHttp } from '@keel-mcp/core/testing'
import puppeteer, { type Browser } from 'puppeteer-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Fixtures, startFixtures } from './fixtures.js'
import { call, spawnUserChromium, until } from './helpers.js'

// --cdp-endpoint: the built bin attached to a Chromium the test starts itself, as a user would
// start theirs (a DevTools port on 127.0.0.1, a tab of their own open), instead of launching one.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))

let chrome: ChildProcess
let profile = ''
let endpoint = ''
/** The origin the server is allowed to reach. */
let allowed: Fixtures
/** Another loopback origin: the user's own tab shows it; the server may not reach it. */
let other: Fixtures
let connection: (Connection & { pid: number | null }) | undefined

/** A second DevTools client, as the user's own tools would be: sees every context of the browser. */
async function inspect<T>(look: (browser: Browser) => Promise<T>): Promise<T> {
  const browser = await puppeteer.connect({ browserWSEndpoint: endpoint, defaultViewport: null })
  try {
    return await look(browser)
  } finally {
    await browser.disconnect()
  }
}

beforeAll(async () => {
  allowed = await startFixtures()
  other = await startFixtures()
  profile = await mkdtemp(join(tmpdir(), 'keel-attach-'))
  ;({ chrome, endpoint } = await spawnUserChromium([
    '--headless=new',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-dev-shm-usage',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-quic',
    '--remote-debugging-address=127.0.0.1',
    '--remote-debugging-port=0',
    `--user-data-dir=${profile}`,
    `${other.url}/`,
  ]))
  connection = await connectStdio({
    command: process.execPath,
    args: [BIN, '--cdp-endpoint', endpoint, '--allowed-origins', allowed.url],
  })
}, 60_000)

afterAll(async () => {
  await connection?.close()
  chrome?.kill('SIGKILL')
  await allowed?.close()
  await other?.close()
  if (profile) await rm(profile, { recursive: true, force: true, maxRetries: 3 })
})

describe('attached to a running browser (--cdp-endpoint)', () => {
  it("browses an allowed origin in a context of its own, beside the user's tab", async () => {
    const page = await call(connection as Connection, 'navigate', { url: `${allowed.url}/counter` })
    expect(page.isError, page.text).toBe(false)
    expect(page.text).toContain('button "Increment"')
    const seen = await inspect(async (browser) => ({
      contexts: browser.browserContexts().length,
      user: (await browser.defaultBrowserContext().pages()).map((tab) => tab.url()),
    }))
    // The user's context holds only the user's tab; the server's page is in a context of its own.
    expect(seen.contexts).toBe(2)
    expect(seen.user).toEqual([`${other.url}/`])
  })

  it('refuses an origin outside --allowed-origins, a private address and a file: URL', async () => {
    const elsewhere = await call(connection as Connection, 'navigate', { url: `${other.url}/counter` })
    expect(elsewhere.isError).toBe(true)
    expect(elsewhere.text).toContain(`Refused ${other.url}/counter`)
    const intranet = await call(connection as Connection, 'navigate', { url: 'http://10.20.30.40/' })
    expect(intranet.isError).toBe(true)
    expect(intranet.text).toContain('Refused http://10.20.30.40/')
    const file = await call(connection as Connection, 'navigate', { url: 'file:///etc/hostname' })
    expect(file.isError).toBe(true)
    expect(file.text).toContain('Refused file:///etc/hostname')
    expect(other.hits.filter((hit) => hit.startsWith('/counter'))).toEqual([])
  })

  it("sends the context's traffic through the policy proxy: a WebSocket (unseen by request interception) is judged there", async () => {
    const before = other.hits.length
    const refused = await call(connection as Connection, 'navigate', {
      url: `${allowed.url}/ws?to=${encodeURIComponent(`ws://127.0.0.1:${other.port}/socket`)}`,
    })
    expect(refused.isError, refused.text).toBe(false)
    const logged = await until(
      () => call(connection as Connection, 'console_messages'),
      (result) => result.text.includes('socket failed'),
    )
    expect(logged.text).toContain('Establishing a tunnel via proxy server failed')
    expect(other.hits.length).toBe(before)
    // The same WebSocket to the allowed origin goes through.
    await call(connection as Connection, 'navigate', {
      url: `${allowed.url}/ws?to=${encodeURIComponent(`ws://127.0.0.1:${allowed.port}/socket`)}`,
    })
    await until(
      async () => allowed.hits,
      (hits) => hits.includes('upgrade /socket'),
    )
    expect(allowed.hits).toContain('upgrade /socket')
  })

  it('gives each session handle (2026-07-28, over HTTP) a context of its own under the same policy, closed with the handle', async () => {
    const server = await spawnHttp(process.execPath, [
      BIN,
      '--cdp-endpoint',
      endpoint,
      '--allowed-origins',
      allowed.url,
    ])
    const client = await connectHttp(server.url, { era: 'modern' })
    try {
      const contextsBefore = await inspect(async (browser) => browser.browserContexts().length)
      const opened = await call(client, 'navigate', { url: `${allowed.url}/form` })
      expect(opened.isError, opened.text).toBe(false)
      const session = opened.structured?.session as string
      expect(session).toMatch(/^session\./)
      expect(await inspect(async (browser) => browser.browserContexts().length)).toBe(contextsBefore + 1)
      const refused = await call(client, 'navigate', { url: `${other.url}/form`, session })
      expect(refused.isError).toBe(true)
      expect(refused.text).toContain(`Refused ${other.url}/form`)
      const closed = await call(client, 'close_session', { session })
      expect(closed.isError, closed.text).toBe(false)
      expect(await inspect(async (browser) => browser.browserContexts().length)).toBe(contextsBefore)
    } finally {
      await client.close()
      await server.close()
    }
  })

  it("takes the DevTools port's HTTP address as well as its WebSocket", async () => {
    const port = new URL(endpoint).port
    const byPort = await connectStdio({
      command: process.execPath,
      args: [BIN, '--cdp-endpoint', `http://127.0.0.1:${port}`, '--allowed-origins', allowed.url],
    })
    try {
      const page = await call(byPort, 'navigate', { url: `${allowed.url}/form` })
      expect(page.isError, page.text).toBe(false)
      expect(page.text).toContain('textbox "Name"')
    } finally {
      await byPort.close()
    }
  })

  it("on exit closes only its own context: the user's browser and tab run on", async () => {
    const pid = connection?.pid
    await connection?.close()
    connection = undefined
    // The server process is gone (closing its context and disconnecting on the way).
    const gone = await until(
      async () => {
        try {
          if (pid) process.kill(pid, 0)
          return false
        } catch {
          return true
        }
      },
      (done) => done,
    )
    expect(gone).toBe(true)
    expect(chrome.exitCode).toBeNull()
    const seen = await inspect(async (browser) => ({
      contexts: browser.browserContexts().length,
      pages: (await browser.pages()).map((tab) => tab.url()),
    }))
    expect(seen.contexts).toBe(1)
    expect(seen.pages).toEqual([`${other.url}/`])
  })

  it('refuses at start an endpoint off this machine unless --allow-remote-cdp, and a malformed one', async () => {
    const remote = await runProcess(process.execPath, [
      BIN,
      '--cdp-endpoint',
      'ws://10.0.0.5:9222/devtools/browser/x',
    ])
    expect(remote.code).toBe(1)
    expect(remote.stderr).toContain("10.0.0.5 is not this machine's loopback")
    expect(remote.stderr).toContain('--allow-remote-cdp')
    const malformed = await runProcess(process.execPath, [BIN, '--cdp-endpoint', 'ftp://127.0.0.1:9222'])
    expect(malformed.code).toBe(1)
    expect(malformed.stderr).toContain('not a DevTools endpoint scheme')
    const alone = await runProcess(process.execPath, [BIN, '--allow-remote-cdp'])
    expect(alone.code).toBe(1)
    expect(alone.stderr).toContain('--allow-remote-cdp needs --cdp-endpoint')
  })
})
