import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Connection } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CallResult, call, connect, hosts, refOf } from './helpers.js'

// Hostile pages, each served by a server of its own, against one browser for the file. The time
// limits are short so that a stuck call ends soon: a call on a tab may take 3 s (navigation) + 3 ×
// 1 s (action, snapshot, reads) = 6 s in all before it answers `timeout`.
const CALL_LIMIT_MS = 6_000
/** What "answers at once" means here, with room for a loaded machine. */
const PROMPT_MS = 5_000

let connection: Connection
const servers: Array<{ close(): Promise<void> }> = []

beforeAll(async () => {
  connection = await connect([
    '--allow-private-network',
    '--caps',
    'pdf',
    '--timeout-navigation',
    '3000',
    '--timeout-action',
    '1000',
  ])
})

afterAll(async () => {
  await connection?.close()
  for (const server of servers) await server.close()
})

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`

const PLAIN = page('Plain', '<h1>Plain page</h1>')

/** Serves `html` at `/`, a plain page at `/plain`, and a load that never finishes at `/slow`. */
async function serve(html: string): Promise<string> {
  const hanging = new Set<ServerResponse>()
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname
    if (path === '/slow') {
      response.writeHead(200, { 'content-type': 'text/html' })
      response.write('<!doctype html><title>Slow</title><h1>Slow page</h1>')
      hanging.add(response)
      return
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    response.end(path === '/plain' ? PLAIN : html)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  servers.push({
    async close() {
      for (const response of hanging) response.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** `promise`, or a failure naming `what` if it has not settled within `ms`. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

function tabsOf(result: CallResult): Array<{ tab: string }> {
  return (result.structured?.tabs ?? []) as Array<{ tab: string }>
}

/** A new tab on `url`; its id and the navigate result. */
async function open(url: string, waitUntil = 'load') {
  const tab = (await call(connection, 'new_tab')).structured?.tab as string
  const navigated = await call(connection, 'navigate', { tab, url, wait_until: waitUntil })
  return { tab, navigated }
}

/** The server still serves everyone else: list_tabs at once, a plain page in another tab. */
async function othersAnswer(site: string, hostile: string): Promise<void> {
  const listed = await within(PROMPT_MS, 'list_tabs', call(connection, 'list_tabs'))
  expect(listed.isError, listed.text).toBe(false)
  expect(tabsOf(listed).map((entry) => entry.tab)).toContain(hostile)
  const other = await within(CALL_LIMIT_MS, 'navigate in another tab', open(`${site}/plain`))
  expect(other.navigated.text).toContain('Plain page')
  await call(connection, 'close_tab', { tab: other.tab })
}

async function closes(tab: string): Promise<void> {
  const closed = await within(PROMPT_MS, 'close_tab', call(connection, 'close_tab', { tab }))
  expect(closed.isError, closed.text).toBe(false)
  const listed = await call(connection, 'list_tabs')
  expect(tabsOf(listed).map((entry) => entry.tab)).not.toContain(tab)
}

describe('a hostile page never makes other calls wait', () => {
  it('a busy loop (while (true) {}) holds its own tab for one time limit a call, and nothing else', async () => {
    const site = await serve(page('Busy', '<h1>Busy</h1><button onclick="for (;;) {}">Spin</button>'))
    const { tab, navigated } = await open(site)
    // The click starts the loop: the renderer never answers again.
    const spun = await within(
      CALL_LIMIT_MS + PROMPT_MS,
      'click',
      call(connection, 'click', { tab, ref: refOf(navigated.text, /button "Spin"/) }),
    )
    expect(spun.text).toMatch(/^timeout: /)
    const stuck = call(connection, 'snapshot', { tab })
    await othersAnswer(site, tab)
    const answered = await within(CALL_LIMIT_MS + PROMPT_MS, 'snapshot of the busy tab', stuck)
    expect(answered.text).toMatch(/^timeout: /)
    // A cancelled call gives up its place at once: the call queued behind it goes ahead.
    const cancel = new AbortController()
    const cancelled = connection.client
      .callTool({ name: 'snapshot', arguments: { tab } }, { signal: cancel.signal })
      .catch((error: unknown) => error)
    const queued = call(connection, 'console_messages', { tab })
    cancel.abort()
    await cancelled
    const next = await within(3000, 'the call behind a cancelled one', queued)
    expect(next.isError, next.text).toBe(false)
    // Navigating the busy tab itself leaves the page that does not let go for a fresh one.
    const away = await within(
      CALL_LIMIT_MS + PROMPT_MS,
      'navigate away',
      call(connection, 'navigate', { tab, url: `${site}/plain` }),
    )
    expect(away.text).toContain('Plain page')
    const spinning = await call(connection, 'navigate', { tab, url: site })
    await call(connection, 'click', { tab, ref: refOf(spinning.text, /button "Spin"/) })
    await closes(tab)
  })

  it('a page of 1,000,000 buttons: the snapshot is refused at its size cap, and the server stays free', async () => {
    const site = await serve(
      page(
        'Buttons',
        `<h1>Buttons</h1><script>document.body.insertAdjacentHTML('beforeend', '<button>B</button>'.repeat(1e6))</script>`,
      ),
    )
    const { tab } = await open(site, 'domcontentloaded')
    const snapshot = call(connection, 'snapshot', { tab })
    await othersAnswer(site, tab)
    const result = await within(CALL_LIMIT_MS + PROMPT_MS, 'snapshot', snapshot)
    expect(result.text).toMatch(
      /^(too_large: The page has \d+ elements, over the 60000 a snapshot reads|timeout: )/,
    )
    await closes(tab)
  })

  it('save_pdf of 200,000 elements is refused at its size cap', async () => {
    const site = await serve(
      page(
        'Print',
        `<h1>Print</h1><script>document.body.insertAdjacentHTML('beforeend', '<p>line</p>'.repeat(2e5))</script>`,
      ),
    )
    const { tab } = await open(site, 'domcontentloaded')
    const pdf = call(connection, 'save_pdf', { tab })
    await othersAnswer(site, tab)
    const result = await within(CALL_LIMIT_MS + PROMPT_MS, 'save_pdf', pdf)
    expect(result.text).toMatch(
      /^(too_large: The page has \d+ elements, over the 60000 a PDF reads|timeout: )/,
    )
    await closes(tab)
  })

  it('deep nesting (2,000 levels) is refused at the depth cap with a clear error, and the process carries on', async () => {
    const site = await serve(
      page(
        'Deep',
        `<h1>Deep</h1><script>let node = document.body; for (let i = 0; i < 2000; i++) { const div = document.createElement('div'); div.setAttribute('role', 'group'); div.setAttribute('aria-label', 'level ' + i); node.appendChild(div); node = div } node.textContent = 'bottom'</script>`,
      ),
    )
    const { tab, navigated } = await open(site)
    // The navigation is done: its result says where the tab is, and why there is no snapshot.
    expect(navigated.isError, navigated.text).toBe(false)
    expect(navigated.text).toMatch(
      /No snapshot: The page nests \d+ levels deep, over the 512 a snapshot reads/,
    )
    const snapshot = await within(
      CALL_LIMIT_MS + PROMPT_MS,
      'snapshot',
      call(connection, 'snapshot', { tab }),
    )
    expect(snapshot.text).toMatch(/^too_large: The page nests \d+ levels deep/)
    await othersAnswer(site, tab)
    await closes(tab)
  })

  it('an endless alert/confirm loop is reported, and the tab can still be navigated away', async () => {
    const site = await serve(
      page(
        'Dialogs',
        `<h1>Dialogs</h1><script>onload = () => { for (let i = 0; ; i++) { alert('again ' + i); confirm('sure ' + i) } }</script>`,
      ),
    )
    const { tab, navigated } = await open(site)
    expect(navigated.text).toMatch(/dialog is open/)
    await othersAnswer(site, tab)
    const away = await within(
      CALL_LIMIT_MS + PROMPT_MS,
      'navigate away',
      call(connection, 'navigate', { tab, url: `${site}/plain` }),
    )
    expect(away.text).toContain('Plain page')
    await closes(tab)
  })

  it('a beforeunload trap neither keeps navigate on the page nor close_tab from closing it', async () => {
    const trap = page(
      'Trap',
      `<h1>Trap</h1><button onclick="addEventListener('beforeunload', (event) => { event.preventDefault(); event.returnValue = 'stay' }); this.textContent = 'Armed'">Arm</button>`,
    )
    const site = await serve(trap)
    const { tab, navigated } = await open(site)
    const armed = await call(connection, 'click', { tab, ref: refOf(navigated.text, /button "Arm"/) })
    expect(armed.text).toContain('Armed')
    const away = await within(
      CALL_LIMIT_MS + PROMPT_MS,
      'navigate away',
      call(connection, 'navigate', { tab, url: `${site}/plain` }),
    )
    expect(away.text).toContain('Plain page')
    const back = await call(connection, 'navigate', { tab, url: site })
    await call(connection, 'click', { tab, ref: refOf(back.text, /button "Arm"/) })
    await closes(tab)
  })

  it('a load that never finishes times out, and the tab navigates elsewhere', async () => {
    const site = await serve(PLAIN)
    const { tab, navigated } = await open(`${site}/slow`)
    expect(navigated.text).toMatch(/^timeout: The page did not finish loading/)
    await othersAnswer(site, tab)
    const away = await call(connection, 'navigate', { tab, url: `${site}/plain` })
    expect(away.text).toContain('Plain page')
    await closes(tab)
  })

  it('a memory bomb crashes only its own renderer, at its heap cap; the tab is replaced', async () => {
    const site = await serve(
      page(
        'Bomb',
        `<h1>Bomb</h1><script>const keep = []; (function grow() { for (let i = 0; i < 20; i++) keep.push(new Array(1e6).fill(keep.length + 0.5)); setTimeout(grow, 0) })()</script>`,
      ),
    )
    const { tab } = await open(site, 'domcontentloaded')
    // The renderer fills its heap and crashes; poll (bounded) until the tab says so.
    let replaced = await call(connection, 'snapshot', { tab })
    for (
      const deadline = Date.now() + 20_000;
      !replaced.text.includes('had crashed') && Date.now() < deadline;
    ) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      replaced = await call(connection, 'snapshot', { tab })
    }
    expect(replaced.text).toContain(`The page in tab ${tab} had crashed; it was replaced by a blank page.`)
    await othersAnswer(site, tab)
    await closes(tab)
  })

  it('a pop-up storm opens no tabs on its own, and at most the tab limit from clicks', async () => {
    const storm = "for (let i = 0; i < 100; i++) window.open('/plain?' + i)"
    const site = await serve(
      page('Storm', `<h1>Storm</h1><script>${storm}</script><button onclick="${storm}">Storm</button>`),
    )
    const before = tabsOf(await call(connection, 'list_tabs')).length
    const { tab, navigated } = await open(site)
    await call(connection, 'click', { tab, ref: refOf(navigated.text, /button "Storm"/) })
    const listed = await within(PROMPT_MS, 'list_tabs', call(connection, 'list_tabs'))
    const count = tabsOf(listed).length
    expect(count).toBeLessThanOrEqual(Math.max(before + 2, 20))
    expect(await hosts.at(-1)?.pageCount()).toBeLessThanOrEqual(21)
    await othersAnswer(site, tab)
    for (const entry of tabsOf(listed))
      if (entry.tab !== tab) await call(connection, 'close_tab', { tab: entry.tab })
    await closes(tab)
  })

  it('a console flood keeps 200 messages and lets every other call through', async () => {
    const site = await serve(
      page(
        'Flood',
        `<h1>Flood</h1><script>setInterval(() => { for (let i = 0; i < 2000; i++) console.log('flood ' + i) }, 0)</script>`,
      ),
    )
    const { tab } = await open(site, 'domcontentloaded')
    await othersAnswer(site, tab)
    const messages = await within(
      CALL_LIMIT_MS + PROMPT_MS,
      'console_messages',
      call(connection, 'console_messages', { tab }),
    )
    expect(messages.structured?.count).toBeLessThanOrEqual(200)
    await closes(tab)
  })
})
