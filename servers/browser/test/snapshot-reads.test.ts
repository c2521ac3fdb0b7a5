import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import puppeteer, { type Browser } from 'puppeteer-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cataloguePage } from '../../../tools/bench/src/pages.mjs'
import { takeSnapshot } from '../src/lib/page-tree.js'
import { Tab } from '../src/lib/tab.js'

// How much of the accessibility tree a capped snapshot reads, counted in Chromium's own answers
// (the tab's DevTools session, real Chromium, the bench's 1 MiB catalogue): about what the render
// shows, not several times it.
const CHROMIUM = process.env.PUPPETEER_EXECUTABLE_PATH ?? '/usr/bin/chromium'

let site: Server
let browser: Browser
let base = ''

beforeAll(async () => {
  const catalogue = cataloguePage()
  site = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    response.end(catalogue)
  })
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    pipe: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  site?.closeAllConnections()
  await new Promise((resolve) => site?.close(resolve))
})

describe('a capped snapshot of the 1 MiB catalogue', () => {
  it('reads about what it shows: the last reads sent do not bring several times the budget', async () => {
    const page = await browser.newPage()
    const tab = await Tab.attach('t1', page, { check: async () => undefined } as never, () => undefined)
    await page.goto(`${base}/`, { waitUntil: 'load' })
    let read = 0
    const send = tab.cdp.send.bind(tab.cdp)
    tab.cdp.send = (async (method: string, params?: object) => {
      const answer = (await send(method as never, params as never)) as { nodes?: unknown[] }
      if (method.startsWith('Accessibility.')) read += answer.nodes?.length ?? 0
      return answer
    }) as typeof tab.cdp.send
    const snapshot = await takeSnapshot(tab, { maxChars: 25_000 })
    expect(snapshot.truncated).toBe(true)
    expect(snapshot.text.length).toBeGreaterThan(24_000)
    expect(snapshot.text).toContain('button "Add to cart 1"')
    // Its render needs about 3,300 nodes; counting only each node's children, the 24 sections
    // sent at once when `main` was read brought 156 nodes each, and 6,931 were read.
    expect(read).toBeGreaterThan(3000)
    expect(read).toBeLessThan(5000)
  }, 60_000)
})
