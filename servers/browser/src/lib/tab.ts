import type { CDPSession, Dialog, HTTPRequest, Page } from 'puppeteer-core'
import { type Decision, interceptRequests, type PausedRequest } from './intercept.js'
import type { UrlPolicy } from './policy.js'
import { Refs, refCounterOf } from './refs.js'
import { type Route, routeFor } from './routes.js'
import { shownUrl } from './url.js'

/** One console message, as kept in a tab's ring buffer. */
export interface ConsoleEntry {
  level: string
  text: string
  location?: string
}

/** One finished or failed request, as kept in a tab's ring buffer. */
export interface NetworkEntry {
  /** Numbered per tab, for network_request. */
  id: number
  /** The request itself, for its headers and body (network_request). */
  request: HTTPRequest
  method: string
  url: string
  status?: number
  type: string
  size?: number
  failed?: string
}

/** A dialog (alert, confirm, prompt, beforeunload) the page opened and nobody answered yet. */
export interface OpenDialog {
  type: string
  message: string
  defaultValue: string
  dialog: Dialog
}

export const CONSOLE_LIMIT = 200
/**
 * Console messages a page may log in one second. Every message crosses the DevTools pipe and is
 * parsed by this process: a page logging without pause would take this process's time from every
 * other call. Past this rate the page's scripts are stopped (until the tab navigates).
 */
export const CONSOLE_FLOOD_PER_SECOND = 2000
export const NETWORK_LIMIT = 300

function push<T>(ring: T[], item: T, limit: number): void {
  ring.push(item)
  if (ring.length > limit) ring.splice(0, ring.length - limit)
}

/** A call on a tab that ran out of its time limit (the page may still be busy with it). */
export class CallTimeoutError extends Error {
  override name = 'CallTimeoutError'
  constructor(readonly limitMs: number) {
    super(`The page did not answer within ${limitMs} ms`)
  }
}

/**
 * `work`'s outcome, or a {@link CallTimeoutError} after `limitMs`, or the abort reason once `signal`
 * aborts: whichever comes first. `work` is not stopped (a CDP call cannot be taken back); its late
 * outcome is ignored.
 */
export function bounded<T>(work: Promise<T>, limitMs: number, signal?: AbortSignal): Promise<T> {
  work.catch(() => undefined)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => finish(() => reject(signal?.reason ?? new Error('aborted')))
    const timer = setTimeout(() => finish(() => reject(new CallTimeoutError(limitMs))), limitMs)
    function finish(settle: () => void) {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      settle()
    }
    if (signal?.aborted) return onAbort()
    signal?.addEventListener('abort', onAbort, { once: true })
    work.then(
      (value) => finish(() => resolve(value)),
      (error: unknown) => finish(() => reject(error)),
    )
  })
}

/**
 * Why the server closed a tab's page, or a session's context, in a browser it attached to: the page
 * went over its memory limit, or an extension ran in it. The call that was running on it, or the
 * session's next call, answers with it.
 */
export class PageStoppedError extends Error {
  override name = 'PageStoppedError'
  constructor(
    message: string,
    readonly kind: 'too_large' | 'permission_denied',
    readonly hint: string,
  ) {
    super(message)
  }
}

/** Error from puppeteer/CDP when a ref's node is gone. */
export class StaleRefError extends Error {
  override name = 'StaleRefError'
}

/** A refused request, kept so a failed navigation can say why. */
export interface RefusedRequest {
  url: string
  reason: string
  topLevel: boolean
}

/** The object group of the page handles a call makes (released when the call ends). */
export const REF_OBJECT_GROUP = 'keel-refs'

/**
 * One tab: a page, its CDP session, the refs of its latest snapshot, bounded console and network
 * buffers, and a queue so that calls on one tab run one at a time (calls on other tabs do not wait).
 */
export class Tab {
  readonly console: ConsoleEntry[] = []
  readonly network: NetworkEntry[] = []
  /** How many requests were refused so far, and the latest ones (top level and any). */
  refusedCount = 0
  lastRefused: RefusedRequest | undefined
  lastRefusedTopLevel: RefusedRequest | undefined
  /** The refs handed out since the last main-frame navigation. */
  readonly refs: Refs
  /**
   * Incremented when the main frame loads a new document: refs of older documents are stale.
   * Navigations within the document (anchors, `history.pushState`) keep it, and the refs.
   */
  generation = 0
  /** The document generation the Accessibility domain was last enabled for. */
  treeGeneration = -1
  /** The isolated world that watches the page for changes, and its document generation. */
  watcher: { generation: number; contextId: number } | undefined
  /**
   * Whether the call running on this tab made page handles (in {@link REF_OBJECT_GROUP}: for refs,
   * and the lists a search or the change watcher returns, with every element read from them):
   * released when the call ends, else the page would keep each element they name, removed or
   * not, until it navigates.
   */
  refsHeld = false
  dialog: OpenDialog | undefined
  mainFrameId = ''
  /** The session's routes (--caps network): mocked or blocked requests, judged after the policy. */
  routes: readonly Route[] = []
  /** How many requests the network buffer has numbered. */
  requestCount = 0
  /** Main-frame navigations the page itself requested (links, forms, location changes). */
  navigationRequests = 0
  crashed = false
  closed = false
  /** Set when the server closed this tab's page (attached browser: memory, an extension). */
  stopped: PageStoppedError | undefined
  /**
   * The generation of the document a call is navigating away from, while it does: that document's
   * dialogs are closed at once (a beforeunload prompt accepted), so a page cannot hold the tab with
   * them. The new document's dialogs are reported as usual.
   */
  leaving: number | undefined
  /** Set when the page's scripts were stopped (a console flood); cleared by the next navigation. */
  scriptsStopped = false
  private consoleWindow = { start: 0, count: 0 }
  private queue: Promise<void> = Promise.resolve()
  private dialogWaiters: Array<(dialog: OpenDialog) => void> = []

  private constructor(
    readonly id: string,
    readonly page: Page,
    readonly cdp: CDPSession,
  ) {
    this.refs = new Refs(refCounterOf(page.browserContext()))
  }

  /**
   * Resolves once the main frame has navigated and its document is ready (`DOMContentLoaded`), or
   * navigated within its document, or its navigation request failed: `true`; `false` on `timeoutMs`,
   * on `signal`, or when the page closes. Every listener and the timer are removed whichever way it
   * ends. (Puppeteer's `waitForNavigation` keeps its watcher, its listeners and its timer for the
   * page's whole life when it is aborted: one leak per action that did not navigate.)
   */
  waitForMainFrameLoad(timeoutMs: number, signal: AbortSignal): Promise<boolean> {
    const { cdp, page } = this
    return new Promise((resolve) => {
      let committed = false
      const onNavigated = (event: { frame: { id: string; parentId?: string } }) => {
        if (event.frame.id === this.mainFrameId) committed = true
      }
      const onReady = () => {
        if (committed) finish(true)
      }
      const onWithinDocument = (event: { frameId: string }) => {
        if (event.frameId === this.mainFrameId) finish(true)
      }
      const onFailed = (request: HTTPRequest) => {
        if (request.isNavigationRequest() && request.frame() === page.mainFrame()) finish(true)
      }
      const onGone = () => finish(false)
      const timer = setTimeout(onGone, timeoutMs)
      function finish(value: boolean) {
        clearTimeout(timer)
        cdp.off('Page.frameNavigated', onNavigated)
        cdp.off('Page.domContentEventFired', onReady)
        cdp.off('Page.navigatedWithinDocument', onWithinDocument)
        page.off('requestfailed', onFailed)
        page.off('close', onGone)
        signal.removeEventListener('abort', onGone)
        resolve(value)
      }
      if (signal.aborted || page.isClosed()) return finish(false)
      cdp.on('Page.frameNavigated', onNavigated)
      cdp.on('Page.domContentEventFired', onReady)
      cdp.on('Page.navigatedWithinDocument', onWithinDocument)
      page.on('requestfailed', onFailed)
      // `on`, never `once`: puppeteer's `once` registers a wrapper that `off(event, handler)` cannot
      // find, so a waiter that ended any other way kept its listener (and with it its timer, signal
      // and promise) until the page closed: about 1 KB per action for the tab's whole life.
      page.on('close', onGone)
      signal.addEventListener('abort', onGone, { once: true })
    })
  }

  /** Wires a fresh page: request policy, buffers, dialogs, crash and close tracking. */
  static async attach(
    id: string,
    page: Page,
    policy: UrlPolicy,
    onRefused: (entry: RefusedRequest) => void,
  ): Promise<Tab> {
    const cdp = await page.createCDPSession()
    const tab = new Tab(id, page, cdp)
    // Page events on our own session: a renderer-initiated navigation is announced here before the
    // script that started it returns, so an action knows at once whether it left the page.
    await cdp.send('Page.enable')
    const tree = (await cdp.send('Page.getFrameTree')) as { frameTree: { frame: { id: string } } }
    tab.mainFrameId = tree.frameTree.frame.id
    cdp.on('Page.frameRequestedNavigation', (event: { frameId: string }) => {
      if (event.frameId === tab.mainFrameId) tab.navigationRequests++
    })
    // Every request is judged before it leaves (see interceptRequests: not puppeteer's interception,
    // which could leave a worker's request paused for good). The cache is off, as it is under
    // puppeteer's interception, so a cached response does not skip the policy or a route.
    await page.setCacheEnabled(false)
    await interceptRequests(cdp, (request) => tab.judge(request, policy, onRefused))
    page.on('console', (message) => {
      if (tab.floods()) return
      const where = message.location()
      push(
        tab.console,
        {
          level: message.type(),
          text: message.text().slice(0, 2000),
          ...(where?.url ? { location: `${shownUrl(where.url)}:${where.lineNumber ?? 0}` } : {}),
        },
        CONSOLE_LIMIT,
      )
    })
    page.on('pageerror', (error) => {
      const text = error instanceof Error ? error.message : String(error)
      push(tab.console, { level: 'error', text: `Uncaught ${text.slice(0, 2000)}` }, CONSOLE_LIMIT)
    })
    page.on('requestfinished', (request) => {
      const response = request.response()
      const length = response?.headers()['content-length']
      push(
        tab.network,
        {
          id: ++tab.requestCount,
          request,
          method: request.method(),
          url: shownUrl(request.url()).slice(0, 500),
          ...(response ? { status: response.status() } : {}),
          type: request.resourceType(),
          ...(length ? { size: Number(length) } : {}),
        },
        NETWORK_LIMIT,
      )
    })
    page.on('requestfailed', (request) => {
      push(
        tab.network,
        {
          id: ++tab.requestCount,
          request,
          method: request.method(),
          url: shownUrl(request.url()).slice(0, 500),
          type: request.resourceType(),
          failed: request.failure()?.errorText ?? 'failed',
        },
        NETWORK_LIMIT,
      )
    })
    // CDP's own event, not puppeteer's `framenavigated`: puppeteer reports a navigation within the
    // document (an anchor, pushState) the same way, and those keep the document and its refs.
    cdp.on('Page.frameNavigated', (event: { frame: { id: string; parentId?: string } }) => {
      if (event.frame.parentId || event.frame.id !== tab.mainFrameId) return
      tab.generation++
      tab.refs.clear()
    })
    page.on('dialog', (dialog) => {
      if (tab.leaving === tab.generation) {
        const leave = dialog.type() === 'beforeunload' ? dialog.accept() : dialog.dismiss()
        void leave.catch(() => undefined)
        return
      }
      const open: OpenDialog = {
        type: dialog.type(),
        message: dialog.message().slice(0, 1000),
        defaultValue: dialog.defaultValue(),
        dialog,
      }
      tab.dialog = open
      for (const waiter of tab.dialogWaiters.splice(0)) waiter(open)
    })
    page.on('error', () => {
      tab.crashed = true
    })
    page.on('close', () => {
      tab.closed = true
    })
    return tab
  }

  /** What becomes of a request: refused by the policy or a route, answered by a route, or let go. */
  private async judge(
    request: PausedRequest,
    policy: UrlPolicy,
    onRefused: (entry: RefusedRequest) => void,
  ): Promise<Decision> {
    const topLevel = request.resourceType === 'Document' && request.frameId === this.mainFrameId
    let refusal: { reason: string } | undefined
    try {
      refusal = await policy.check(request.url, { topLevel })
    } catch {
      refusal = { reason: 'the address could not be checked' }
    }
    if (refusal) {
      const entry = { url: shownUrl(request.url).slice(0, 500), reason: refusal.reason, topLevel }
      this.refusedCount++
      this.lastRefused = entry
      if (topLevel) this.lastRefusedTopLevel = entry
      onRefused(entry)
      return { action: 'fail' }
    }
    // Routes apply only to what the policy allowed: a mock never opens a refused address.
    const route = routeFor(this.routes, request.url)
    if (route?.action === 'block') return { action: 'fail' }
    if (route)
      return { action: 'fulfill', status: route.status, contentType: route.contentType, body: route.body }
    return { action: 'continue' }
  }

  /** Counts a console message; true when the page floods (its scripts are then stopped once). */
  private floods(): boolean {
    const now = Date.now()
    if (now - this.consoleWindow.start >= 1000) this.consoleWindow = { start: now, count: 0 }
    if (++this.consoleWindow.count <= CONSOLE_FLOOD_PER_SECOND) return false
    if (!this.scriptsStopped) {
      this.scriptsStopped = true
      push(
        this.console,
        {
          level: 'warn',
          text: `[The page logged over ${CONSOLE_FLOOD_PER_SECOND} console messages in a second: its scripts were stopped until the tab navigates.]`,
        },
        CONSOLE_LIMIT,
      )
      // Both are served while the page's script runs (DevTools interrupts it for them).
      void this.cdp.send('Emulation.setScriptExecutionDisabled', { value: true }).catch(() => undefined)
      void this.cdp.send('Runtime.terminateExecution').catch(() => undefined)
    }
    return true
  }

  /**
   * Before navigating away: lets the page go. Its scripts run again if a flood had stopped them; an
   * open dialog is closed; and a page that does not answer within a second (a script that never
   * returns, a dialog loop) has its running script terminated. False when it still does not answer.
   */
  async release(): Promise<boolean> {
    if (this.scriptsStopped) {
      this.scriptsStopped = false
      await bounded(this.cdp.send('Emulation.setScriptExecutionDisabled', { value: false }), 1000).catch(
        () => undefined,
      )
    }
    if (this.dialog) await this.answerDialog(this.dialog.type === 'beforeunload')
    const answers = () =>
      bounded(this.cdp.send('Runtime.evaluate', { expression: '0' }), 1000).then(
        () => true,
        () => false,
      )
    if (await answers()) return true
    // Asked again after the termination: a page that was only slow, or whose loop ended, is kept.
    await bounded(this.cdp.send('Runtime.terminateExecution'), 1000).catch(() => undefined)
    return answers()
  }

  /**
   * Runs `work` after the earlier calls on this tab, within `limitMs` of being called (waiting
   * included) and until `signal` aborts. A call that runs out of time rejects with
   * {@link CallTimeoutError} and gives up its place at once: a page that never answers (a busy
   * loop, a huge document) holds up the calls on its own tab for at most one time limit each, and
   * never the calls on other tabs.
   */
  async run<T>(work: () => Promise<T>, limitMs: number, signal: AbortSignal): Promise<T> {
    const before = this.queue
    let release = () => {}
    this.queue = new Promise<void>((resolve) => {
      release = resolve
    })
    try {
      return await bounded(
        before.then(() => {
          signal.throwIfAborted()
          return work()
        }),
        limitMs,
        signal,
      )
    } finally {
      if (this.refsHeld) {
        this.refsHeld = false
        // Sent before the next call may start: the session answers in order, so no handle that
        // call makes is released with these.
        this.cdp.send('Runtime.releaseObjectGroup', { objectGroup: REF_OBJECT_GROUP }).catch(() => undefined)
      }
      release()
    }
  }

  /** Resolves when a dialog opens (or at once if one is open); `cancel` forgets the waiter. */
  nextDialog(): { promise: Promise<OpenDialog>; cancel(): void } {
    if (this.dialog) return { promise: Promise.resolve(this.dialog), cancel: () => undefined }
    let waiter: ((dialog: OpenDialog) => void) | undefined
    const promise = new Promise<OpenDialog>((resolve) => {
      waiter = resolve
      this.dialogWaiters.push(resolve)
    })
    return {
      promise,
      cancel: () => {
        this.dialogWaiters = this.dialogWaiters.filter((candidate) => candidate !== waiter)
      },
    }
  }

  /** Answers the open dialog; returns what it was. */
  async answerDialog(accept: boolean, promptText?: string): Promise<OpenDialog | undefined> {
    const open = this.dialog
    if (!open) return undefined
    this.dialog = undefined
    try {
      if (accept) await open.dialog.accept(promptText)
      else await open.dialog.dismiss()
    } catch {
      // Already handled (the page closed or navigated): it is gone either way.
    }
    return open
  }

  /** The refusal that explains a failure after `count` refusals had been seen, if any. */
  refusalSince(count: number): RefusedRequest | undefined {
    if (this.refusedCount === count) return undefined
    return this.lastRefusedTopLevel ?? this.lastRefused
  }
}
