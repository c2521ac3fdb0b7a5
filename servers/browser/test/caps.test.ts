import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Connection } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Fixtures, startFixtures } from './fixtures.js'
import { call, connect, refOf, until } from './helpers.js'

// The optional capabilities (--caps vision, downloads) on one connection and one browser.
let fixtures: Fixtures
let connection: Connection
let downloadDir: string
let outputDir: string

beforeAll(async () => {
  fixtures = await startFixtures()
  downloadDir = await mkdtemp(join(tmpdir(), 'keel-downloads-'))
  outputDir = join(await mkdtemp(join(tmpdir(), 'keel-output-')), 'out')
  connection = await connect([
    '--allow-private-network',
    '--caps',
    'vision,downloads,network,devtools,emulate',
    '--download-dir',
    downloadDir,
    '--output-dir',
    outputDir,
  ])
})

afterAll(async () => {
  await connection?.close()
  await fixtures?.close()
  await rm(downloadDir, { recursive: true, force: true })
  await rm(join(outputDir, '..'), { recursive: true, force: true })
})

/** The centre of the first element `find` gives for `text`, from its bounding box. */
async function centreOf(text: string): Promise<{ x: number; y: number }> {
  const found = await call(connection, 'find', { text, boxes: true, limit: 1 })
  const box = /\[box (\d+),(\d+),(\d+),(\d+)\]/.exec(found.text)
  if (!box) throw new Error(`no box in ${found.text}`)
  const [x, y, width, height] = box.slice(1).map(Number) as [number, number, number, number]
  return { x: x + width / 2, y: y + height / 2 }
}

describe('--caps vision', () => {
  it('clicks and types at coordinates read from bounding boxes', async () => {
    await call(connection, 'navigate', { url: `${fixtures.url}/counter` })
    const boxed = await call(connection, 'snapshot', { boxes: true })
    const box = /button "Increment" #e\d+ \[box (\d+),(\d+),(\d+),(\d+)\]/.exec(boxed.text)
    expect(box).not.toBeNull()
    const [x, y, width, height] = (box ?? []).slice(1).map(Number) as [number, number, number, number]
    expect(await centreOf('Increment')).toEqual({ x: x + width / 2, y: y + height / 2 })
    const clicked = await call(connection, 'click_at', await centreOf('Increment'))
    expect(clicked.isError, clicked.text).toBe(false)
    expect(clicked.text).toContain('Clicked at')
    expect(clicked.text).toContain('"Count: 1"')
    await call(connection, 'navigate', { url: `${fixtures.url}/form` })
    const typed = await call(connection, 'type_at', { ...(await centreOf('Name')), text: 'Ada' })
    expect(typed.isError, typed.text).toBe(false)
    const after = await call(connection, 'snapshot')
    expect(after.text).toContain('textbox "Name"')
    expect(after.text).toMatch(/textbox "Name" #e\d+: "Ada"/)
  })
})

describe('--caps downloads', () => {
  it("lists the session's downloads and returns one, and refuses any other name", async () => {
    const empty = await call(connection, 'downloads')
    expect(empty.text).toBe('No downloads yet.')
    const page = await call(connection, 'navigate', { url: `${fixtures.url}/download-page` })
    await call(connection, 'click', { ref: refOf(page.text, /link "Get file"/) })
    const listed = await until(
      () => call(connection, 'downloads'),
      (result) => /data\.bin 11 B /.test(result.text),
    )
    expect(listed.text).toMatch(/data\.bin 11 B \d{4}-/)
    const file = await call(connection, 'downloads', { name: 'data.bin' })
    expect(file.isError).toBe(false)
    expect(file.text).toContain('data.bin (11 B)')
    expect(file.text).toContain('binary data')
    // Saved in a folder of this connection's own, inside the download directory.
    const folders = await readdir(downloadDir)
    expect(folders).toHaveLength(1)
    expect(folders[0]).toMatch(/^session-/)
    for (const name of ['../data.bin', '/etc/passwd', '..', 'other.txt']) {
      const refused = await call(connection, 'downloads', { name })
      expect(refused.isError, name).toBe(true)
      expect(refused.text).toMatch(/^not_found: No download named/)
    }
  })
})

describe('emulate', () => {
  it('emulates dark mode, reduced motion, a timezone, a locale and a phone, and resets them', async () => {
    await call(connection, 'navigate', { url: `${fixtures.url}/env` })
    const set = await call(connection, 'emulate', {
      device: 'phone',
      color_scheme: 'dark',
      reduced_motion: true,
      timezone: 'Asia/Tokyo',
      locale: 'de-DE',
      cpu_slowdown: 2,
    })
    expect(set.isError, set.text).toBe(false)
    expect(set.text).toContain('viewport 393x852 (mobile, touch)')
    const after = await call(connection, 'reload')
    expect(after.text).toContain('dark=true motion=true tz=Asia/Tokyo lang=de-DE width=393')
    const bad = await call(connection, 'emulate', { timezone: 'Mars/Olympus' })
    expect(bad.isError).toBe(true)
    expect(bad.text).toMatch(/^invalid_argument: Unknown timezone "Mars\/Olympus"/)
    await call(connection, 'emulate', { reset: true })
    const plain = await call(connection, 'reload')
    expect(plain.text).toContain('dark=false motion=false')
    expect(plain.text).not.toContain('width=393')
  })
})

describe('--caps network', () => {
  it('mocks and blocks requests by pattern, and shows one request with its headers and bodies', async () => {
    const rules = await call(connection, 'route', {
      pattern: '*/api/*',
      action: 'fulfill',
      content_type: 'application/json',
      body: '{"mocked":true}',
    })
    expect(rules.text).toContain('fulfill */api/* → 200 application/json')
    await call(connection, 'route', { pattern: '*.png', action: 'block' })
    await call(connection, 'navigate', { url: `${fixtures.url}/fetcher` })
    const shown = await until(
      () => call(connection, 'snapshot'),
      (result) => result.text.includes('got {'),
    )
    expect(shown.text).toContain('"got {\\"mocked\\":true}"')
    const list = await until(
      () => call(connection, 'network_requests'),
      (result) => result.text.includes('/api/data') && result.text.includes('pixel.png'),
    )
    expect(list.text).toMatch(
      /\[\d+\] GET http:\/\/127\.0\.0\.1:\d+\/pixel\.png failed: net::ERR_BLOCKED_BY_CLIENT/,
    )
    const id = Number(/\[(\d+)\] POST http:\/\/127\.0\.0\.1:\d+\/api\/data 200/.exec(list.text)?.[1])
    const detail = await call(connection, 'network_request', { id })
    expect(detail.isError, detail.text).toBe(false)
    expect(detail.text).toContain('authorization: [redacted]')
    expect(detail.text).not.toContain('s3cret')
    expect(detail.text).toContain('request body (3 chars):\nq=1')
    expect(detail.text).toContain('response body (15 chars):\n{"mocked":true}')
    const saved = await call(connection, 'network_request', { id, to_file: true })
    const file = /written to (\S+)/.exec(saved.text)?.[1] ?? ''
    expect(file.startsWith(`${outputDir}/response-`)).toBe(true)
    expect(await readFile(file, 'utf8')).toBe('{"mocked":true}')
    const removed = await call(connection, 'route', { pattern: '*/api/*', action: 'remove' })
    expect(removed.text).toBe('Rules (first match wins):\nblock *.png')
    const missing = await call(connection, 'network_request', { id: 99_999 })
    expect(missing.text).toMatch(/^not_found: No request \[99999\]/)
  })
})

describe('--caps network: what a route covers', () => {
  it("applies routes to a dedicated worker's requests and an out-of-process iframe's, and lets every one of them settle", async () => {
    await call(connection, 'route', {
      pattern: '*/api/*',
      action: 'fulfill',
      content_type: 'application/json',
      body: '{"mocked":true}',
    })
    try {
      const from = fixtures.hits.length
      const hits = () => fixtures.hits.slice(from)
      await call(connection, 'navigate', { url: `${fixtures.url}/workers?n=200` })
      // 200 requests one after another from the worker: each is paused on the page's session and
      // must be answered there (a single one left paused would hold the worker for good).
      const shown = await until(
        () => call(connection, 'snapshot'),
        (result) => result.text.includes('worker 200/200'),
      )
      expect(shown.text).toContain('worker 200/200')
      await until(
        async () => hits(),
        (seen) => seen.some((hit) => hit.startsWith('/seen?frame-')),
      )
      expect(hits()).toContain('/worker-frame')
      expect(hits()).toContain('/seen?frame-mocked')
      // The mock answered every request it matched: none reached the site.
      expect(hits().filter((hit) => hit.startsWith('/api/'))).toEqual([])
    } finally {
      await call(connection, 'route', { pattern: '*/api/*', action: 'remove' })
    }
  })
})

describe('--output-dir', () => {
  it('writes snapshots, screenshots and PDFs to files it names, and says where', async () => {
    await call(connection, 'navigate', { url: `${fixtures.url}/form` })
    const snapshot = await call(connection, 'snapshot', { to_file: true })
    const path = /written to (\S+) \((\d+) bytes, \d+ refs\)/.exec(snapshot.text)
    expect(path?.[1]?.startsWith(`${outputDir}/snapshot-`)).toBe(true)
    const saved = await readFile(path?.[1] ?? '', 'utf8')
    expect(saved).toMatch(/textbox "Name" #e\d+/)
    expect(Buffer.byteLength(saved)).toBe(Number(path?.[2]))
    const shot = await call(connection, 'take_screenshot', { to_file: true })
    const image = /written to (\S+) /.exec(shot.text)?.[1] ?? ''
    expect((await readFile(image)).subarray(1, 4).toString()).toBe('PNG')
    const files = await readdir(outputDir)
    expect(files.filter((name) => /^(snapshot|screenshot)-/.test(name))).toHaveLength(2)
  })

  it('refuses to_file without an output directory, before touching a browser', async () => {
    const plain = await connect(['--allow-private-network'])
    try {
      const refused = await call(plain, 'snapshot', { to_file: true })
      expect(refused.isError).toBe(true)
      expect(refused.text).toMatch(/^invalid_argument: to_file needs an output directory/)
    } finally {
      await plain.close()
    }
  })
})

describe('storage state', () => {
  it('saves cookies and localStorage to a file that a later server starts from', async () => {
    await call(connection, 'navigate', { url: `${fixtures.url}/cookie?set=alpha` })
    await call(connection, 'navigate', { url: `${fixtures.url}/store?set` })
    const saved = await call(connection, 'save_storage_state')
    expect(saved.isError, saved.text).toBe(false)
    const path = /to (\S+storage-state-\S+\.json) /.exec(saved.text)?.[1] ?? ''
    expect(path.startsWith(outputDir)).toBe(true)
    const later = await connect(['--allow-private-network', '--storage-state', path])
    try {
      const cookie = await call(later, 'navigate', { url: `${fixtures.url}/cookie` })
      expect(cookie.text).toContain('cookie: k=alpha')
      const store = await call(later, 'navigate', { url: `${fixtures.url}/store` })
      expect(store.text).toContain('"theme=dark"')
    } finally {
      await later.close()
    }
    const fresh = await connect(['--allow-private-network'])
    try {
      expect((await call(fresh, 'navigate', { url: `${fixtures.url}/store` })).text).toContain('"theme=null"')
    } finally {
      await fresh.close()
    }
  })
})

describe('storage state of origins with no tab open', () => {
  it('saves the localStorage of every origin the session showed, open or not, and restores each', async () => {
    const second = await startFixtures()
    const session = await connect(['--allow-private-network', '--output-dir', outputDir])
    try {
      await call(session, 'navigate', { url: `${fixtures.url}/store?set=dark` })
      // The same tab moves on: the first origin has no tab open when the state is saved.
      await call(session, 'navigate', { url: `${second.url}/store?set=light` })
      const tabs = await call(session, 'list_tabs')
      expect(tabs.text).not.toContain(fixtures.url)
      const saved = await call(session, 'save_storage_state')
      expect(saved.isError, saved.text).toBe(false)
      expect(saved.structured?.origins).toBe(2)
      const path = /to (\S+storage-state-\S+\.json) /.exec(saved.text)?.[1] ?? ''
      const state = JSON.parse(await readFile(path, 'utf8')) as {
        origins: Array<{ origin: string; localStorage: Array<{ name: string; value: string }> }>
      }
      expect(state.origins.map((entry) => [entry.origin, entry.localStorage])).toEqual(
        expect.arrayContaining([
          [fixtures.url, [{ name: 'theme', value: 'dark' }]],
          [second.url, [{ name: 'theme', value: 'light' }]],
        ]),
      )
      // Reading an origin with no tab open asked its server for nothing.
      expect(fixtures.hits.filter((hit) => hit === '/')).toEqual([])
      const later = await connect([
        '--allow-private-network',
        '--output-dir',
        outputDir,
        '--storage-state',
        path,
      ])
      try {
        expect((await call(later, 'navigate', { url: `${second.url}/store` })).text).toContain(
          '"theme=light"',
        )
        // Saved again before the first origin is visited: what was restored is kept.
        const again = await call(later, 'save_storage_state')
        expect(again.structured?.origins).toBe(2)
        expect((await call(later, 'navigate', { url: `${fixtures.url}/store` })).text).toContain(
          '"theme=dark"',
        )
      } finally {
        await later.close()
      }
    } finally {
      await session.close()
      await second.close()
    }
  })
})

describe('--caps devtools', () => {
  it('traces a click that blocks the main thread and reports its long task, with the trace in a file', async () => {
    const page = await call(connection, 'navigate', { url: `${fixtures.url}/busy` })
    const started = await call(connection, 'performance_trace', { action: 'start' })
    expect(started.text).toContain('Tracing tab')
    await call(connection, 'click', { ref: refOf(page.text, /button "Block"/) })
    const report = await call(connection, 'performance_trace', { action: 'stop' })
    expect(report.isError, report.text).toBe(false)
    const longest = Number(
      /Long tasks \(> 50 ms on the main thread\): \d+, longest ([\d.]+) ms/.exec(report.text)?.[1],
    )
    expect(longest).toBeGreaterThanOrEqual(240)
    expect(report.text).toMatch(/The whole trace: \S+trace-\S+\.json/)
    const again = await call(connection, 'performance_trace', { action: 'stop' })
    expect(again.text).toMatch(/^not_found: No trace is running/)
  })
})
