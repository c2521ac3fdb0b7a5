import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { type Connection, connectStdio } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cataloguePage, docsPage } from '../../../tools/bench/src/pages.mjs'
import { refOf } from './helpers.js'

// The bench's 1 MiB catalogue (7,448 controls; `main` holds 2,080 children) through the built bin.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const CATALOGUE = cataloguePage()
const DOCS = docsPage(240)
const HISTORY =
  '<!doctype html><html><head><title>History</title></head><body><h1>History</h1><p id="where">start</p>' +
  "<button onclick=\"history.pushState({}, '', '/history/two'); where.textContent = 'two'\">Go to two</button>" +
  '<button onclick="where.textContent = \'clicked\'">Mark</button></body></html>'

// A page that tries to see, spoof or break the watcher of changes from its own scripts.
const SPOOF =
  '<!doctype html><html><head><title>Spoof</title><script>window.__keelWatch = { records: [document.body], observer: { disconnect() {}, takeRecords() { return [] } } };' +
  'window.MutationObserver = function () { throw new Error("no observers") }</script></head><body><h1>Spoof</h1><p id="out">before</p>' +
  "<button onclick=\"out.textContent = typeof window.__keelWatch.records[0] === 'object' ? 'after' : 'seen'\">Change</button></body></html>"

let site: Server
let base = ''
let connection: Connection

async function call(name: string, args: Record<string, unknown>): Promise<string> {
  const result = await connection.client.callTool({ name, arguments: args }, { timeout: 120_000 })
  const text = ((result.content ?? []) as Array<{ text?: string }>)
    .map((block) => block.text ?? '')
    .join('\n')
  if (result.isError) throw new Error(`${name} failed: ${text}`)
  return text
}

beforeAll(async () => {
  site = createServer((request, response) => {
    const body = request.url?.startsWith('/history')
      ? HISTORY
      : request.url?.startsWith('/spoof')
        ? SPOOF
        : request.url?.startsWith('/docs')
          ? DOCS
          : CATALOGUE
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    response.end(body)
  })
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`
  connection = await connectStdio({ command: process.execPath, args: [BIN, '--allow-private-network'] })
}, 60_000)

afterAll(async () => {
  await connection?.close()
  site?.closeAllConnections()
  await new Promise((resolve) => site?.close(resolve))
})

describe('the 1 MiB catalogue page', () => {
  it('answers navigate with a capped snapshot and a cursor that continues it', async () => {
    const first = await call('navigate', { url: `${base}/catalogue` })
    expect(first.length).toBeLessThan(27_000)
    const cursor = /cursor="([^"]+)"/.exec(first)?.[1]
    expect(cursor).toBeDefined()
    const next = await call('snapshot', { cursor })
    expect(next).toContain('(continued)')
    // The second page starts where the first stopped: a product the first did not show.
    const lastShown = Math.max(...[...first.matchAll(/Add to cart (\d+)/g)].map((match) => Number(match[1])))
    expect(next).toContain(`button "Add to cart ${lastShown + 1}"`)
  })

  it('finds "Add to cart 150" and clicks it, answering with what changed only', async () => {
    const found = await call('find', { text: 'Add to cart 150', role: 'button', limit: 5 })
    expect(found).toMatch(/^11 matches for text "Add to cart 150", role button; 1–5 shown:/)
    expect(found).toContain('— in "section 25 see all in section 25 › product 150"')
    expect(found).toMatch(/\[6 more: find with the same query and cursor="\d+~find~5"\.\]/)
    const ref = refOf(found, /button "Add to cart 150"/)
    const clicked = await call('click', { ref })
    expect(clicked).toContain(`Acted on: button "Add to cart 150" #${ref}`)
    expect(clicked).toContain('status: "Cart: 1 (last: product 150)"')
    expect(clicked.length).toBeLessThan(1000)
    const more = await call('find', {
      text: 'Add to cart 150',
      role: 'button',
      limit: 5,
      cursor: /cursor="([^"]+)"/.exec(found)?.[1],
    })
    expect(more).toContain('6–10 shown')
    expect(more).toContain('button "Add to cart 1504"')
  })

  it('pages through the 2,080 children of main by ref and cursor', async () => {
    const top = await call('snapshot', { depth: 1 })
    const main = refOf(top, /main #e/)
    let page = await call('snapshot', { ref: main, depth: 2, max_tokens: 6000 })
    const children: string[] = []
    for (let pages = 0; pages < 40; pages++) {
      const body = /\ntitle: "Catalogue"\n([\s\S]*?)\n<\/page-/.exec(page)?.[1] ?? ''
      children.push(...body.split('\n').filter((line) => /^ [^ ]/.test(line)))
      const cursor = /cursor="([^"]+)"/.exec(page)?.[1]
      if (!cursor) break
      page = await call('snapshot', { cursor, depth: 2, max_tokens: 6000 })
    }
    expect(children).toHaveLength(2080)
    expect(children.filter((line) => line.startsWith(' article')).length).toBe(1782)
    expect(children.at(-7)).toMatch(/^ h2 "Section 297/)
  })

  it('keeps refs across an in-page anchor: the same button still clicks', async () => {
    const found = await call('find', { text: 'Product 150', role: 'link', limit: 1 })
    const link = refOf(found, /link "Product 150"/)
    const button = refOf(
      await call('find', { text: 'Add to cart 150', limit: 1 }),
      /button "Add to cart 150"/,
    )
    const jumped = await call('click', { ref: link })
    expect(jumped).toContain('Moved within the page to')
    expect(jumped).toContain('#p150; refs still hold.')
    expect(jumped).not.toContain('title: "Catalogue"')
    const again = await call('click', { ref: button })
    expect(again).toContain('status: "Cart: 2 (last: product 150)"')
  })

  it('types into a field of the page and reports the field, without a snapshot', async () => {
    const field = refOf(await call('find', { role: 'spinbutton', limit: 1 }), /spinbutton "Quantity"/)
    const typed = await call('type', { ref: field, text: '4' })
    expect(typed).toContain(`Acted on: spinbutton "Quantity" #${field}: "4"`)
    expect(typed.length).toBeLessThan(1000)
  })
})

describe('a documentation page (much text, few elements)', () => {
  it('shows every section once, in order, through its cursor pages, with refs that act', async () => {
    const first = await call('navigate', { url: `${base}/docs` })
    expect(first.length).toBeLessThan(27_000)
    expect(first).toContain('textbox "Filter"')
    expect(first).toMatch(/ {2}link "fn240" #e\d+/)
    let page = first
    const sections: number[] = []
    for (let pages = 0; pages < 30; pages++) {
      sections.push(...[...page.matchAll(/code: "_\.fn(\d+)\(list/g)].map((match) => Number(match[1])))
      const cursor = /cursor="([^"]+)"/.exec(page)?.[1]
      if (!cursor) break
      page = await call('snapshot', { cursor })
    }
    expect(sections).toEqual(Array.from({ length: 240 }, (_, index) => index + 1))
    // The last section's prose and links, read inside a subtree, are all there.
    expect(page).toContain('"Alias: fn240All Iterates over a list of elements')
    expect(page).toMatch(/link "notes on fn240" #e\d+/)
    const jumped = await call('click', { ref: refOf(first, /link "fn120"/) })
    expect(jumped).toContain('#fn120; refs still hold.')
  })
})

describe('answers after an action', () => {
  it('keeps refs across history.pushState, and answers with nothing or the full page on request', async () => {
    const page = await call('navigate', { url: `${base}/history` })
    const go = refOf(page, /button "Go to two"/)
    const mark = refOf(page, /button "Mark"/)
    const pushed = await call('click', { ref: go })
    expect(pushed).toContain('/history/two; refs still hold.')
    expect(pushed).toContain('"two"')
    const quiet = await call('click', { ref: mark, snapshot: 'none' })
    expect(quiet).toMatch(/^Done\. Tab t1 \(.*\/history\/two\)$/)
    const full = await call('click', { ref: mark, snapshot: 'full' })
    expect(full).toContain('h1 "History"')
    expect(full).toContain('"clicked"')
  })
})

describe('the watcher of changes', () => {
  it('lives where the page cannot reach it: a page replacing MutationObserver or its globals changes nothing', async () => {
    const page = await call('navigate', { url: `${base}/spoof` })
    const clicked = await call('click', { ref: refOf(page, /button "Change"/) })
    expect(clicked).toContain('Changed part of the page:')
    expect(clicked).toContain('"after"')
    expect(clicked).not.toContain('h1 "Spoof"')
  })
})
