// @keel-mcp/server-browser against the reference @modelcontextprotocol/server-puppeteer 2025.5.12,
// both driving the same Chromium (/usr/bin/chromium, or PUPPETEER_EXECUTABLE_PATH) against pages
// served on loopback. Interleaved medians; the ratios are what count.
//
// The common per-server figures come from the harness (compareServers): cold start to tools/list
// (neither server launches the browser for it), catalogue, a warm click on an already loaded page
// (p50/p99, CPU per call of the server and Chromium together), 8 clicks in flight, peak RSS of the
// process tree and exit after use (browser running). Then the domain figures: first navigate
// (browser launch included) and snapshot size against the page's HTML.
//
//   pnpm --filter @keel-mcp/bench bench:browser       (build servers/browser first)
//   BROWSER_BENCH_CALLS=200 node src/main.mjs browser  (sequential clicks per round, default 100)
//   BENCH_PEERS=0 skips the comparison with Playwright MCP and DevTools MCP (browser-peers-bench.mjs)
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runPeers } from './browser-peers-bench.mjs'
import { floorRow } from './floor.mjs'
import { compareServers, concurrent } from './harness.mjs'
import { formatBytes, median, RawClient, ratio, table } from './rpc.mjs'

const repo = fileURLToPath(new URL('../../../', import.meta.url))
// BENCH_BROWSER_SERVER: another build of the server (a copy of dist/ kept while the source changes).
const OURS = process.env.BENCH_BROWSER_SERVER ?? join(repo, 'servers/browser/dist/index.js')
const REFERENCE = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-puppeteer/package.json')),
  'dist/index.js',
)
const CHROMIUM = process.env.PUPPETEER_EXECUTABLE_PATH ?? '/usr/bin/chromium'
const CALLS = Number(process.env.BROWSER_BENCH_CALLS ?? 100)
const ROOT = process.getuid?.() === 0

/** A product listing as sites ship it: utility classes, inline SVG icons, a state blob, styles. */
export function realisticPage(count) {
  const icon =
    '<svg xmlns="http://www.w3.org/2000/svg" class="h-4 w-4 text-gray-400" viewBox="0 0 20 20" fill="currentColor" aria-hidden="true"><path fill-rule="evenodd" d="M10 18a8 8 0 100-16 8 8 0 000 16zm3.707-9.293a1 1 0 00-1.414-1.414L9 10.586 7.707 9.293a1 1 0 00-1.414 1.414l2 2a1 1 0 001.414 0l4-4z" clip-rule="evenodd"/></svg>'
  const cards = []
  const state = []
  for (let index = 0; index < count; index++) {
    state.push({ id: index, sku: `SKU-${index}`, price: 10 + index, stock: index % 7, tags: ['a', 'b'] })
    cards.push(
      `<div class="group relative flex flex-col overflow-hidden rounded-lg border border-gray-200 bg-white shadow-sm hover:shadow-md transition-shadow" data-testid="product-card" data-product-id="${index}">` +
        `<div class="aspect-h-4 aspect-w-3 bg-gray-200 sm:aspect-none group-hover:opacity-75 sm:h-96"><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="Product ${index}" class="h-full w-full object-cover object-center sm:h-full sm:w-full" loading="lazy"></div>` +
        `<div class="flex flex-1 flex-col space-y-2 p-4"><h3 class="text-sm font-medium text-gray-900"><a href="/product/${index}" class="focus:outline-none"><span aria-hidden="true" class="absolute inset-0"></span>Product ${index}</a></h3>` +
        `<p class="text-sm text-gray-500 line-clamp-2">A short description of product ${index}.</p>` +
        `<div class="flex flex-1 flex-col justify-end"><p class="text-sm italic text-gray-500">${icon} In stock</p><p class="text-base font-medium text-gray-900">$${10 + index}</p></div>` +
        `<button type="button" class="mt-2 inline-flex items-center rounded-md bg-indigo-600 px-3 py-2 text-sm font-semibold text-white shadow-sm hover:bg-indigo-500 focus-visible:outline focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-indigo-600">${icon}Add to cart</button></div></div>`,
    )
  }
  const css = '.x{color:red}'.repeat(2000)
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title><style>${css}</style></head><body class="bg-gray-50 antialiased"><header class="sticky top-0 z-10 border-b bg-white"><nav class="mx-auto flex max-w-7xl items-center justify-between p-4" aria-label="Global"><a href="/" class="-m-1.5 p-1.5">Shop</a><a href="/cart">Cart</a></nav></header><main class="mx-auto max-w-7xl px-4"><h1 class="text-2xl font-bold">Products</h1><div class="grid grid-cols-1 gap-y-4 sm:grid-cols-2 sm:gap-x-6 lg:grid-cols-3">${cards.join('')}</div></main><script id="__STATE__" type="application/json">${JSON.stringify({ products: state })}</script></body></html>`
}

/** Plain markup: rows of text, a link and a button each, no classes beyond one. */
export function plainPage(count) {
  const rows = []
  for (let index = 0; index < count; index++)
    rows.push(
      `<div class="row"><span>Row ${index}</span> <a href="/item/${index}">Item ${index}</a> <button type="button">Open ${index}</button></div>`,
    )
  return `<!doctype html><html><head><title>Plain</title></head><body><h1>Plain</h1><main>${rows.join('')}</main></body></html>`
}

const COUNTER =
  '<!doctype html><html><head><title>Counter</title></head><body><h1>Counter</h1><p id="out">0</p><button id="inc" onclick="out.textContent=String(+out.textContent+1)">Increment</button></body></html>'

async function startPages() {
  const pages = {
    '/counter': COUNTER,
    '/realistic': realisticPage(600),
    '/plain': plainPage(2000),
  }
  const server = createServer((request, response) => {
    const body = pages[new URL(request.url ?? '/', 'http://x').pathname]
    response.writeHead(body ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' })
    response.end(body ?? 'not found')
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    pages,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(resolve)
      }),
  }
}

/** Resident memory of a process and all its descendants, in KiB. */
function treeRssKiB(pid) {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,rss='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number))
  const children = new Map()
  for (const [child, parent] of rows) children.set(parent, [...(children.get(parent) ?? []), child])
  const rss = new Map(rows.map(([child, , kib]) => [child, kib]))
  let total = 0
  const stack = [pid]
  while (stack.length) {
    const current = stack.pop()
    total += rss.get(current) ?? 0
    stack.push(...(children.get(current) ?? []))
  }
  return total
}

/** Every descendant pid of `pid`. */
function descendants(pid) {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number))
  const found = []
  const stack = [pid]
  while (stack.length) {
    const current = stack.pop()
    for (const [child, parent] of rows)
      if (parent === current) {
        found.push(child)
        stack.push(child)
      }
  }
  return found
}

/** Closes a client; whatever it left running (the reference's Chromium outlives it) is killed. */
async function closeTree(client) {
  const left = descendants(client.pid)
  await client.close()
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
}

const ms = (value) => `${value.toFixed(1)} ms`
const textOf = (message) => (message.result?.content ?? []).map((block) => block.text ?? '').join('\n')

/**
 * Clicks a second with 8 in flight: Keel with one tab each (8 tabs on the counter page, each click
 * naming its tab and the button's ref there), the reference on its one page (it has no tabs), three
 * alternated rounds of `calls` clicks after 16 of warm-up; and Keel with all 8 on one tab, as in the
 * table above, in the same rounds.
 */
async function clicksAcrossTabs(oursSpec, referenceSpec, counter, spawnClient) {
  const ROUNDS = 3
  const calls = Number(process.env.BENCH_INFLIGHT_CALLS ?? 80) * 2
  const INFLIGHT = 8
  const keel = spawnClient(oursSpec)
  const reference = spawnClient(referenceSpec)
  try {
    await keel.initialize()
    await reference.initialize()
    const tabs = []
    for (let index = 0; index < INFLIGHT; index++) {
      if (index > 0) await keel.callTool('new_tab', {}, 60_000)
      const { message } = await keel.callTool('navigate', { url: counter }, 60_000)
      const tab = message.result?.structuredContent?.tab
      const ref = /button "Increment" #(e\d+)/.exec(textOf(message))?.[1]
      if (!tab || !ref)
        throw new Error(`navigate in a new tab gave no tab or ref: ${textOf(message).slice(0, 300)}`)
      tabs.push({ tab, ref })
    }
    const { message: opened } = await reference.callTool('puppeteer_navigate', { url: counter }, 60_000)
    if (opened.result?.isError) throw new Error(`puppeteer_navigate failed: ${textOf(opened).slice(0, 300)}`)
    const contenders = [
      [
        'keel, 8 tabs, one click in flight on each',
        keel,
        (worker) => ({ name: 'click', arguments: tabs[worker] }),
      ],
      ['keel, one tab, 8 clicks in flight on it', keel, () => ({ name: 'click', arguments: tabs[0] })],
      [
        'reference, its one page',
        reference,
        () => ({ name: 'puppeteer_click', arguments: { selector: '#inc' } }),
      ],
    ]
    const rates = contenders.map(() => [])
    const cpus = contenders.map(() => [])
    const errors = contenders.map(() => 0)
    const burst = async (client, callOf, total) => {
      const cpuBefore = client.cpuMs()
      const { perSecond, errorRate } = await concurrent(client, callOf, total, INFLIGHT)
      return {
        rate: perSecond,
        cpu: (client.cpuMs() - cpuBefore) / total,
        failed: Math.round(errorRate * total),
      }
    }
    for (const [, client, callOf] of contenders) await burst(client, callOf, 16)
    for (let round = 0; round < ROUNDS; round++)
      for (const [index, [, client, callOf]] of contenders.entries()) {
        const { rate, cpu, failed } = await burst(client, callOf, calls)
        rates[index].push(rate)
        cpus[index].push(cpu)
        errors[index] += failed
      }
    const referenceRate = median(rates[2])
    const referenceCpu = median(cpus[2])
    console.log(
      `\n#### browser: 8 clicks in flight, on 8 tabs and on one (${calls} clicks a round, median of ${ROUNDS} alternated rounds)\n`,
    )
    table(
      ['', 'clicks/s', 'spread', '÷ reference', 'CPU a click (server + Chromium)', '÷ reference', 'errors'],
      contenders.map(([label], index) => [
        label,
        median(rates[index]).toFixed(0),
        `${Math.min(...rates[index]).toFixed(0)}–${Math.max(...rates[index]).toFixed(0)}`,
        ratio(median(rates[index]), referenceRate),
        ms(median(cpus[index])),
        ratio(median(cpus[index]), referenceCpu),
        String(errors[index]),
      ]),
    )
  } finally {
    await closeTree(keel)
    await closeTree(reference)
  }
}

export async function run() {
  if (!existsSync(OURS))
    throw new Error(`${OURS} is missing: run pnpm --filter @keel-mcp/server-browser build`)
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: set PUPPETEER_EXECUTABLE_PATH`)
  const site = await startPages()
  const ours = (args = []) => ({
    command: process.execPath,
    args: [OURS, '--allow-private-network', '--executable-path', CHROMIUM, ...args],
    env: { LOG_LEVEL: 'silent' },
  })
  // The reference reads its launch options from the environment; --no-sandbox is needed as root
  // and the reference calls it dangerous unless ALLOW_DANGEROUS is set.
  const reference = {
    command: process.execPath,
    args: [REFERENCE],
    env: {
      PUPPETEER_LAUNCH_OPTIONS: JSON.stringify({
        headless: true,
        executablePath: CHROMIUM,
        args: [...(ROOT ? ['--no-sandbox'] : []), '--disable-gpu', '--disable-dev-shm-usage'],
      }),
      ALLOW_DANGEROUS: 'true',
    },
  }
  const spawnClient = (spec) => new RawClient(spec.command, spec.args, { env: spec.env })
  const counter = `${site.url}/counter`
  try {
    // 0. Cold start against the SDK v2 floor, first: before any Chromium has run in this suite.
    await floorRow('browser', ours(), reference)
    // 1. The common figures. The warm call is a click on the counter page, loaded once per process
    // by `prepare`: ours by the ref its snapshot gives the button (it answers with the part of the
    // page that changed), the reference by CSS selector (it answers with a status line).
    const [oursFigures, referenceFigures] = await compareServers(
      'browser',
      [
        {
          label: 'keel browser',
          ...ours(),
          call: { name: 'click', arguments: {} },
          prepare: async (client) => {
            const { message } = await client.callTool('navigate', { url: counter }, 60_000)
            const ref = /button "Increment" #(e\d+)/.exec(textOf(message))?.[1]
            if (!ref) throw new Error(`navigate gave no ref for the button: ${textOf(message).slice(0, 300)}`)
            return { ref }
          },
        },
        {
          label: 'reference puppeteer',
          ...reference,
          call: { name: 'puppeteer_click', arguments: { selector: '#inc' } },
          prepare: async (client) => {
            const { message } = await client.callTool('puppeteer_navigate', { url: counter }, 60_000)
            if (message.error || message.result?.isError)
              throw new Error(`puppeteer_navigate failed: ${textOf(message).slice(0, 300)}`)
            return undefined
          },
          reference: true,
        },
      ],
      { calls: CALLS, warmup: 20, inflightCalls: Number(process.env.BENCH_INFLIGHT_CALLS ?? 80) },
    )
    console.log(
      `\nWarm click: CPU (server + Chromium) ${ratio(oursFigures.cpu, referenceFigures.cpu)}, p50 ${ratio(oursFigures.p50, referenceFigures.p50)} of the reference.`,
    )
    if (process.env.BENCH_DOMAIN === '0') return

    // 1b. 8 clicks in flight where Keel runs them in parallel: on 8 tabs, one each. The table's
    // figure has all 8 on one tab, where Keel runs one action at a time (each answers with what it
    // changed) and the reference fires them at its one page at once; the reference has no tabs.
    await clicksAcrossTabs(ours(), reference, counter, spawnClient)

    // 2. Catalogue with the optional capabilities on (the default is in the table above).
    const caps = spawnClient(ours(['--caps', 'evaluate,pdf', '--upload-dir', '.']))
    await caps.initialize()
    const capsTools = (await caps.request('tools/list')).message.result.tools
    const capsBytes = Buffer.byteLength(JSON.stringify(capsTools))
    await caps.close()
    console.log('\n#### browser: catalogue with --caps evaluate,pdf --upload-dir (tokens = JSON bytes ÷ 4)\n')
    table(
      ['', 'tools', 'size', 'tokens', 'tokens a tool'],
      [
        [
          'keel, --caps evaluate,pdf --upload-dir',
          capsTools.length,
          formatBytes(capsBytes),
          Math.round(capsBytes / 4),
          Math.round(capsBytes / 4 / capsTools.length),
        ],
      ],
    )

    // 3. First navigate: spawn → initialize → navigate (browser launch included).
    const first = [[], []]
    const memory = [[], []]
    for (let run = 0; run < 5; run++) {
      for (const [position, [spec, call]] of [
        [ours(), { name: 'navigate', arguments: { url: counter } }],
        [reference, { name: 'puppeteer_navigate', arguments: { url: counter } }],
      ].entries()) {
        const started = performance.now()
        const client = spawnClient(spec)
        await client.initialize()
        const { message } = await client.callTool(call.name, call.arguments, 60_000)
        if (message.result?.isError) throw new Error(`${call.name} failed: ${textOf(message)}`)
        first[position].push(performance.now() - started)
        memory[position].push(treeRssKiB(client.pid))
        await closeTree(client)
      }
    }
    const [oursFirst, referenceFirst] = first.map(median)
    const [oursMemory, referenceMemory] = memory.map(median)
    console.log(
      '\n#### browser: first navigate (spawn → initialize → navigate, browser launch included, median of 5)\n',
    )
    table(
      ['', 'time', 'vs reference', 'RSS of the process tree after it', 'vs reference'],
      [
        [
          'keel',
          ms(oursFirst),
          ratio(oursFirst, referenceFirst),
          formatBytes(oursMemory * 1024),
          ratio(oursMemory, referenceMemory),
        ],
        ['reference 2025.5.12', ms(referenceFirst), '1.00×', formatBytes(referenceMemory * 1024), '1.00×'],
      ],
    )

    // 4. Snapshot size against the page's HTML (goal: at most 10 %).
    const sizes = []
    for (const path of ['/realistic', '/plain']) {
      const big = spawnClient(ours(['--snapshot-max-chars', '1000000']))
      await big.initialize()
      const { message } = await big.callTool('navigate', { url: `${site.url}${path}` }, 300_000)
      const snapshot = textOf(message).length
      const html = Buffer.byteLength(site.pages[path])
      sizes.push([
        path,
        formatBytes(html),
        formatBytes(snapshot),
        `${((snapshot / html) * 100).toFixed(1)} %`,
      ])
      await closeTree(big)
    }
    console.log('\n#### browser: snapshot size on a large page (uncapped) vs its HTML\n')
    table(['page', 'HTML', 'snapshot', 'snapshot ÷ HTML'], sizes)

    // 5. At real-world scale, against the browser servers users pick today (same run, same Chromium).
    if (process.env.BENCH_PEERS !== '0') await runPeers({ ours: ours(), chromium: CHROMIUM })
  } finally {
    await site.close()
  }
}
