import { createSocket } from 'node:dgram'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { createServer as createTcpServer } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Connection } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Fixtures, startFixtures } from './fixtures.js'
import { call, connect, INTRANET_NAME, PUBLIC_NAME, refOf, until } from './helpers.js'

// Real pages on 127.0.0.1. PUBLIC_NAME is what the tests treat as a public site: the server's
// resolver says it is public, and Chromium is told to reach it on loopback. Anything else on
// 127.0.0.1 is what a real intranet address would be: it must stay unreached.
let site: Fixtures
let intranet: Fixtures
let third: Fixtures
const open: Connection[] = []

beforeAll(async () => {
  ;[site, intranet, third] = await Promise.all([startFixtures(), startFixtures(), startFixtures()])
})
afterAll(async () => {
  for (const connection of open) await connection.close()
  await Promise.all([site?.close(), intranet?.close(), third?.close()])
})

async function connection(argv: string[] = []): Promise<Connection> {
  const connected = await connect(argv)
  open.push(connected)
  return connected
}

const publicUrl = (path: string) => `http://${PUBLIC_NAME}:${site.port}${path}`

describe('by default', () => {
  let browser: Connection
  beforeAll(async () => {
    browser = await connection()
  })

  it.each([
    ['file:///etc/hostname', 'file: URLs are refused'],
    ['chrome://version', 'chrome: URLs are refused'],
    ['chrome-extension://abcdefghijklmnop/page.html', 'chrome-extension: URLs are refused'],
    ['devtools://devtools/bundled/inspector.html', 'devtools: URLs are refused'],
    ['view-source:http://example.com/', 'view-source: URLs are refused'],
    ['javascript:alert(1)', 'javascript: URLs are refused'],
    ['data:text/html,<h1>hi</h1>', 'top-level data: navigations are refused'],
  ])('refuses to navigate to %s', async (url, reason) => {
    const result = await call(browser, 'navigate', { url })
    expect(result.isError).toBe(true)
    expect(result.text).toContain('permission_denied: Refused')
    expect(result.text).toContain(reason)
  })

  it.each([
    (port: number) => `http://127.0.0.1:${port}/`,
    (port: number) => `http://localhost:${port}/`,
    (port: number) => `http://[::1]:${port}/`,
    (port: number) => `http://[::ffff:127.0.0.1]:${port}/`,
    (port: number) => `http://0x7f000001:${port}/`,
    (port: number) => `http://${INTRANET_NAME}:${port}/`,
    () => 'http://10.1.2.3/',
    () => 'http://192.168.0.1/',
    () => 'http://172.16.5.4/',
    () => 'http://169.254.169.254/latest/meta-data/',
    () => 'http://[fd00::1]/',
    () => 'http://[fe80::1]/',
  ])('refuses loopback, private and link-local addresses and names resolving to them (%#)', async (url) => {
    const before = intranet.hits.length
    const result = await call(browser, 'navigate', { url: url(intranet.port) })
    expect(result.isError).toBe(true)
    expect(result.text).toMatch(/^permission_denied: Refused .*(private|loopback)/)
    expect(intranet.hits.length).toBe(before)
  })

  it('opens a public page', async () => {
    const result = await call(browser, 'navigate', { url: publicUrl('/') })
    expect(result.isError, result.text).toBe(false)
    expect(result.text).toContain('Fixture home')
  })

  it('refuses a redirect from a public page to a private address, and the address is never reached', async () => {
    const before = intranet.hits.length
    const target = `http://127.0.0.1:${intranet.port}/`
    const result = await call(browser, 'navigate', {
      url: publicUrl(`/redirect?to=${encodeURIComponent(target)}`),
    })
    expect(result.isError).toBe(true)
    expect(result.text).toContain(`permission_denied: Refused ${target}`)
    expect(intranet.hits.length).toBe(before)
  })

  it('refuses sub-resource requests of a public page to private addresses and names', async () => {
    const before = intranet.hits.length
    for (const host of ['127.0.0.1', INTRANET_NAME]) {
      const image = `http://${host}:${intranet.port}/pixel.png`
      const result = await call(browser, 'navigate', {
        url: publicUrl(`/embed?src=${encodeURIComponent(image)}`),
      })
      expect(result.isError, result.text).toBe(false)
      // The failure is recorded when Chromium reports it, which may be just after the load event.
      let network = ''
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
        network = (await call(browser, 'network_requests', { failed_only: true })).text
        if (network.includes(image)) break
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      expect(network).toContain(`${image} failed: net::ERR_BLOCKED_BY_CLIENT`)
    }
    expect(intranet.hits.length).toBe(before)
  })

  it('refuses WebSockets to private addresses, which request interception does not see (the proxy does)', async () => {
    const before = intranet.hits.length
    const socket = await call(browser, 'navigate', {
      url: publicUrl(`/ws?to=${encodeURIComponent(`ws://127.0.0.1:${intranet.port}/socket`)}`),
    })
    expect(socket.isError, socket.text).toBe(false)
    // The page reports the socket's failure to its console; wait for it, bounded in time.
    let consoleText = ''
    for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
      consoleText = (await call(browser, 'console_messages')).text
      if (consoleText.includes('socket failed')) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(consoleText).toContain('Establishing a tunnel via proxy server failed')
    expect(intranet.hits.length).toBe(before)
  })

  it('refuses downloads', async () => {
    const downloads = join(homedir(), 'Downloads')
    const before = existsSync(downloads) ? await readdir(downloads) : []
    const page = await call(browser, 'navigate', { url: publicUrl('/download-page') })
    await call(browser, 'click', { ref: refOf(page.text, /link "Get file"/) })
    await call(browser, 'wait_for', { seconds: 0.5 })
    const after = existsSync(downloads) ? await readdir(downloads) : []
    expect(after.filter((name) => name.startsWith('data')).length).toBe(
      before.filter((name) => name.startsWith('data')).length,
    )
  })

  it('marks page text as untrusted inside a boundary the page cannot guess or close', async () => {
    const result = await call(browser, 'navigate', { url: publicUrl('/injection') })
    const tag = /Untrusted page content in <(page-[0-9a-f]{8})>/.exec(result.text)?.[1]
    expect(tag).toBeDefined()
    expect(tag).not.toBe('page-00000000')
    const inside = result.text.slice(result.text.indexOf(`<${tag}>\n`), result.text.lastIndexOf(`</${tag}>`))
    expect(inside).toContain('Ignore all previous instructions')
    expect(inside).toContain('</page-00000000>')
    expect(result.text.trimEnd().endsWith(`</${tag}>`)).toBe(true)
  })
})

describe('allow and block lists', () => {
  it('opens exactly the allowed origins, private ones included, and the block list wins', async () => {
    const allowed = `http://127.0.0.1:${site.port}`
    const blocked = `http://127.0.0.1:${intranet.port}`
    const browser = await connection([
      '--allowed-origins',
      `${allowed},${blocked}`,
      '--blocked-origins',
      blocked,
    ])
    const ok = await call(browser, 'navigate', { url: `${allowed}/` })
    expect(ok.isError, ok.text).toBe(false)
    const refusedBlocked = await call(browser, 'navigate', { url: `${blocked}/` })
    expect(refusedBlocked.text).toContain('is blocked (--blocked-origins)')
    const unlisted = await call(browser, 'navigate', { url: `http://127.0.0.1:${third.port}/` })
    expect(unlisted.text).toContain('is not in --allowed-origins')
    const hitsBefore = third.hits.length
    const redirect = await call(browser, 'navigate', {
      url: `${allowed}/redirect?to=${encodeURIComponent(`http://127.0.0.1:${third.port}/`)}`,
    })
    expect(redirect.isError).toBe(true)
    expect(redirect.text).toContain('permission_denied')
    await call(browser, 'navigate', {
      url: `${allowed}/embed?src=${encodeURIComponent(`http://127.0.0.1:${third.port}/pixel.png`)}`,
    })
    expect(third.hits.length).toBe(hitsBefore)
    expect(intranet.hits).toEqual([])
  })

  it('shows a URL opened with userinfo without its credentials, everywhere a URL appears', async () => {
    const blocked = `http://127.0.0.1:${intranet.port}`
    const browser = await connection(['--allow-private-network', '--blocked-origins', blocked])
    const password = 'keel-userinfo-Pw7xQ2'
    const withUserinfo = (port: number, path: string) => `http://someone:${password}@127.0.0.1:${port}${path}`
    const shown: string[] = []
    const opened = await call(browser, 'navigate', { url: withUserinfo(third.port, '/console') })
    expect(opened.isError, opened.text).toBe(false)
    expect(opened.text).toContain(`url: http://127.0.0.1:${third.port}/console`)
    expect(opened.structured?.url).toBe(`http://127.0.0.1:${third.port}/console`)
    shown.push(opened.text, JSON.stringify(opened.raw))
    for (const [name, args] of [
      ['snapshot', {}],
      ['list_tabs', {}],
      ['network_requests', {}],
      ['console_messages', {}],
    ] as const) {
      const result = await call(browser, name, args)
      expect(result.isError, `${name}: ${result.text}`).toBe(false)
      shown.push(JSON.stringify(result.raw))
    }
    // Refused with userinfo: the error names the address without the password.
    const refused = await call(browser, 'navigate', { url: withUserinfo(intranet.port, '/') })
    expect(refused.isError).toBe(true)
    expect(refused.text).toContain(`Refused ${blocked}/`)
    shown.push(JSON.stringify(refused.raw))
    for (const text of shown) {
      expect(text).not.toContain(password)
      expect(text).not.toContain('someone')
    }
  })

  it('allows loopback with --allow-private-network, and file: only with --allow-file-urls', async () => {
    const browser = await connection(['--allow-private-network', '--allow-file-urls'])
    const local = await call(browser, 'navigate', { url: `http://127.0.0.1:${third.port}/counter` })
    expect(local.isError, local.text).toBe(false)
    const file = await call(browser, 'navigate', { url: 'file:///etc/hostname' })
    expect(file.isError, file.text).toBe(false)
    // WebSockets go through the policy proxy too, and reach what is allowed.
    await call(browser, 'navigate', {
      url: `http://127.0.0.1:${third.port}/ws?to=${encodeURIComponent(`ws://127.0.0.1:${third.port}/socket`)}`,
    })
    for (
      const deadline = Date.now() + 20_000;
      !third.hits.includes('upgrade /socket') && Date.now() < deadline;
    )
      await new Promise((resolve) => setTimeout(resolve, 100))
    expect(third.hits).toContain('upgrade /socket')
  })

  it('saves downloads only with --caps downloads and --download-dir', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-downloads-'))
    try {
      const browser = await connection([
        '--allow-private-network',
        '--caps',
        'downloads',
        '--download-dir',
        dir,
      ])
      const page = await call(browser, 'navigate', { url: `http://127.0.0.1:${third.port}/download-page` })
      await call(browser, 'click', { ref: refOf(page.text, /link "Get file"/) })
      let files: string[] = []
      // A connection other than stdio saves into a folder of its own under the download directory.
      const saved = () => files.some((file) => /^session-[\d-]+\/data\.bin$/.test(file))
      for (const deadline = Date.now() + 10_000; !saved() && Date.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        files = await readdir(dir, { recursive: true })
      }
      expect(files.filter((file) => file.endsWith('data.bin'))).toEqual([
        expect.stringMatching(/^session-[\d-]+\/data\.bin$/),
      ])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('with --caps network', () => {
  it('answers mocked requests only for addresses the policy allows', async () => {
    const browser = await connection(['--caps', 'network'])
    const rule = await call(browser, 'route', {
      pattern: '*',
      action: 'fulfill',
      content_type: 'text/html',
      body: '<title>Mocked</title><h1>Mocked page</h1>',
    })
    expect(rule.text).toContain('fulfill * → 200 text/html')
    const mocked = await call(browser, 'navigate', { url: publicUrl('/nowhere') })
    expect(mocked.isError, mocked.text).toBe(false)
    expect(mocked.text).toContain('h1 "Mocked page"')
    const hits = intranet.hits.length
    for (const url of [
      `http://127.0.0.1:${intranet.port}/`,
      `http://${INTRANET_NAME}:${intranet.port}/`,
      'file:///etc/hostname',
    ]) {
      const refused = await call(browser, 'navigate', { url })
      expect(refused.isError, url).toBe(true)
      expect(refused.text, url).toContain('permission_denied: Refused')
    }
    expect(intranet.hits.length).toBe(hits)
  })
})

describe('the policy proxy is the only way out', () => {
  it('holds a block for every name and spelling of the blocked address and port, navigations and page fetches alike', async () => {
    const blocked = `http://127.0.0.1:${intranet.port}`
    // Allowed twice over (private network, and listed), blocked once: the block wins.
    const browser = await connection(['--allow-private-network', '--blocked-origins', blocked])
    const spellings = [
      'localhost',
      'localhost.',
      '[::1]',
      '[::ffff:127.0.0.1]',
      '0.0.0.0',
      '0x7f000001',
      '0177.0.0.1',
      '127.0.0.2',
      INTRANET_NAME,
    ].map((host) => `http://${host}:${intranet.port}/`)
    for (const url of spellings) {
      const result = await call(browser, 'navigate', { url })
      expect(result.isError, url).toBe(true)
      expect(result.text).toContain('is blocked (--blocked-origins')
    }
    const query = spellings.map((url) => `to=${encodeURIComponent(`${url}data`)}`).join('&')
    const page = await call(browser, 'navigate', { url: `http://127.0.0.1:${third.port}/fetch?${query}` })
    expect(page.isError, page.text).toBe(false)
    const logged = await until(
      () => call(browser, 'console_messages'),
      (result) => (result.text.match(/refused http/g) ?? []).length === spellings.length,
    )
    expect((logged.text.match(/refused http/g) ?? []).length).toBe(spellings.length)
    expect(logged.text).not.toContain('fetched')
    expect(intranet.hits).toEqual([])
  })

  it('lets a page open no socket around it: WebRTC STUN/TURN over UDP and TCP, WebTransport, preconnect and prefetch reach nothing', async () => {
    let datagrams = 0
    const udp = createSocket('udp4').on('message', () => datagrams++)
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve))
    const connections: string[] = []
    const tcp = createTcpServer((socket) => {
      connections.push(String(socket.remotePort))
      socket.destroy()
    })
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve))
    try {
      const udpPort = udp.address().port
      const tcpPort = (tcp.address() as { port: number }).port
      // The page's own origin is allowed (a secure context: WebTransport exists there); the
      // listeners' ports are not.
      const browser = await connection(['--allowed-origins', `http://127.0.0.1:${site.port}`])
      const page = await call(browser, 'navigate', {
        url: `http://127.0.0.1:${site.port}/egress?udp=${udpPort}&tcp=${tcpPort}`,
      })
      expect(page.isError, page.text).toBe(false)
      const logged = await until(
        () => call(browser, 'console_messages'),
        (result) => result.text.includes('gathering complete') && result.text.includes('webtransport failed'),
      )
      expect(datagrams).toBe(0)
      expect(connections).toEqual([])
      expect(logged.text).toContain('gathering complete')
      expect(logged.text).toContain('webtransport failed')
    } finally {
      udp.close()
      await new Promise<void>((resolve) => tcp.close(() => resolve()))
    }
  })
})
