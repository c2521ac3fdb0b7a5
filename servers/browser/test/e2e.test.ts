import { execFileSync } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  connectHttp,
  connectStdio,
  readAuditLines,
  runProcess,
  spawnHttp,
  spawnRaw,
  startOtlpReceiver,
} from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Fixtures, startFixtures } from './fixtures.js'
import { browseFlow, refOf } from './helpers.js'

/** The built bin (`pnpm run build` first): core, SDK and zod inlined; puppeteer-core external, loaded on first use. */
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
let fixtures: Fixtures
beforeAll(async () => {
  fixtures = await startFixtures()
})
afterAll(async () => {
  await fixtures?.close()
})

/** Chromium processes whose parent is `pid` (the browser's main process). */
function browserChildren(pid: number): number[] {
  const table = execFileSync('ps', ['-eo', 'pid=,ppid=,comm='], { encoding: 'utf8' })
  return table
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([, parent, command]) => Number(parent) === pid && /chrom/i.test(command ?? ''))
    .map(([child]) => Number(child))
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const textOf = (result: Record<string, any>) =>
  ((result.content ?? []) as Array<{ type: string; text?: string }>)
    .map((block) => block.text ?? '')
    .join('\n')

describe.each(['v2', 'v1'] as const)('the built bin over stdio with the %s client', (generation) => {
  it('lists tools without starting a browser, then browses', async () => {
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN, '--allow-private-network'],
      generation,
    })
    try {
      const names = (await connection.client.listTools()).tools.map((tool) => tool.name)
      expect(names).toContain('navigate')
      expect(names).not.toContain('evaluate')
      const navigated = await connection.client.callTool({
        name: 'navigate',
        arguments: { url: `${fixtures.url}/form` },
      })
      expect(navigated.isError).toBeFalsy()
      expect(textOf(navigated)).toMatch(/textbox "Name" #e\d+/)
      expect(navigated.structuredContent).toMatchObject({ tab: 't1', url: `${fixtures.url}/form` })
    } finally {
      await connection.close()
    }
  })
})

describe('the built bin over stdio with a 2026-07-28 client', () => {
  it('keeps the connection’s own session: no handle is needed or returned', async () => {
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN, '--allow-private-network'],
      era: 'modern',
    })
    try {
      const navigated = await connection.client.callTool({
        name: 'navigate',
        arguments: { url: `${fixtures.url}/form` },
      })
      expect(navigated.isError).toBeFalsy()
      expect(navigated.structuredContent?.session).toBeUndefined()
      await browseFlow(connection, fixtures.url)
    } finally {
      await connection.close()
    }
  })
})

describe.each(['v2', 'v1'] as const)('the built bin over HTTP with the %s client', (generation) => {
  it('gives every HTTP session its own browser context: cookies are never shared', async () => {
    const server = await spawnHttp(process.execPath, [BIN, '--allow-private-network'])
    const first = await connectHttp(server.url, { generation })
    const second = await connectHttp(server.url, { generation })
    try {
      const navigate = (connection: typeof first, path: string) =>
        connection.client.callTool({ name: 'navigate', arguments: { url: `${fixtures.url}${path}` } })
      await navigate(first, '/cookie?set=alpha')
      expect(textOf(await navigate(first, '/cookie'))).toContain('cookie: k=alpha')
      expect(textOf(await navigate(second, '/cookie'))).toContain('cookie: none')
      await navigate(second, '/cookie?set=beta')
      expect(textOf(await navigate(first, '/cookie'))).toContain('cookie: k=alpha')
    } finally {
      await first.close()
      await second.close()
      await server.close()
    }
  })
})

describe('the built bin over Streamable HTTP: a multi-step flow in both generations', () => {
  it('a 2026-07-28 client (no session) carries the session handle from call to call', async () => {
    const server = await spawnHttp(process.execPath, [BIN, '--allow-private-network'])
    const connection = await connectHttp(server.url, { era: 'modern' })
    try {
      const navigated = await connection.client.callTool({
        name: 'navigate',
        arguments: { url: `${fixtures.url}/form` },
      })
      const session = navigated.structuredContent?.session as string
      expect(session).toMatch(/^session\./)
      expect(textOf(navigated)).toContain(session)
      await browseFlow(connection, fixtures.url, session)
      const closed = await connection.client.callTool({ name: 'close_session', arguments: { session } })
      expect(closed.isError).toBeFalsy()
    } finally {
      await connection.close()
      await server.close()
    }
  })

  it('a 2025-era client (v1, initialize) needs no handle: its session is the connection', async () => {
    const server = await spawnHttp(process.execPath, [BIN, '--allow-private-network'])
    const connection = await connectHttp(server.url, { generation: 'v1' })
    try {
      const navigated = await connection.client.callTool({
        name: 'navigate',
        arguments: { url: `${fixtures.url}/form` },
      })
      expect(navigated.structuredContent?.session).toBeUndefined()
      await browseFlow(connection, fixtures.url)
    } finally {
      await connection.close()
      await server.close()
    }
  })
})

describe('the audit log', () => {
  it('records where each call went and what it acted on, never typed text or the session handle', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-browser-audit-'))
    const file = join(dir, 'audit.jsonl')
    const server = await spawnHttp(process.execPath, [BIN, '--allow-private-network', '--audit-log', file])
    const connection = await connectHttp(server.url, { era: 'modern' })
    try {
      const navigated = await connection.client.callTool({
        name: 'navigate',
        arguments: { url: `${fixtures.url}/form?access_token=q8Zr2kLm5Nx7` },
      })
      const session = navigated.structuredContent?.session as string
      const snapshot = await connection.client.callTool({ name: 'snapshot', arguments: { session } })
      const ref = refOf(textOf(snapshot), /textbox "Name"/)
      const typed = await connection.client.callTool({
        name: 'type',
        arguments: { session, ref, text: 'Ada from the night shift' },
      })
      expect(typed.isError, textOf(typed)).toBeFalsy()
      const lines = await readAuditLines(file, 3)
      const text = await readFile(file, 'utf8')
      expect(lines.map((line) => [line.tool, line.outcome, line.arguments])).toEqual([
        ['navigate', 'ok', { url: `${fixtures.url}/form?access_token=[redacted]` }],
        ['snapshot', 'ok', undefined],
        ['type', 'ok', { ref }],
      ])
      // The three calls are one browser session's: its handle, hashed, ties them together.
      expect(lines.map((line) => line.handle)).toEqual(Array(3).fill(expect.stringMatching(/^[0-9a-f]{16}$/)))
      expect(new Set(lines.map((line) => line.handle)).size).toBe(1)
      for (const secret of ['q8Zr2kLm5Nx7', 'night shift', session]) expect(text).not.toContain(secret)
    } finally {
      await connection.close()
      await server.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('tracing', () => {
  it('records the launch and each action as the browser work of the call that asked for it', async () => {
    const receiver = await startOtlpReceiver()
    try {
      const raw = spawnRaw(
        process.execPath,
        [BIN, '--allow-private-network', '--otel-endpoint', receiver.url],
        {
          env: { OTEL_METRIC_EXPORT_INTERVAL: '60000' },
        },
      )
      await raw.initialize()
      const navigated = await raw.request('tools/call', {
        name: 'navigate',
        arguments: { url: `${fixtures.url}/form` },
      })
      const text = textOf(navigated.result ?? {})
      const clicked = await raw.request('tools/call', {
        name: 'click',
        arguments: { ref: refOf(text, /button "Send"/) },
      })
      expect(clicked.result?.isError ?? false, textOf(clicked.result ?? {})).toBe(false)
      // The spans and metrics leave at shutdown, if not before.
      expect((await raw.end()).code).toBe(0)
      const named = (name: string) => receiver.spans.find((span) => span.name === name)
      const names = receiver.spans.map((span) => span.name).join(', ')
      const navigate = named('tools/call navigate')
      const click = named('tools/call click')
      expect(navigate, names).toBeDefined()
      expect(named('browser launch'), names).toMatchObject({
        kind: 3,
        parentSpanId: navigate?.spanId,
        attributes: { 'keel.upstream.system': 'browser' },
      })
      expect(named('browser navigate'), names).toMatchObject({
        kind: 3,
        parentSpanId: navigate?.spanId,
        attributes: { 'keel.upstream.system': 'browser', 'keel.browser.tab': 't1' },
      })
      expect(named('browser click'), names).toMatchObject({
        kind: 3,
        parentSpanId: click?.spanId,
        attributes: { 'keel.browser.tab': 't1' },
      })
      const upstream = receiver.histograms.get('keel.upstream.duration') ?? []
      expect(
        upstream
          .filter((point) => point.attributes['keel.upstream.system'] === 'browser')
          .reduce((sum, point) => sum + point.count, 0),
      ).toBe(3)
    } finally {
      await receiver.close()
    }
  })
})

describe('the built bin over stateless HTTP', () => {
  it('opens a session of its own for each navigate that carries no session handle', async () => {
    const server = await spawnHttp(process.execPath, [BIN, '--allow-private-network', '--stateless'])
    const connection = await connectHttp(server.url)
    try {
      for (const path of ['/cookie?set=gamma', '/cookie']) {
        const result = await connection.client.callTool({
          name: 'navigate',
          arguments: { url: `${fixtures.url}${path}` },
        })
        expect(result.isError).toBeFalsy()
        // The client does not pass the handle on: each navigate starts a new session, so the cookie
        // set by the first is not there for the second.
        expect(textOf(result)).toContain('cookie: none')
        expect(result.structuredContent).toMatchObject({ session: expect.stringMatching(/^session\./) })
      }
    } finally {
      await connection.close()
      await server.close()
    }
  })
})

describe('the process', () => {
  it('does not start a browser to answer initialize and tools/list', async () => {
    const raw = spawnRaw(process.execPath, [BIN])
    await raw.initialize()
    await raw.request('tools/list')
    expect(browserChildren(raw.child.pid ?? -1)).toEqual([])
    expect((await raw.end()).code).toBe(0)
  })

  it('exits when stdin closes and leaves no Chromium process behind', async () => {
    const raw = spawnRaw(process.execPath, [BIN, '--allow-private-network'])
    await raw.initialize()
    const response = await raw.request('tools/call', {
      name: 'navigate',
      arguments: { url: `${fixtures.url}/` },
    })
    expect(response.result.isError).toBeFalsy()
    const browsers = browserChildren(raw.child.pid ?? -1)
    expect(browsers).toHaveLength(1)
    const ended = await raw.end()
    expect(ended.code).toBe(0)
    for (const pid of browsers) expect(alive(pid)).toBe(false)
    for (const line of raw.lines) expect(JSON.parse(line).jsonrpc).toBe('2.0')
  })

  it('exits on SIGTERM and leaves no Chromium process behind', async () => {
    const raw = spawnRaw(process.execPath, [BIN, '--allow-private-network'])
    await raw.initialize()
    await raw.request('tools/call', { name: 'navigate', arguments: { url: `${fixtures.url}/` } })
    const browsers = browserChildren(raw.child.pid ?? -1)
    expect(browsers).toHaveLength(1)
    const exited = new Promise<number | null>((resolve) => raw.child.once('exit', (code) => resolve(code)))
    raw.child.kill('SIGTERM')
    expect(await exited).toBe(0)
    for (const pid of browsers) expect(alive(pid)).toBe(false)
  })

  it('starts the browser again after it was killed mid-session, and says so', async () => {
    const raw = spawnRaw(process.execPath, [BIN, '--allow-private-network'])
    try {
      await raw.initialize()
      const before = await raw.request('tools/call', {
        name: 'navigate',
        arguments: { url: `${fixtures.url}/counter` },
      })
      const oldRef = refOf(before.result.content[0].text as string, /button "Increment"/)
      const [browser] = browserChildren(raw.child.pid ?? -1)
      expect(browser).toBeDefined()
      process.kill(browser as number, 'SIGKILL')
      // Wait until the server has noticed (its log says so), then call again.
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
        if (raw.stderr.join('').includes('The browser stopped')) break
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const again = await raw.request('tools/call', {
        name: 'navigate',
        arguments: { url: `${fixtures.url}/counter` },
      })
      expect(again.result.isError).toBeFalsy()
      const text = again.result.content[0].text as string
      expect(text).toContain('The browser had stopped (crashed or killed) and was started again')
      expect(text).toContain('h1 "Counter"')
      expect(browserChildren(raw.child.pid ?? -1)).toHaveLength(1)
      // The new browser goes on numbering: a ref kept from before the crash names no element now,
      // so it is refused rather than landing on whatever the new page numbered the same.
      expect(refOf(text, /button "Increment"/)).not.toBe(oldRef)
      const stale = await raw.request('tools/call', { name: 'click', arguments: { ref: oldRef } })
      expect(stale.result.isError).toBe(true)
      expect(stale.result.content[0].text).toMatch(/take a new snapshot/i)
    } finally {
      await raw.end()
    }
  })

  it('keeps a --user-data-dir profile after exit (only the temporary one is removed)', async () => {
    const profile = await mkdtemp(join(tmpdir(), 'keel-profile-'))
    try {
      const raw = spawnRaw(process.execPath, [BIN, '--allow-private-network', '--user-data-dir', profile])
      await raw.initialize()
      const response = await raw.request('tools/call', {
        name: 'navigate',
        arguments: { url: `${fixtures.url}/cookie?set=kept` },
      })
      expect(response.result.isError).toBeFalsy()
      expect((await raw.end()).code).toBe(0)
      expect(await readdir(profile)).toContain('Default')
    } finally {
      await rm(profile, { recursive: true, force: true })
    }
  })

  it('says how to get a browser when none is found, and stays up', async () => {
    const raw = spawnRaw(process.execPath, [BIN], {
      env: { PUPPETEER_EXECUTABLE_PATH: '/nonexistent/chrome' },
    })
    try {
      await raw.initialize()
      const response = await raw.request('tools/call', { name: 'new_tab', arguments: {} })
      expect(response.result.isError).toBe(true)
      const text = response.result.content[0].text as string
      expect(text).toContain('unavailable: No browser at --executable-path')
      expect(text).toContain('npx @puppeteer/browsers install chrome@stable')
      const listed = await raw.request('tools/list')
      expect(listed.result.tools.length).toBeGreaterThan(10)
    } finally {
      await raw.end()
    }
  })

  it('keeps the browser site list and the HTTP Origin check apart', async () => {
    const help = await runProcess(process.execPath, [BIN, '--help'])
    expect(help.stdout).toMatch(/--allowed-origins <a,b>\s+The only origins the browser may reach/)
    expect(help.stdout).toMatch(/--blocked-origins <a,b>/)
    expect(help.stdout).toMatch(/--http-allowed-origins <a,b>\s+Extra Origins accepted on HTTP\./)
    const initialize = (url: string, origin: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          origin,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 't', version: '1' },
          },
        }),
      })
    // The browser's list opens sites to the browser, never the server's front door to web pages.
    const sitesOnly = await spawnHttp(process.execPath, [BIN, '--allowed-origins', 'https://app.test'])
    try {
      expect((await initialize(sitesOnly.url, 'https://app.test')).status).toBe(403)
    } finally {
      await sitesOnly.close()
    }
    const front = await spawnHttp(process.execPath, [BIN, '--http-allowed-origins', 'https://app.test'])
    try {
      expect((await initialize(front.url, 'https://app.test')).status).toBe(200)
      expect((await initialize(front.url, 'https://other.test')).status).toBe(403)
    } finally {
      await front.close()
    }
  })

  it('refuses bad configuration in one line', async () => {
    for (const args of [
      ['--viewport', 'huge'],
      ['--caps', 'launch'],
      ['--caps', 'downloads'],
      ['--storage-state', '/nonexistent/state.json'],
      ['--allowed-origins', 'https://example.com/path'],
    ]) {
      const result = await runProcess(process.execPath, [BIN, ...args])
      expect(result.code, args.join(' ')).toBe(1)
      expect(result.stderr.trim().split('\n')).toHaveLength(1)
    }
  })
})
