// Keel's browser server against the two browser servers users pick today, in the same run on the
// same Chromium: @playwright/mcp and chrome-devtools-mcp (versions from their package.json). A
// page corpus served on loopback: a form, the 1 MiB catalogue (7,448 controls) and a real
// documentation page from a Debian package (/usr/share/doc/libjs-underscore/index.html; skipped
// with a message when the package is absent). Per page: navigate, find (where the server has it),
// a click on a control that does not navigate, typing into a field: median time and answer size.
//
//   BROWSER_PEERS_ROUNDS=3 (default) rounds, servers interleaved within each round.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { cataloguePage, formPage } from './pages.mjs'
import { formatBytes, median, RawClient, ratio, table } from './rpc.mjs'

const require = createRequire(import.meta.url)
const UNDERSCORE = '/usr/share/doc/libjs-underscore/index.html'
const ROUNDS = Number(process.env.BROWSER_PEERS_ROUNDS ?? 3)
// The peers' Chromium may reach loopback only.
const LOOPBACK_ONLY = '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'

const packageDir = (name) => dirname(require.resolve(`${name}/package.json`))
const versionOf = (name) => JSON.parse(readFileSync(join(packageDir(name), 'package.json'), 'utf8')).version
const textOf = (message) => (message.result?.content ?? []).map((block) => block.text ?? '').join('\n')
const literal = (value) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** How each server is driven: tool calls and where its refs are in its answers. */
function contenders(ours, chromium, workDir) {
  const playwrightConfig = join(workDir, 'playwright.json')
  writeFileSync(playwrightConfig, JSON.stringify({ browser: { launchOptions: { args: [LOOPBACK_ONLY] } } }))
  // DevTools MCP names its page in every call: the selected one, read from list_pages.
  let pageId = 1
  return [
    {
      label: 'keel',
      ...ours,
      navigate: (url) => ['navigate', { url }],
      find: (text) => ['find', { text }],
      refIn: (text, role, name) => new RegExp(`${role} "${literal(name)}"[^\\n#]*#(e\\d+)`).exec(text)?.[1],
      click: (ref) => ['click', { ref }],
      type: (ref, text) => ['type', { ref, text }],
    },
    {
      label: `playwright-mcp ${versionOf('@playwright/mcp')}`,
      command: process.execPath,
      args: [
        join(packageDir('@playwright/mcp'), 'cli.js'),
        '--executable-path',
        chromium,
        '--headless',
        '--isolated',
        '--no-sandbox',
        '--config',
        playwrightConfig,
        '--output-dir',
        workDir,
      ],
      env: { PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1' },
      navigate: (url) => ['browser_navigate', { url }],
      find: (text) => ['browser_find', { text }],
      // Its navigate writes the snapshot to a file; the model reads it with browser_snapshot.
      snapshot: () => ['browser_snapshot', {}],
      refIn: (text, role, name) =>
        new RegExp(`${role} "${literal(name)}"[^\\n]*\\[ref=([^\\]]+)\\]`).exec(text)?.[1],
      click: (ref) => ['browser_click', { element: 'the control', target: ref }],
      type: (ref, text) => ['browser_type', { element: 'the field', target: ref, text }],
    },
    {
      label: `chrome-devtools-mcp ${versionOf('chrome-devtools-mcp')}`,
      command: process.execPath,
      args: [
        join(packageDir('chrome-devtools-mcp'), 'build/src/bin/chrome-devtools-mcp.js'),
        '--executablePath',
        chromium,
        '--headless',
        '--isolated',
        '--chromeArg=--no-sandbox',
        `--chromeArg=${LOOPBACK_ONLY}`,
      ],
      env: {},
      prepare: async (client) => {
        const { message } = await client.callTool('list_pages', {})
        pageId = Number(/(\d+): [^\n]*\[selected\]/.exec(textOf(message))?.[1] ?? 1)
      },
      navigate: (url) => ['navigate_page', { pageId, type: 'url', url }],
      // No find: the model reads the element's uid in the page snapshot.
      find: undefined,
      snapshot: () => ['take_snapshot', { pageId }],
      refIn: (text, role, name) => new RegExp(`uid=(\\S+) ${role} "${literal(name)}"`).exec(text)?.[1],
      click: (uid) => ['click', { pageId, uid }],
      type: (uid, text) => ['fill', { pageId, uid, value: text }],
    },
  ]
}

/** The corpus: what to find, click and type on each page. */
function corpus(url) {
  const pages = [
    {
      name: 'form',
      url: `${url}/form`,
      click: { role: 'checkbox', name: 'I agree', find: 'I agree' },
      type: { role: 'textbox', name: 'Name', find: 'Name' },
    },
    {
      name: 'catalogue (1 MiB)',
      url: `${url}/catalogue`,
      click: { role: 'button', name: 'Add to cart 150', find: 'Add to cart 150' },
      type: { role: 'searchbox', name: 'Search products', find: 'Search products' },
    },
  ]
  if (existsSync(UNDERSCORE))
    pages.push({
      name: 'underscore docs',
      url: `${url}/underscore/index.html`,
      click: { role: 'link', name: 'reduce', find: 'reduce' },
    })
  else console.log(`(${UNDERSCORE} is absent: install Debian's libjs-underscore to bench a real page)`)
  return pages
}

async function startSite() {
  const catalogue = cataloguePage()
  const form = formPage()
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname
    const body =
      path === '/catalogue'
        ? catalogue
        : path === '/form'
          ? form
          : path === '/underscore/index.html' && existsSync(UNDERSCORE)
            ? readFileSync(UNDERSCORE)
            : undefined
    response.writeHead(body ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' })
    response.end(body ?? 'not found')
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(resolve)
      }),
  }
}

async function timed(client, [name, args]) {
  const started = performance.now()
  const { message } = await client.callTool(name, args, 300_000)
  const ms = performance.now() - started
  const text = textOf(message)
  if (message.error || message.result?.isError) throw new Error(`${name} failed: ${text.slice(0, 300)}`)
  return { ms, bytes: Buffer.byteLength(text), text }
}

/** One round on one page for one server: each measure's time and answer size. */
async function roundOn(server, client, page) {
  const figures = {}
  const navigated = await timed(client, server.navigate(page.url))
  figures.navigate = navigated
  let source = navigated.text
  if (server.snapshot) {
    // The peers answer navigate without the page: its snapshot is the model's next call.
    const snapshot = await timed(client, server.snapshot())
    figures['navigate + snapshot'] = {
      ms: navigated.ms + snapshot.ms,
      bytes: navigated.bytes + snapshot.bytes,
    }
    source = snapshot.text
  }
  const refFor = async (target) => {
    if (server.find) {
      const found = await timed(client, server.find(target.find))
      figures.find ??= found
      return server.refIn(found.text, target.role, target.name)
    }
    return server.refIn(source, target.role, target.name)
  }
  for (const action of ['click', 'type']) {
    const target = page[action]
    if (!target) continue
    const ref = await refFor(target)
    if (!ref) throw new Error(`${server.label}: no ref for ${target.role} "${target.name}" on ${page.name}`)
    figures[action] = await timed(client, action === 'click' ? server.click(ref) : server.type(ref, 'shoes'))
  }
  return figures
}

export async function runPeers({ ours, chromium }) {
  const workDir = mkdtempSync(join(tmpdir(), 'keel-peers-'))
  const site = await startSite()
  const servers = contenders(ours, chromium, workDir)
  const clients = []
  try {
    for (const server of servers) {
      const client = new RawClient(server.command, server.args, { env: server.env })
      await client.initialize()
      await server.prepare?.(client)
      // The browser launches on the first navigate: not part of any figure below.
      await timed(client, server.navigate(`${site.url}/form`))
      clients.push(client)
    }
    const pages = corpus(site.url)
    const results = servers.map(() => Object.fromEntries(pages.map((page) => [page.name, {}])))
    for (let round = 0; round < ROUNDS; round++)
      for (const page of pages)
        for (const [index, server] of servers.entries()) {
          const figures = await roundOn(server, clients[index], page)
          for (const [measure, { ms, bytes }] of Object.entries(figures)) {
            results[index][page.name][measure] ??= { ms: [], bytes: [] }
            const slot = results[index][page.name][measure]
            slot.ms.push(ms)
            slot.bytes.push(bytes)
          }
        }
    report(servers, pages, results)
  } finally {
    for (const client of clients) await client.close().catch(() => undefined)
    await site.close()
    rmSync(workDir, { recursive: true, force: true })
  }
}

function report(servers, pages, results) {
  const cell = (slot) =>
    slot ? `${median(slot.ms).toFixed(0)} ms · ${formatBytes(median(slot.bytes))}` : '—'
  for (const page of pages) {
    console.log(`\n#### browser vs peers: ${page.name} (median of ${ROUNDS}; time · answer size)\n`)
    const measures = ['navigate', 'navigate + snapshot', 'find', 'click', 'type'].filter((measure) =>
      results.some((result) => result[page.name][measure]),
    )
    table(
      ['', ...servers.map((server) => server.label)],
      measures.map((measure) => [measure, ...results.map((result) => cell(result[page.name][measure]))]),
    )
    const [ours, playwright, devtools] = results.map((result) => result[page.name])
    const t = (slot) => (slot ? median(slot.ms) : Number.NaN)
    const lines = []
    for (const measure of ['click', 'type']) {
      if (!ours[measure]) continue
      const fastest = Math.min(t(playwright[measure]), t(devtools[measure]))
      lines.push(`${measure} ${ratio(t(ours[measure]), fastest)} the faster peer's time (goal ≤ 1.00×)`)
    }
    lines.push(`navigate ${ratio(t(ours.navigate), t(playwright.navigate))} Playwright's (goal ≤ 1.00×)`)
    const pwBytes = median(playwright['navigate + snapshot'].bytes)
    lines.push(
      `navigate answer ${(median(ours.navigate.bytes) / pwBytes).toFixed(2)}× Playwright's snapshot bytes (goal ≤ 0.10× on the 1 MiB page)`,
    )
    for (const [name, peer] of [
      ['Playwright', playwright],
      ['DevTools', devtools],
    ])
      lines.push(
        `navigate (snapshot included) ${ratio(t(ours.navigate), t(peer['navigate + snapshot']))} ${name}'s navigate + snapshot`,
      )
    const spread = (slot) =>
      slot ? `${Math.min(...slot.ms).toFixed(0)}–${Math.max(...slot.ms).toFixed(0)} ms` : '—'
    lines.push(
      `navigate spread over the ${ROUNDS} rounds (min–max): ${servers.map((server, index) => `${server.label} ${spread(results[index][page.name].navigate)}`).join(', ')}`,
    )
    console.log(`\n${lines.map((line) => `- ${line}`).join('\n')}`)
  }
}
