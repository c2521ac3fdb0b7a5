import { promises as fs } from 'node:fs'
// node:fs/promises loads on first use through the getter, not at start.
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { traceUpstream } from '@keel-mcp/core'
import type { Browser, BrowserContext, ConnectOptions, Page, Target } from 'puppeteer-core'
import type { CdpEndpoint } from './cdp-endpoint.js'
import { discoverBrowser } from './discover.js'
import type { UrlPolicy } from './policy.js'
import type { PolicyProxy } from './proxy.js'
import { type RefCounter, useRefCounter } from './refs.js'
import type { Route } from './routes.js'
import { restoreScript, type StorageState } from './storage-state.js'
import { bounded, type PageStoppedError, type RefusedRequest, Tab } from './tab.js'

/** How the browser is launched; only the command line sets these, never a tool. */
export interface LaunchSettings {
  executablePath: string | undefined
  headless: boolean
  viewport: { width: number; height: number }
  userDataDir: string | undefined
  /**
   * A running browser to attach to (--cdp-endpoint) instead of launching one: every session then
   * gets a context of its own whose traffic goes through the policy proxy, and the user's own
   * tabs and contexts are left alone.
   */
  cdpEndpoint?: CdpEndpoint | undefined
  noSandbox: boolean
  downloadDir: string | undefined
  extraArgs: string[]
  /** Cookies and localStorage every session starts with (--storage-state). */
  storageState?: StorageState | undefined
  /** Test seam: where the proxy connects for a judged host (tests reach "public" names on loopback). */
  dialOverride?: ((host: string) => string | undefined) | undefined
  limits: BrowserLimits
}

/** What one browser may hold at once; set on the command line. */
export interface BrowserLimits {
  /** Browser contexts (one per HTTP client session; stdio uses the browser's own). */
  contexts: number
  /** Tabs per session, pop-ups included. */
  tabs: number
  /**
   * Chromium's resident memory (all its processes) above which no context or tab is opened. In an
   * attached browser: the memory the server's pages use together, and the most one page may use.
   */
  memoryBytes: number
}

/** How often the server's pages in an attached browser are measured against the memory limits. */
const MEMORY_POLL_MS = 500

/** JavaScript heap of one renderer: a page that allocates without end crashes its own tab there. */
export const RENDERER_HEAP_MB = 512

/** A context, tab or memory limit of the browser was reached. */
export class BrowserLimitError extends Error {
  override name = 'BrowserLimitError'
  constructor(
    message: string,
    readonly hint: string,
  ) {
    super(message)
  }
}

export interface HostLog {
  debug(message: string, fields?: Record<string, unknown>): void
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
}

/** Origins a session remembers for save_storage_state (a storage-state file holds at most this many). */
const MAX_ORIGINS = 1000

const BASE_ARGS = [
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-quic',
  '--disable-extensions',
  // WebRTC ignores the proxy: without these two, STUN and TURN over UDP (and host candidates) reach
  // any address a page names. Together they leave WebRTC only TURN over TCP, which goes through the
  // proxy and is judged there; the first alone does not hold.
  '--webrtc-ip-handling-policy=disable_non_proxied_udp',
  '--force-webrtc-ip-handling-policy',
  // Chromium resolves no name itself: every name reaches the proxy unresolved and is resolved (and
  // judged) there, so DNS prefetch, a STUN server's name or any other lookup is no side channel.
  // The one exception is the proxy's own address, an IP literal that needs no lookup.
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
  `--js-flags=--max-old-space-size=${RENDERER_HEAP_MB}`,
  // After a click or a key, Chromium holds the page's tasks back until its next frame (up to 16 ms)
  // to paint sooner. An action's answer waits for one round of the page's tasks (its handlers'
  // timers, a navigation they start), so every action would wait for a frame. The page's tasks
  // and frames still run in the same order; only the wait goes. (Puppeteer merges this list with
  // its own and with --disable-features in the extra arguments.)
  '--disable-features=DeferRendererTasksAfterInput',
]

/**
 * The tabs of one client connection, in a browser context of their own (cookies and storage are
 * never shared between two HTTP sessions). The stdio client uses the browser's default context, so
 * a persistent profile (--user-data-dir) keeps its cookies.
 */
export class BrowserSession {
  readonly tabs = new Map<string, Tab>()
  current: string | undefined
  private counter = 0
  private opening: Promise<Tab> | undefined
  private readonly replacing = new Map<string, Promise<Tab>>()
  /** Set when this session's state was lost with a crashed browser; said once in the next result. */
  notice: string | undefined
  /** Set when the session may not go on (attached browser: an extension runs in its context). */
  refused: PageStoppedError | undefined
  /** The latest {@link stop}: done once the stopped page is closed and its tab has a blank one. */
  stopping: Promise<unknown> = Promise.resolve()
  /** Requests this session's tabs mock or block (--caps network), in the order added. */
  readonly routes: Route[] = []
  /** Where this session's downloads are saved (with --caps downloads): its own folder over HTTP. */
  downloadDir: string | undefined
  /**
   * The origins whose documents this session's tabs have shown (main frames), and those its
   * --storage-state holds: the origins save_storage_state reads localStorage from, open or not.
   */
  readonly origins = new Set<string>()

  constructor(
    readonly context: BrowserContext,
    private readonly host: BrowserHost,
    readonly owned: boolean,
  ) {}

  /** Opens a tab and makes it current (refused past the tab and memory limits). */
  async newTab(page?: Page): Promise<Tab> {
    try {
      return await this.openTab(page)
    } catch (error) {
      // The context closed under it because the session was refused: that is the reason to give.
      throw this.refused ?? error
    }
  }

  private async openTab(page?: Page): Promise<Tab> {
    if (this.refused) throw this.refused
    if (!page) await this.host.assertRoom('tab', this.tabs.size)
    const id = `t${++this.counter}`
    const opened = page ?? (await this.context.newPage())
    const tab = await Tab.attach(id, opened, this.host.policy, (entry) => this.host.refused(entry))
    tab.routes = this.routes
    this.trackOrigins(tab)
    await this.host.watchTab(tab, this)
    const restore = this.host.settings.storageState && restoreScript(this.host.settings.storageState)
    if (restore)
      await tab.cdp.send('Page.addScriptToEvaluateOnNewDocument', {
        source: restore,
        worldName: 'keel-storage',
      })
    this.tabs.set(id, tab)
    this.current = id
    opened.on('close', () => this.forget(id, opened))
    // Pages the page opens (window.open, target=_blank) become tabs, under the same policy.
    opened.on('popup', (popup) => {
      if (!popup) return
      // A pop-up past the tab or memory limit is closed at once: a storm of them opens nothing.
      void this.host
        .assertRoom('tab', this.tabs.size)
        .then(
          () => this.newTab(popup),
          () => popup.close({ runBeforeUnload: false }),
        )
        .catch(() => undefined)
    })
    return tab
  }

  /** Notes an origin that may hold localStorage (http and https only; a bounded number). */
  noteOrigin(origin: string): void {
    if (this.origins.size < MAX_ORIGINS && /^https?:\/\/[^/]+$/.test(origin)) this.origins.add(origin)
  }

  private trackOrigins(tab: Tab): void {
    tab.cdp.on('Page.frameNavigated', (event: { frame: { parentId?: string; securityOrigin?: string } }) => {
      if (!event.frame.parentId && event.frame.securityOrigin) this.noteOrigin(event.frame.securityOrigin)
    })
  }

  /** The tab named, or the current one (a fresh one when none is open). */
  async tab(id: string | undefined): Promise<Tab> {
    if (id !== undefined) {
      const tab = this.tabs.get(id)
      if (!tab || tab.closed) throw new TabGoneError(id)
      return this.replaceIfCrashed(tab)
    }
    const current = this.current ? this.tabs.get(this.current) : undefined
    if (current && !current.closed) return this.replaceIfCrashed(current)
    // Concurrent calls that find no tab open one together.
    this.opening ??= this.newTab().finally(() => {
      this.opening = undefined
    })
    return this.opening
  }

  /** Drops a closed tab, unless its id already holds a newer page (a crashed page's replacement). */
  private forget(id: string, page: Page): void {
    if (this.tabs.get(id)?.page !== page) return
    this.tabs.delete(id)
    if (this.current === id) this.current = [...this.tabs.keys()].at(-1)
  }

  /** A crashed page cannot be used again: the tab keeps its id with a fresh blank page. */
  private replaceIfCrashed(tab: Tab): Promise<Tab> {
    if (!tab.crashed) return Promise.resolve(tab)
    // Concurrent calls on a crashed tab share one replacement.
    let pending = this.replacing.get(tab.id)
    if (!pending) {
      pending = this.replace(tab).finally(() => this.replacing.delete(tab.id))
      this.replacing.set(tab.id, pending)
    }
    return pending
  }

  private async replace(tab: Tab): Promise<Tab> {
    const fresh = await this.replacePage(tab)
    this.notice = `The page in tab ${tab.id} had crashed; it was replaced by a blank page.`
    return fresh
  }

  /**
   * Gives the tab a fresh blank page in place of its page (crashed, or not answering): same id, same
   * place among the tabs. The old page is closed without its beforeunload, bounded in time.
   */
  async replacePage(tab: Tab): Promise<Tab> {
    const page = await this.context.newPage()
    const fresh = await Tab.attach(tab.id, page, this.host.policy, (entry) => this.host.refused(entry))
    fresh.routes = this.routes
    this.trackOrigins(fresh)
    await this.host.watchTab(fresh, this)
    // The new page takes the id first: closing the old one then leaves the tab (and which tab is
    // current) as it was.
    this.tabs.set(tab.id, fresh)
    await bounded(tab.page.close({ runBeforeUnload: false }), 5000).catch(() => undefined)
    page.on('close', () => this.forget(tab.id, page))
    return fresh
  }

  /**
   * Closes a tab's page for `error` (attached browser: over its memory limit): its running script is
   * stopped first, and the tab goes on with a blank page. The call running on it, or else the next
   * call, says why.
   */
  async stop(tab: Tab, error: PageStoppedError): Promise<void> {
    if (tab.stopped || tab.closed || this.tabs.get(tab.id) !== tab) return
    tab.stopped = error
    this.stopping = Promise.all([
      // Chromium runs this between two steps of a script that never returns (unlike most calls).
      bounded(tab.cdp.send('Runtime.terminateExecution'), 1000).catch(() => undefined),
      this.replacePage(tab).catch(() => undefined),
    ])
    await this.stopping
    // Said by the next call, which finds the tab on its blank page (unless the call running on the
    // stopped page said it).
    this.notice = `${error.message}.`
  }

  /** Ends the session for `error` (an extension runs in its context): its context and pages close. */
  async refuse(error: PageStoppedError): Promise<void> {
    if (this.refused) return
    this.refused = error
    for (const tab of this.tabs.values()) tab.stopped ??= error
    await this.close()
  }

  async close(): Promise<void> {
    if (this.owned) await this.context.close().catch(() => undefined)
    else for (const tab of this.tabs.values()) await tab.page.close().catch(() => undefined)
    this.tabs.clear()
  }
}

/** The browser of --cdp-endpoint could not be reached. */
export class BrowserAttachError extends Error {
  override name = 'BrowserAttachError'
  constructor(
    message: string,
    readonly hint: string,
  ) {
    super(message)
  }
}

export class TabGoneError extends Error {
  override name = 'TabGoneError'
  constructor(readonly tab: string) {
    super(`Tab ${tab} is not open`)
  }
}

/**
 * The one browser of the process: discovered and launched on first use (never at start-up),
 * relaunched after a crash or kill, closed (and its temporary profile removed) on dispose.
 */
export class BrowserHost {
  private browser: Browser | undefined
  private launching: Promise<Browser> | undefined
  private readonly sessions = new Map<string, BrowserSession>()
  private readonly creating = new Map<string, Promise<BrowserSession>>()
  private readonly lost = new Set<string>()
  /**
   * Each connection's ref numbers, kept across a browser relaunch: the new browser's contexts go on
   * counting where the crashed one stopped, so a ref kept from before the crash is refused, never
   * handed to another element.
   */
  private readonly refCounters = new Map<string, RefCounter>()
  /** Numbers the download folders of HTTP sessions. */
  private sessionFolders = 0
  private profileDir: string | undefined
  private disposed = false
  private launches = 0
  private proxy: PolicyProxy | undefined
  private initialPage: Page | undefined
  private proxyAddress: string | undefined
  /** Ids of the contexts this server made in an attached browser: WebRTC is removed from their documents. */
  private readonly guardedContexts = new Set<string>()
  /** Attached browser: the memory the server's pages used together at the last measure. */
  private attachedBytes = 0
  private memoryTimer: NodeJS.Timeout | undefined
  private measuring = false

  constructor(
    readonly settings: LaunchSettings,
    readonly policy: UrlPolicy,
    private readonly log: HostLog,
  ) {}

  refused(entry: RefusedRequest): void {
    this.log.info('request refused', { url: entry.url, reason: entry.reason })
  }

  /** The session of a client connection, created (and the browser launched) on first use. */
  session(key: string): Promise<BrowserSession> {
    const existing = this.sessions.get(key)
    if (existing) return Promise.resolve(existing)
    // Concurrent first calls of one connection share one creation: one context, one first tab.
    let pending = this.creating.get(key)
    if (!pending) {
      pending = this.createSession(key).finally(() => this.creating.delete(key))
      this.creating.set(key, pending)
    }
    return pending
  }

  /**
   * Refuses one more context or tab when the limit for it, or Chromium's memory ceiling, is reached.
   * `count`: how many the caller holds now (contexts of the browser, or tabs of one session).
   */
  async assertRoom(what: 'context' | 'tab', count: number): Promise<void> {
    const { limits } = this.settings
    const limit = what === 'context' ? limits.contexts : limits.tabs
    if (count >= limit)
      throw new BrowserLimitError(
        what === 'context'
          ? `The browser holds ${count} sessions' contexts, its limit (--max-contexts ${limit})`
          : `This session has ${count} tabs open, its limit (--max-tabs ${limit})`,
        what === 'context'
          ? 'Close other MCP sessions or browser sessions (close_session), or try again when one ends.'
          : 'Close a tab (close_tab), or navigate in an open one.',
      )
    const used = await this.memoryBytes()
    if (used !== undefined && used >= limits.memoryBytes)
      throw new BrowserLimitError(
        `${this.settings.cdpEndpoint ? "The server's pages in the attached browser use" : 'Chromium uses'} ${Math.round(used / 1048576)} MiB, at its ceiling (--max-memory ${Math.round(limits.memoryBytes / 1048576)})`,
        'Close tabs (close_tab) or sessions to free memory.',
      )
  }

  /**
   * Chromium's resident memory, all its processes together (Linux; undefined elsewhere). In an
   * attached browser, what the server's pages used together at the last measure.
   */
  async memoryBytes(): Promise<number | undefined> {
    if (this.settings.cdpEndpoint) return this.attachedBytes
    const pid = this.pid()
    if (pid === undefined) return undefined
    const { treeResidentBytes } = await import('./memory.js')
    return treeResidentBytes(pid)
  }

  /** Browser contexts held now (sessions being created included), but the shared stdio one and `except`'s. */
  private contextCount(except: string): number {
    const keys = new Set([...this.sessions.keys(), ...this.creating.keys()])
    keys.delete('stdio')
    keys.delete(except)
    return keys.size
  }

  private async createSession(key: string): Promise<BrowserSession> {
    const shared = key === 'stdio'
    if (!shared) await this.assertRoom('context', this.contextCount(key))
    const browser = await this.ensureBrowser()
    // Each HTTP session saves into a folder of its own: one client never lists another's downloads.
    let downloadDir = this.settings.downloadDir
    if (downloadDir && !shared) {
      downloadDir = join(downloadDir, `session-${process.pid}-${++this.sessionFolders}`)
      await fs.mkdir(downloadDir, { recursive: true })
    }
    // An attached browser's default context is the user's: every session, stdio's too, gets a
    // context of its own there, which sends its traffic to the policy proxy (the browser was not
    // started with it).
    const attached = !!this.settings.cdpEndpoint
    const context =
      shared && !attached
        ? browser.defaultBrowserContext()
        : await browser.createBrowserContext({
            downloadBehavior: this.downloadBehavior(downloadDir),
            ...(attached
              ? { proxyServer: `http://${this.proxyAddress}`, proxyBypassList: ['<-loopback>'] }
              : {}),
          })
    if (attached && context.id) this.guardedContexts.add(context.id)
    let counter = this.refCounters.get(key)
    if (!counter) {
      counter = { next: 0 }
      this.refCounters.set(key, counter)
    }
    useRefCounter(context, counter)
    const session = new BrowserSession(context, this, !shared || attached)
    session.downloadDir = downloadDir
    for (const { origin } of this.settings.storageState?.origins ?? []) session.noteOrigin(origin)
    const cookies = this.settings.storageState?.cookies
    if (cookies?.length) await context.setCookie(...(cookies as Parameters<BrowserContext['setCookie']>))
    // The blank page Chromium opens at launch becomes the stdio client's first tab: one renderer
    // fewer than opening another.
    if (shared && this.initialPage && !this.initialPage.isClosed()) {
      await session.newTab(this.initialPage)
      this.initialPage = undefined
    }
    if (this.lost.delete(key))
      session.notice =
        'The browser had stopped (crashed or killed) and was started again: earlier tabs, cookies and refs are gone.'
    this.sessions.set(key, session)
    return session
  }

  /** Frees one connection's context and tabs. */
  async closeSession(key: string): Promise<void> {
    const session = this.sessions.get(key) ?? (await this.creating.get(key)?.catch(() => undefined))
    this.sessions.delete(key)
    this.lost.delete(key)
    this.refCounters.delete(key)
    await session?.close()
    if (session?.context.id) this.guardedContexts.delete(session.context.id)
  }

  private downloadBehavior(downloadDir = this.settings.downloadDir) {
    return downloadDir ? { policy: 'allow' as const, downloadPath: downloadDir } : { policy: 'deny' as const }
  }

  private ensureBrowser(): Promise<Browser> {
    if (this.disposed) return Promise.reject(new Error('The server is shutting down'))
    if (this.browser?.connected) return Promise.resolve(this.browser)
    // Launching (or attaching to) the browser is upstream work of the call that needs it first.
    this.launching ??= traceUpstream('browser', this.settings.cdpEndpoint ? 'attach' : 'launch', () =>
      this.launch(),
    ).finally(() => {
      this.launching = undefined
    })
    return this.launching
  }

  private async launch(): Promise<Browser> {
    const endpoint = this.settings.cdpEndpoint
    const executablePath = endpoint
      ? undefined
      : discoverBrowser({ executablePath: this.settings.executablePath })
    // Loaded here, on the first call that needs a browser: start-up never pays for puppeteer.
    const { default: puppeteer } = await import('puppeteer-core')
    if (!endpoint && !this.settings.userDataDir && !this.profileDir)
      this.profileDir = await fs.mkdtemp(join(tmpdir(), 'keel-browser-'))
    if (!this.proxy) {
      // Like puppeteer, the proxy (and with it node:http) loads with the first browser.
      const { PolicyProxy } = await import('./proxy.js')
      this.proxy = new PolicyProxy(
        this.policy,
        // Debug level: Chromium's own background connections (update checks, sign-in) land here too.
        (target, reason) => this.log.debug('connection refused', { target, reason }),
        this.settings.dialOverride,
      )
      this.proxyAddress = await this.proxy.start()
    }
    const { width, height } = this.settings.viewport
    const started = Date.now()
    const browser = endpoint
      ? await this.attach(puppeteer, endpoint)
      : await puppeteer.launch({
          executablePath,
          headless: this.settings.headless,
          // A pipe, not a debugging port: no other local process can drive this browser, and the
          // browser exits when this process does.
          pipe: true,
          userDataDir: this.settings.userDataDir ?? this.profileDir,
          defaultViewport: { width, height },
          args: [
            ...BASE_ARGS,
            // Every connection, loopback included (Chromium bypasses proxies for loopback unless told
            // not to), goes through the policy proxy.
            `--proxy-server=http://${this.proxyAddress}`,
            '--proxy-bypass-list=<-loopback>',
            ...(this.settings.noSandbox ? ['--no-sandbox'] : []),
            ...this.settings.extraArgs,
          ],
          // Puppeteer turns Chromium's pop-up blocker off; it stays on: a page opens a window only from
          // a click.
          ignoreDefaultArgs: ['--disable-popup-blocking'],
          handleSIGINT: false,
          handleSIGTERM: false,
          handleSIGHUP: false,
          downloadBehavior: this.downloadBehavior(),
          protocolTimeout: 60_000,
        })
    // The launch flags that hold WebRTC to the proxy are not this browser's: its documents in the
    // server's contexts get no peer connection at all (see egress-guard.ts).
    if (endpoint) {
      const { guardContexts } = await import('./egress-guard.js')
      await guardContexts(browser, (context) => !!context.id && this.guardedContexts.has(context.id))
    }
    if (endpoint) this.watchAttached(browser)
    // An attached browser's pages are the user's: none becomes a tab.
    else this.initialPage = (await browser.pages())[0]
    this.launches++
    this.log.info(endpoint ? 'browser attached' : 'browser launched', {
      ...(endpoint ? {} : { executablePath }),
      ms: Date.now() - started,
      launch: this.launches,
    })
    browser.on('disconnected', () => {
      if (this.browser !== browser) return
      this.browser = undefined
      if (this.disposed) return
      this.log.warn('The browser stopped; it will be started again on the next call')
      for (const key of this.sessions.keys()) this.lost.add(key)
      this.sessions.clear()
    })
    this.browser = browser
    return browser
  }

  /**
   * Attached browser: watches the server's contexts for extensions (a target of theirs in one ends
   * its session) and measures the server's pages against the memory limits (see attached-guard.ts).
   */
  private watchAttached(browser: Browser): void {
    const onTarget = (target: Target) => {
      const id = target.browserContext().id
      if (!id || !this.guardedContexts.has(id) || !target.url().startsWith('chrome-extension://')) return
      void this.refuseExtension(browser, id, target.url())
    }
    browser.on('targetcreated', onTarget)
    browser.on('targetchanged', onTarget)
    clearInterval(this.memoryTimer)
    this.memoryTimer = setInterval(() => {
      if (this.browser === browser) void this.measureAttached()
      else clearInterval(this.memoryTimer)
    }, MEMORY_POLL_MS).unref()
  }

  /** Ends the session whose context `contextId` an extension's target runs in, and closes the target. */
  private async refuseExtension(browser: Browser, contextId: string, url: string): Promise<void> {
    const { closeExtensionTargets, extensionRefusal } = await import('./attached-guard.js')
    const origin = /^chrome-extension:\/\/[^/]+/.exec(url)?.[0] ?? url
    this.log.warn('an extension runs in a context of the server; its session is refused', { origin })
    const session = [...this.sessions.values()].find((each) => each.context.id === contextId)
    await Promise.all([
      session?.refuse(extensionRefusal(origin)),
      closeExtensionTargets(browser, (id) => id === contextId).catch(() => undefined),
    ])
  }

  /** Attached browser: a tab's page is watched for extensions and measured (see attached-guard.ts). */
  async watchTab(tab: Tab, session: BrowserSession): Promise<void> {
    if (!this.settings.cdpEndpoint) return
    const { extensionRefusal, watchTab } = await import('./attached-guard.js')
    await watchTab(tab, (name, origin) => {
      this.log.warn('an extension runs in a page of the server; its session is refused', { origin })
      void session.refuse(extensionRefusal(`${name}, ${origin}`))
    })
  }

  /**
   * Measures every page of the server's contexts in an attached browser: a page over its limit
   * (the renderer heap cap, or --max-memory when lower) is closed, and so is the largest page when
   * they are over --max-memory together. A measure still running is not started again.
   */
  private async measureAttached(): Promise<void> {
    if (this.measuring) return
    this.measuring = true
    try {
      const { measure, memoryStop } = await import('./attached-guard.js')
      const limit = this.settings.limits.memoryBytes
      const perPage = Math.min(RENDERER_HEAP_MB * 1048576, limit)
      const pages = [...this.sessions.values()].flatMap((session) =>
        [...session.tabs.values()]
          .filter((tab) => !tab.closed && !tab.stopped)
          .map((tab) => ({ session, tab, bytes: 0 })),
      )
      await Promise.all(
        pages.map(async (page) => {
          page.bytes = await measure(page.tab)
        }),
      )
      let total = 0
      for (const page of pages) {
        if (page.bytes > perPage)
          await page.session.stop(page.tab, memoryStop(page.tab, page.bytes, perPage, false))
        else total += page.bytes
      }
      const largest = pages
        .filter((page) => !page.tab.stopped)
        .reduce<(typeof pages)[number] | undefined>(
          (most, page) => (page.bytes > (most?.bytes ?? -1) ? page : most),
          undefined,
        )
      if (largest && total > limit) {
        await largest.session.stop(largest.tab, memoryStop(largest.tab, total, limit, true))
        total -= largest.bytes
      }
      this.attachedBytes = total
    } catch (error) {
      this.log.debug('measuring the pages failed', { error: (error as Error).message })
    } finally {
      this.measuring = false
    }
  }

  /** Connects to the running browser of --cdp-endpoint, or says why it cannot. */
  private async attach(
    puppeteer: { connect(options: ConnectOptions): Promise<Browser> },
    endpoint: CdpEndpoint,
  ): Promise<Browser> {
    const { width, height } = this.settings.viewport
    try {
      return await puppeteer.connect({
        ...endpoint,
        defaultViewport: { width, height },
        protocolTimeout: 60_000,
      })
    } catch (error) {
      const where = 'browserURL' in endpoint ? endpoint.browserURL : endpoint.browserWSEndpoint
      throw new BrowserAttachError(
        `Cannot attach to the browser at ${where}: ${(error as Error).message}`,
        'Start Chrome with --remote-debugging-port (and --remote-debugging-address=127.0.0.1), and pass the DevTools URL it prints as --cdp-endpoint.',
      )
    }
  }

  /** Every open tab of every session (tests). */
  allTabs(): Tab[] {
    return [...this.sessions.values()].flatMap((session) => [...session.tabs.values()])
  }

  /** How many pages the browser has open, in every context (tests). */
  async pageCount(): Promise<number> {
    return (await this.browser?.pages())?.length ?? 0
  }

  /** The browser's process id, when one is running (tests and benchmarks). */
  pid(): number | undefined {
    return this.browser?.process()?.pid
  }

  async dispose(): Promise<void> {
    this.disposed = true
    clearInterval(this.memoryTimer)
    const browser = this.browser ?? (await this.launching?.catch(() => undefined))
    this.browser = undefined
    const sessions = [...this.sessions.values()]
    this.sessions.clear()
    if (browser && this.settings.cdpEndpoint) {
      // Not ours to close: only this server's contexts go, and the user's browser runs on.
      await Promise.race([
        Promise.all(sessions.map((session) => session.close())),
        new Promise((resolve) => setTimeout(resolve, 2000).unref()),
      ])
      await browser.disconnect().catch(() => undefined)
    } else if (browser) {
      const child = browser.process()
      await Promise.race([
        browser.close().catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, 600).unref()),
      ])
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
    await this.proxy?.close()
    this.proxy = undefined
    if (this.profileDir) {
      await fs.rm(this.profileDir, { recursive: true, force: true, maxRetries: 2 }).catch(() => undefined)
      this.profileDir = undefined
    }
  }
}
