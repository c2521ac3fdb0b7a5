import { mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Connection } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Tab } from '../src/lib/tab.js'
import { type Fixtures, startFixtures } from './fixtures.js'
import { call, connect, hosts, refOf, until } from './helpers.js'

// One browser for the whole file: every test works in its own tab.
let fixtures: Fixtures
let connection: Connection
let uploads: string
let outside: string

beforeAll(async () => {
  fixtures = await startFixtures()
  uploads = await mkdtemp(join(tmpdir(), 'keel-uploads-'))
  outside = await mkdtemp(join(tmpdir(), 'keel-outside-'))
  await writeFile(join(uploads, 'report.txt'), 'hello')
  await writeFile(join(outside, 'secret.txt'), 'secret')
  connection = await connect([
    '--allow-private-network',
    '--caps',
    'evaluate,pdf',
    '--upload-dir',
    uploads,
    '--timeout-navigation',
    '3000',
    '--timeout-action',
    '3000',
    // Every test works in a tab of its own, all in one session.
    '--max-tabs',
    '100',
  ])
})

afterAll(async () => {
  await connection?.close()
  await fixtures?.close()
  await rm(uploads, { recursive: true, force: true })
  await rm(outside, { recursive: true, force: true })
})

/** A fresh tab on `path`; returns its id and the navigate result. */
async function open(path: string) {
  const created = await call(connection, 'new_tab')
  const tab = created.structured?.tab as string
  const navigated = await call(connection, 'navigate', { url: `${fixtures.url}${path}`, tab })
  expect(navigated.isError, navigated.text).toBe(false)
  return { tab, text: navigated.text }
}

describe('navigation and snapshots', () => {
  it('navigates and returns a snapshot with refs, marked as untrusted page content', async () => {
    const { tab, text } = await open('/')
    expect(text).toMatch(/^Tab t\d+\nUntrusted page content in <page-[0-9a-f]{8}>/)
    expect(text).toMatch(/^h1 "Fixture home" #e\d+$/m)
    expect(text).toMatch(/^ link "Form" #e\d+$/m)
    const again = await call(connection, 'snapshot', { tab })
    // Refs are backend node ids: the same element keeps its ref across snapshots.
    expect(refOf(again.text, /link "Form"/)).toBe(refOf(text, /link "Form"/))
  })

  it('goes back, forward and reloads', async () => {
    const { tab, text } = await open('/')
    await call(connection, 'click', { tab, ref: refOf(text, /link "Counter"/) })
    const back = await call(connection, 'go_back', { tab })
    expect(back.structured?.url).toBe(`${fixtures.url}/`)
    const forward = await call(connection, 'go_forward', { tab })
    expect(forward.structured?.url).toBe(`${fixtures.url}/counter`)
    const reloaded = await call(connection, 'reload', { tab })
    expect(reloaded.text).toContain('h1 "Counter"')
  })

  it('gives a stale ref a tool error that says to take a new snapshot', async () => {
    const { tab, text } = await open('/')
    const link = refOf(text, /link "Form"/)
    const counter = await call(connection, 'navigate', { tab, url: `${fixtures.url}/counter` })
    // The new page's refs are new numbers: a kept ref never lands on another element.
    expect(counter.text).toMatch(/button "Increment" #e\d+/)
    expect(counter.text).not.toMatch(new RegExp(`#${link}\\b`))
    const stale = await call(connection, 'click', { tab, ref: link })
    expect(stale.isError).toBe(true)
    expect(stale.text).toMatch(/^not_found: Ref e\d+ is not on the current page/)
    expect(stale.text).toContain('snapshot')
    const invented = await call(connection, 'click', { tab, ref: 'e999999' })
    expect(invented.isError).toBe(true)
  })

  it('leaves no waiter or listener behind after actions and navigations', async () => {
    // Each action watches for a navigation it may cause; when none comes, the watcher and its
    // listeners must go with the action (a kept one is a leak per call, for the tab's whole life).
    const { tab, text } = await open('/counter')
    const ref = refOf(text, /button "Increment"/)
    const sessions = (hosts.at(-1) as unknown as { sessions: Map<string, { tabs: Map<string, Tab> }> })
      .sessions
    const opened = [...sessions.values()].map((session) => session.tabs.get(tab)).find(Boolean)
    if (!opened) throw new Error(`tab ${tab} not found`)
    const { page, cdp } = opened
    // Every event of the page and of its main frame (puppeteer's own frame events are internal
    // symbols, which its navigation watcher listens to), and the DevTools events a waiter uses.
    const { FrameEvent } = (await import('puppeteer-core')) as unknown as {
      FrameEvent: Record<string, symbol>
    }
    // Puppeteer's PageEvent values (a type only, at run time).
    const pageEvents = [
      'close',
      'console',
      'dialog',
      'domcontentloaded',
      'error',
      'frameattached',
      'framedetached',
      'framenavigated',
      'load',
      'metrics',
      'pageerror',
      'popup',
      'request',
      'requestservedfromcache',
      'requestfailed',
      'requestfinished',
      'response',
      'workercreated',
      'workerdestroyed',
    ]
    type Counted = { listenerCount(event: string | symbol): number }
    const frame = page.mainFrame() as unknown as Counted
    const devtools = ['Page.frameNavigated', 'Page.domContentEventFired', 'Page.navigatedWithinDocument']
    const listeners = () => ({
      frame: Object.values(FrameEvent).reduce((sum, event) => sum + frame.listenerCount(event), 0),
      page: Object.fromEntries(
        pageEvents.map((event) => [event, (page as unknown as Counted).listenerCount(event)]),
      ),
      devtools: devtools.reduce((sum, event) => sum + (cdp as unknown as Counted).listenerCount(event), 0),
    })
    await call(connection, 'click', { tab, ref })
    const before = listeners()
    for (let index = 0; index < 20; index++) {
      const clicked = await call(connection, 'click', { tab, ref })
      expect(clicked.isError).toBe(false)
      const pressed = await call(connection, 'press_key', { tab, key: 'Tab' })
      expect(pressed.isError).toBe(false)
    }
    for (let index = 0; index < 5; index++) {
      const navigated = await call(connection, 'navigate', { tab, url: `${fixtures.url}/counter` })
      expect(navigated.isError, navigated.text).toBe(false)
      const refused = await call(connection, 'navigate', { tab, url: 'file:///etc/passwd' })
      expect(refused.isError).toBe(true)
    }
    expect(listeners()).toEqual(before)
  })

  it('refuses a ref of another tab, even one of the same page', async () => {
    const first = await open('/')
    const second = await open('/')
    const ref = refOf(first.text, /link "Form"/)
    expect(refOf(second.text, /link "Form"/)).not.toBe(ref)
    const refused = await call(connection, 'click', { tab: second.tab, ref })
    expect(refused.isError).toBe(true)
    expect(refused.text).toMatch(/^not_found: Ref e\d+ is not on the current page/)
  })

  it('puts an element holding one element on its line, and acts by either ref', async () => {
    const { tab, text } = await open('/links')
    expect(text).toMatch(/^h1 "Links" #e\d+$/m)
    expect(text).toMatch(/^list\n listitem > link "Counter" #e\d+\n listitem > link "Form" #e\d+$/m)
    expect(text).toMatch(/^h2 #e\d+ > link "Dialogs" #e\d+$/m)
    expect(text).toMatch(/^paragraph\n "Go to"\n link "hover" #e\d+\n "now\."$/m)
    const heading = refOf(text, /^h2 /)
    const link = refOf(text, /link "Dialogs"/)
    expect(heading).not.toBe(link)
    const part = await call(connection, 'snapshot', { tab, ref: heading })
    expect(part.text).toMatch(new RegExp(`^h2 #${heading} > link "Dialogs" #${link}$`, 'm'))
    const clicked = await call(connection, 'click', { tab, ref: link })
    expect(clicked.structured?.url).toBe(`${fixtures.url}/dialogs`)
    expect(clicked.text).toContain('h1 "Dialogs"')
  })

  it("renders the README's example page as the README shows it", async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    const example = /### Snapshots and refs\n\n```\n([\s\S]*?)\n```/.exec(readme)?.[1]
    expect(example).toBeDefined()
    const { text } = await open('/signup')
    const tree = /\ntitle: "Sign up"\n([\s\S]*?)\n<\/page-/.exec(text)?.[1]
    // Refs count up per browser session: compare them by order of appearance.
    const numbered = (snapshot: string) => {
      const seen = new Map<string, number>()
      return snapshot.replace(/#e\d+/g, (ref) => `#e${seen.get(ref) ?? seen.set(ref, seen.size + 1).size}`)
    }
    expect(numbered(tree ?? '')).toBe(example)
  })

  it('caps a huge DOM with a notice on how to narrow it, and narrows by ref and depth', async () => {
    const { tab, text } = await open('/large?n=600')
    expect(text.length).toBeLessThan(27_000)
    expect(text).toMatch(/\[Snapshot cut at 25000 characters\. More: snapshot cursor="[^"]+"\. Or narrow it/)
    const shallow = await call(connection, 'snapshot', { tab, depth: 1 })
    expect(shallow.text).toMatch(/main #e\d+ \(.*: snapshot ref=e\d+\)/)
    const heading = refOf(text, /h1 "Large page"/)
    const part = await call(connection, 'snapshot', { tab, ref: heading })
    expect(part.text).toContain('h1 "Large page"')
    expect(part.text).not.toContain('Row 1')
  })

  it('reports a cut snapshot in structuredContent.budget with the cursor that continues it', async () => {
    const { tab } = await open('/large?n=600')
    const first = await call(connection, 'snapshot', { tab, max_tokens: 500 })
    const budget = (first.structured as { budget: { cut: boolean; cursor: string; shown: number } }).budget
    expect(budget).toMatchObject({ cut: true })
    expect(budget.shown).toBeGreaterThan(1)
    expect(first.text).toContain('[Snapshot cut at 2000 characters.')
    expect(first.text).toContain(`cursor="${budget.cursor}"`)
    const next = await call(connection, 'snapshot', { tab, max_tokens: 500, cursor: budget.cursor })
    expect(next.isError).toBe(false)
    expect(next.text).not.toContain('h1 "Large page"')
    expect(first.text).toContain('Row 1')
    expect(next.text).not.toContain('"Row 1 ')
  })

  it('gives a page that never finishes loading a timeout error and leaves the tab usable', async () => {
    const created = await call(connection, 'new_tab')
    const tab = created.structured?.tab as string
    const slow = await call(connection, 'navigate', { tab, url: `${fixtures.url}/slow` })
    expect(slow.isError).toBe(true)
    expect(slow.text).toMatch(/^timeout: The page did not finish loading within 3000 ms/)
    const after = await call(connection, 'snapshot', { tab })
    expect(after.isError).toBe(false)
    expect(after.text).toContain('h1 "Slow page"')
    const next = await call(connection, 'navigate', { tab, url: `${fixtures.url}/` })
    expect(next.isError).toBe(false)
  })

  it('runs navigate and wait_for as tasks whose results are what plain calls return', async () => {
    const created = await call(connection, 'new_tab')
    const tab = created.structured?.tab as string
    const started = await connection.client.request('tools/call', {
      name: 'navigate',
      arguments: { tab, url: `${fixtures.url}/later` },
      task: { ttl: 60_000 },
    })
    const task = started.task as { taskId: string; status: string }
    expect(task.status).toBe('working')
    const result = await connection.client.request('tasks/result', { taskId: task.taskId })
    expect(result.isError).toBeFalsy()
    expect(result.structuredContent).toEqual({ tab, url: `${fixtures.url}/later` })
    const waited = await connection.client.request('tools/call', {
      name: 'wait_for',
      arguments: { tab, text: 'Ready now' },
      task: { ttl: 60_000 },
    })
    const done = await connection.client.request('tasks/result', {
      taskId: (waited.task as { taskId: string }).taskId,
    })
    expect(JSON.stringify(done.content)).toContain('Found')
  })

  it('waits for text to appear and to disappear', async () => {
    const { tab } = await open('/later')
    const appeared = await call(connection, 'wait_for', { tab, text: 'Ready now' })
    expect(appeared.isError, appeared.text).toBe(false)
    expect(appeared.text).toContain('Found "Ready now"')
    const gone = await call(connection, 'wait_for', { tab, text_gone: 'waiting' })
    expect(gone.isError).toBe(false)
    const timed = await call(connection, 'wait_for', { tab, seconds: 0.1 })
    expect(timed.text).toContain('Waited 0.1 s')
  })
})

describe('actions by ref', () => {
  it('types, fills a form and submits it by click', async () => {
    const { tab, text } = await open('/form')
    const typed = await call(connection, 'type', { tab, ref: refOf(text, /textbox "Name"/), text: 'Ada' })
    // Same document: the field acted on and what changed come back, not the page.
    expect(typed.text).toContain('Acted on: textbox "Name"')
    expect(typed.text).toContain('"Ada"')
    expect(typed.text).not.toContain('h1 "Sign up"')
    const filled = await call(connection, 'fill_form', {
      tab,
      fields: [
        { ref: refOf(text, /textbox "Email"/), value: 'ada@example.com' },
        { ref: refOf(text, /checkbox "I agree"/), value: 'true' },
        { ref: refOf(text, /combobox "Colour"/), value: 'Blue' },
        { ref: refOf(text, /textbox "Notes"/), value: 'line one' },
      ],
    })
    expect(filled.isError, filled.text).toBe(false)
    expect(filled.text).toContain('Filled 4 fields')
    const sent = await call(connection, 'click', { tab, ref: refOf(text, /button "Send"/) })
    expect(sent.structured?.url).toContain('/submitted?')
    for (const value of ['name=Ada', 'email=ada@example.com', 'agree=on', 'colour=b', 'notes=line one'])
      expect(sent.text).toContain(value)
  })

  it('submits with type submit=true and selects an option', async () => {
    const { tab, text } = await open('/form')
    const selected = await call(connection, 'select_option', {
      tab,
      ref: refOf(text, /combobox "Colour"/),
      values: ['g'],
    })
    expect(selected.text).toContain('Selected ["g"]')
    const missing = await call(connection, 'select_option', {
      tab,
      ref: refOf(text, /combobox "Colour"/),
      values: ['purple'],
    })
    expect(missing.isError).toBe(true)
    expect(missing.text).toContain('no option "purple"')
    const submitted = await call(connection, 'type', {
      tab,
      ref: refOf(text, /textbox "Name"/),
      text: 'Grace',
      submit: true,
    })
    expect(submitted.text).toContain('name=Grace')
    expect(submitted.text).toContain('colour=g')
  })

  it('refuses to type into something that is not a text field', async () => {
    const { tab, text } = await open('/form')
    const result = await call(connection, 'type', { tab, ref: refOf(text, /button "Send"/), text: 'x' })
    expect(result.isError).toBe(true)
    expect(result.text).toMatch(/^invalid_argument: Ref e\d+ is not a text field/)
  })

  it('clicks, double-clicks, presses keys slowly typed, and hovers', async () => {
    const { tab, text } = await open('/counter')
    const once = await call(connection, 'click', { tab, ref: refOf(text, /button "Increment"/) })
    expect(once.text).toContain('Count: 1')
    const double = await call(connection, 'click', {
      tab,
      ref: refOf(text, /button "Double me"/),
      double: true,
    })
    expect(double.text).toContain('Double clicked')
    await call(connection, 'type', { tab, ref: refOf(text, /textbox "Keys"/), text: 'ab', slowly: true })
    const key = await call(connection, 'press_key', { tab, key: 'ArrowDown' })
    expect(key.text).toContain('Key: ArrowDown')
    const unknown = await call(connection, 'press_key', { tab, key: 'NoSuchKey' })
    expect(unknown.isError).toBe(true)
    expect(unknown.text).toContain('Unknown key')
    const hoverPage = await open('/hover')
    const hovered = await call(connection, 'hover', {
      tab: hoverPage.tab,
      ref: refOf(hoverPage.text, /button "Hover me"/),
    })
    expect(hovered.text).toContain('Tooltip shown')
  })

  it('moves the pointer before it presses, and answers after the tasks the click queued', async () => {
    const { tab, text } = await open('/pointer')
    await call(connection, 'click', { tab, ref: refOf(text, /button "First"/) })
    // The pointer travels to a new place for each click: the page sees it arrive there (over,
    // move) before the press, and the timer the click handler set has run when the answer is made.
    const second = await call(connection, 'click', { tab, ref: refOf(text, /button "Second"/), double: true })
    expect(second.isError).toBe(false)
    expect(second.text).toContain(
      'a:mouseover a:mousemove a:mousedown a:mouseup a:click b:mouseover b:mousemove b:mousedown b:mouseup b:click b:mousedown b:mouseup b:click b:dblclick',
    )
  })

  it('gives an element removed from the page a stale-ref error, on every action that points at it', async () => {
    const { tab, text } = await open('/vanish')
    const ref = refOf(text, /button "Remove me"/)
    expect((await call(connection, 'click', { tab, ref })).isError).toBe(false)
    for (const [name, args] of [
      ['click', { ref }],
      ['hover', { ref }],
      ['drag', { from: ref, to: refOf(text, /button "Stay"/) }],
    ] as const) {
      const again = await call(connection, name, { tab, ...args })
      expect(again.isError, name).toBe(true)
      expect(again.text, name).toMatch(
        /^not_found: The element is no longer in the page\. Take a new snapshot/,
      )
    }
  })

  it('keeps no page handle after a call: an element it found and acted on, once removed, can be collected', async () => {
    const { tab, text } = await open('/retain')
    // A search reads the field through page handles too.
    const found = await call(connection, 'find', { tab, role: 'textbox' })
    expect(found.text).toContain('textbox "Big"')
    const typed = await call(connection, 'type', { tab, ref: refOf(text, /textbox "Big"/), text: 'a' })
    expect(typed.isError).toBe(false)
    expect(typed.text).toContain('removed')
    const page = hosts
      .at(-1)
      ?.allTabs()
      .find((candidate) => candidate.id === tab)?.page
    expect(page).toBeDefined()
    const session = await (page as NonNullable<typeof page>).createCDPSession()
    try {
      await session.send('HeapProfiler.collectGarbage')
      await session.send('HeapProfiler.collectGarbage')
      const { usedSize } = await session.send('Runtime.getHeapUsage')
      // The field's 32 MiB are gone with it (a handle kept from the call would hold them).
      expect(usedSize).toBeLessThan(16 * 1024 * 1024)
    } finally {
      await session.detach()
    }
  })

  it('drags one element onto another', async () => {
    const { tab, text } = await open('/drag')
    const dragged = await call(connection, 'drag', {
      tab,
      from: refOf(text, /button "Source"/),
      to: refOf(text, /region "Target"/),
    })
    expect(dragged.isError, dragged.text).toBe(false)
    expect(dragged.text).toContain('dropped')
  })

  it('uploads a file from the upload directory and refuses any other path', async () => {
    const { tab, text } = await open('/upload')
    const input = refOf(text, /button "Attachment"/)
    const ok = await call(connection, 'upload_file', {
      tab,
      ref: input,
      paths: [join(uploads, 'report.txt')],
    })
    expect(ok.isError, ok.text).toBe(false)
    expect(ok.text).toContain('chosen: report.txt')
    const outsideFile = await call(connection, 'upload_file', {
      tab,
      ref: input,
      paths: [join(uploads, '..', outside.split('/').at(-1) ?? '', 'secret.txt')],
    })
    expect(outsideFile.isError).toBe(true)
    expect(outsideFile.text).toMatch(/^permission_denied: .* is outside the upload directories/)
  })

  it('hands the page the file it checked: a directory swapped for a symlink, during the call or after it, never shows the page another file', async () => {
    const inner = join(uploads, 'swap')
    const parked = join(uploads, 'swap-parked')
    const decoy = join(outside, 'swap')
    await mkdir(inner)
    await writeFile(join(inner, 'report.txt'), 'inside')
    await mkdir(decoy)
    await writeFile(join(decoy, 'report.txt'), 'secret')
    const { tab, text } = await open('/upload')
    const input = refOf(text, /button "Attachment"/)
    const upload = () =>
      call(connection, 'upload_file', { tab, ref: input, paths: [join(inner, 'report.txt')] })
    const pageReads = async () =>
      (
        await call(connection, 'evaluate', {
          tab,
          script:
            "async () => { const file = document.getElementById('file').files[0]; return file ? await file.text() : 'none' }",
        })
      ).structured?.result
    // A real race: the directory flips between itself and a symlink to the outside while uploads run.
    let swapping = true
    let flips = 0
    const swapper = (async () => {
      while (swapping && flips < 20_000) {
        await rename(inner, parked)
        await symlink(decoy, inner)
        await rm(inner)
        await rename(parked, inner)
        flips++
      }
    })()
    const seen = new Set<unknown>()
    try {
      for (let round = 0; round < 12; round++) {
        const result = await upload()
        if (result.isError) expect(result.text).toMatch(/^(not_found|permission_denied):/)
        else seen.add(await pageReads())
      }
    } finally {
      swapping = false
      await swapper
    }
    expect(flips).toBeGreaterThan(0)
    expect(seen).not.toContain('"secret"')
    // After the call: the page reads its file again once the directory is a symlink to the outside.
    const clean = await upload()
    expect(clean.isError, clean.text).toBe(false)
    await rename(inner, parked)
    await symlink(decoy, inner)
    expect(await pageReads()).toBe('"inside"')
  })
})

describe('screenshots, evaluate and PDF', () => {
  it('returns viewport, full-page and element screenshots as images, JPEG with quality', async () => {
    const { tab, text } = await open('/large?n=300')
    const viewport = await call(connection, 'take_screenshot', { tab })
    const image = (viewport.raw.content as Array<{ type: string; data?: string; mimeType?: string }>)[0]
    expect(image?.type).toBe('image')
    expect(image?.mimeType).toBe('image/png')
    expect(
      Buffer.from(image?.data ?? '', 'base64')
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG')
    expect(viewport.structured).toMatchObject({ width: 1280, height: 720, scale: 1 })
    const full = await call(connection, 'take_screenshot', {
      tab,
      full_page: true,
      format: 'jpeg',
      quality: 50,
    })
    const jpeg = (full.raw.content as Array<{ data?: string; mimeType?: string }>)[0]
    expect(jpeg?.mimeType).toBe('image/jpeg')
    // A page far taller than 2000 px is scaled down to the cap.
    expect(full.structured?.height).toBeLessThanOrEqual(2000)
    expect(full.structured?.scale as number).toBeLessThan(1)
    const element = await call(connection, 'take_screenshot', {
      tab,
      ref: refOf(text, /h1 "Large page"/),
    })
    expect((element.structured?.height as number) < 200).toBe(true)
  })

  it('evaluates JavaScript with a capped, untrusted result, and reports errors and timeouts', async () => {
    const { tab } = await open('/counter')
    const value = await call(connection, 'evaluate', { tab, script: '() => document.title + ":" + (1 + 1)' })
    expect(value.structured?.result).toBe('"Counter:2"')
    expect(value.text).toContain('Untrusted page content')
    const big = await call(connection, 'evaluate', { tab, script: '"x".repeat(50000)' })
    expect(big.text).toContain('[truncated at 20000 characters]')
    const thrown = await call(connection, 'evaluate', { tab, script: 'throw new Error("nope")' })
    expect(thrown.isError).toBe(true)
    expect(thrown.text).toContain('nope')
    const forever = await call(connection, 'evaluate', { tab, script: 'new Promise(() => {})' })
    expect(forever.isError).toBe(true)
    expect(forever.text).toMatch(/^timeout:/)
    const still = await call(connection, 'snapshot', { tab })
    expect(still.isError).toBe(false)
  })

  it('saves the page as a PDF resource', async () => {
    const { tab } = await open('/')
    const pdf = await call(connection, 'save_pdf', { tab })
    const block = (
      pdf.raw.content as Array<{ type: string; resource?: { blob: string; mimeType: string } }>
    )[0]
    expect(block?.type).toBe('resource')
    expect(block?.resource?.mimeType).toBe('application/pdf')
    expect(
      Buffer.from(block?.resource?.blob ?? '', 'base64')
        .subarray(0, 4)
        .toString(),
    ).toBe('%PDF')
  })
})

describe('tabs, console and network', () => {
  it('lists, selects and closes tabs; a closed tab gives not_found', async () => {
    const first = await open('/')
    const second = await open('/counter')
    const listed = await call(connection, 'list_tabs')
    const tabs = listed.structured?.tabs as Array<{ tab: string; current: boolean; url: string }>
    expect(tabs.find((tab) => tab.tab === second.tab)?.current).toBe(true)
    const selected = await call(connection, 'select_tab', { tab: first.tab })
    expect(selected.text).toContain('Fixture home')
    const closed = await call(connection, 'close_tab', { tab: first.tab })
    expect(closed.structured?.closed).toBe(first.tab)
    const gone = await call(connection, 'snapshot', { tab: first.tab })
    expect(gone.isError).toBe(true)
    expect(gone.text).toMatch(/^not_found: Tab t\d+ is not open/)
  })

  it('turns links that open a new window into tabs', async () => {
    const homes = async () => {
      const listed = await call(connection, 'list_tabs')
      const tabs = (listed.structured?.tabs ?? []) as Array<{ url: string }>
      return tabs.filter((entry) => entry.url === `${fixtures.url}/`).length
    }
    const { tab, text } = await open('/popup')
    const before = await homes()
    await call(connection, 'click', { tab, ref: refOf(text, /link "Open home/) })
    // The new tab appears when the browser opens it: poll, bounded in time.
    let after = before
    for (const deadline = Date.now() + 10_000; after === before && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      after = await homes()
    }
    expect(after).toBe(before + 1)
  })

  it('keeps console messages and uncaught errors, filtered by level', async () => {
    const { tab } = await open('/console')
    const all = await until(
      () => call(connection, 'console_messages', { tab }),
      (result) => result.text.includes('Uncaught'),
    )
    for (const line of ['[log] log line', '[warn] warn line', '[error] error line', 'Uncaught'])
      expect(all.text).toContain(line)
    expect(all.text).toContain('Untrusted page content')
    const errors = await call(connection, 'console_messages', { tab, level: 'error' })
    expect(errors.text).toContain('error line')
    expect(errors.text).not.toContain('warn line')
  })

  it('cuts console messages at the token budget asked, with a cursor that continues them', async () => {
    const { tab } = await open('/noisy')
    const first = await until(
      () => call(connection, 'console_messages', { tab, max_tokens: 100 }),
      (result) => result.text.includes('[cut at 100 tokens:'),
    )
    expect(first.text).toContain('noisy line 0 ')
    expect(first.text).not.toContain('noisy line 9 ')
    const { cursor, shown } = (first.structured as { budget: { cursor: string; shown: number } }).budget
    expect(first.text).toContain(`continue with cursor "${cursor}"`)
    expect(shown).toBeGreaterThan(1)
    const next = await call(connection, 'console_messages', { tab, max_tokens: 100, cursor })
    expect(next.text).toContain(`noisy line ${shown} `)
    expect(next.text).not.toContain('noisy line 0 ')
    const foreign = await call(connection, 'console_messages', { tab, level: 'error', cursor })
    expect(foreign.text).toMatch(/^invalid_argument: The cursor was altered/)
  })

  it('lists network requests with method, status and type', async () => {
    const { tab } = await open(`/embed?src=${encodeURIComponent('/pixel.png')}`)
    const network = await until(
      () => call(connection, 'network_requests', { tab }),
      (result) => result.text.includes('pixel.png'),
    )
    expect(network.text).toMatch(/GET http:\/\/127\.0\.0\.1:\d+\/embed\?src=\S+ 200 document/)
    expect(network.text).toMatch(/GET http:\/\/127\.0\.0\.1:\d+\/pixel\.png 200 image/)
    const failed = await call(connection, 'network_requests', { tab, failed_only: true })
    expect(failed.text).not.toContain('pixel.png')
  })
})

describe('dialogs, crashes and concurrency', () => {
  it('reports an alert in the result of the click that opened it, and never blocks later calls', async () => {
    const { tab, text } = await open('/dialogs')
    const alerted = await call(connection, 'click', { tab, ref: refOf(text, /button "Alert"/) })
    expect(alerted.isError).toBe(false)
    expect(alerted.text).toContain('A alert dialog is open: "Hello from alert"')
    // Not answered: the next call closes it and says so.
    const next = await call(connection, 'snapshot', { tab })
    expect(next.isError).toBe(false)
    expect(next.text).toContain('was closed unanswered')
    expect(next.text).toContain('h1 "Dialogs"')
  })

  it('accepts and dismisses a confirm, and answers a prompt', async () => {
    const { tab, text } = await open('/dialogs')
    const confirm = await call(connection, 'click', { tab, ref: refOf(text, /button "Confirm"/) })
    expect(confirm.text).toContain('confirm dialog is open: "Proceed?"')
    const accepted = await call(connection, 'handle_dialog', { tab, accept: true })
    expect(accepted.text).toContain('Accepted the confirm')
    expect(accepted.text).toContain('confirmed')
    await call(connection, 'click', { tab, ref: refOf(text, /button "Confirm"/) })
    const dismissed = await call(connection, 'handle_dialog', { tab, accept: false })
    expect(dismissed.text).toContain('cancelled')
    await call(connection, 'click', { tab, ref: refOf(text, /button "Prompt"/) })
    const answered = await call(connection, 'handle_dialog', { tab, accept: true, prompt_text: 'Ada' })
    expect(answered.text).toContain('prompt: Ada')
    const none = await call(connection, 'handle_dialog', { tab, accept: true })
    expect(none.isError).toBe(true)
    expect(none.text).toMatch(/^not_found: No dialog is open/)
  })

  it('replaces a crashed page with a blank one and says so', async () => {
    const { tab } = await open('/crash-me')
    const page = hosts
      .at(-1)
      ?.allTabs()
      .find((candidate) => candidate.id === tab)
    expect(page).toBeDefined()
    const crashed = new Promise((resolve) => page?.page.once('error', resolve))
    void page?.cdp.send('Page.crash').catch(() => undefined)
    await crashed
    const after = await call(connection, 'snapshot', { tab })
    expect(after.isError, after.text).toBe(false)
    expect(after.text).toContain(`The page in tab ${tab} had crashed; it was replaced by a blank page.`)
    const usable = await call(connection, 'navigate', { tab, url: `${fixtures.url}/` })
    expect(usable.text).toContain('Fixture home')
    const listed = await call(connection, 'list_tabs')
    const entry = ((listed.structured?.tabs ?? []) as Array<{ tab: string; current: boolean }>).find(
      (candidate) => candidate.tab === tab,
    )
    expect(entry?.current).toBe(true)
  })

  it('runs 8 calls in flight on one tab without errors, serialised', async () => {
    const { tab, text } = await open('/counter')
    const button = refOf(text, /button "Increment"/)
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        index % 2 === 0
          ? call(connection, 'click', { tab, ref: button })
          : call(connection, 'snapshot', { tab }),
      ),
    )
    expect(results.filter((result) => result.isError)).toEqual([])
    const final = await call(connection, 'snapshot', { tab })
    expect(final.text).toContain('Count: 4')
  })

  it('opens one context and one tab for concurrent first calls of a new connection', async () => {
    const fresh = await connect(['--allow-private-network'])
    try {
      const results = await Promise.all(Array.from({ length: 4 }, () => call(fresh, 'snapshot')))
      expect(results.filter((result) => result.isError)).toEqual([])
      expect(new Set(results.map((result) => result.structured?.tab))).toEqual(new Set(['t1']))
      // The launch's blank page plus this connection's one tab.
      expect(await hosts.at(-1)?.pageCount()).toBe(2)
    } finally {
      await fresh.close()
    }
  })

  it('runs calls on different tabs in parallel without errors', async () => {
    const tabs = await Promise.all(Array.from({ length: 4 }, () => call(connection, 'new_tab')))
    const results = await Promise.all(
      tabs.flatMap((created) => {
        const tab = created.structured?.tab as string
        return [
          call(connection, 'navigate', { tab, url: `${fixtures.url}/counter` }),
          call(connection, 'snapshot', { tab }),
        ]
      }),
    )
    expect(results.filter((result) => result.isError)).toEqual([])
  })
})
