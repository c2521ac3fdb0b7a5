import type { Browser, CDPSession } from 'puppeteer-core'
import { bounded, PageStoppedError, type Tab } from './tab.js'

/**
 * Limits that a launched browser gets from its command line, kept by watching instead in a browser
 * this server attached to (--cdp-endpoint), whose flags are the user's:
 *
 * - Memory. A launched browser's renderers get `--max-old-space-size` (a page over it crashes its
 *   own tab) and `--max-memory` is read from /proc for the browser's whole process tree. An attached
 *   browser is neither ours to flag nor, on another machine, ours to read, and DevTools names no
 *   process for a target. So every tab of the server's contexts is measured through its own
 *   session: `Performance.getMetrics` (the page's JavaScript heap; Chromium answers it between two
 *   steps of a script that never returns, as it does `Runtime.terminateExecution`) and
 *   `Runtime.getHeapUsage` (the same heap, plus array buffers and external strings, answered only
 *   when the page is idle: a busy page counts those as last seen). A page over its limit has its
 *   script stopped and is closed; its tab goes on with a blank page.
 * - Extensions. Chromium runs the user's extensions that are allowed in incognito in every browser
 *   context DevTools creates: their content scripts in the server's pages (an isolated world whose
 *   origin is `chrome-extension://…`), a split-mode extension's service worker or background page
 *   in the context itself. DevTools can neither keep them out of a context nor stop a content
 *   script before it runs (it runs at document start, before any event about it reaches this
 *   process). So the server refuses: at the first sign of one in a session's context the context is
 *   closed, and every call of that session says why and how to attach to a browser without them.
 */

/** What a page measured last: JavaScript heap, and array buffers when the page answered. */
interface Measured {
  heap: number
  external: number
}

const measured = new WeakMap<Tab, Measured>()

/** The memory a tab's page held when last measured, in bytes (0 before the first measure). */
export function tabMemory(tab: Tab): number {
  const last = measured.get(tab)
  return last ? last.heap + last.external : 0
}

/**
 * Turns on what the watch reads in a fresh tab of an attached browser: the page's metrics, and its
 * execution contexts (an extension's content script shows as an isolated world of its origin).
 * `onExtension` is called with the extension's name and origin the first time one shows.
 */
export async function watchTab(tab: Tab, onExtension: (name: string, origin: string) => void): Promise<void> {
  tab.cdp.on('Runtime.executionContextCreated', (event: { context: { origin?: string; name?: string } }) => {
    const origin = event.context.origin ?? ''
    if (origin.startsWith('chrome-extension://')) onExtension(event.context.name || origin, origin)
  })
  await Promise.all([tab.cdp.send('Performance.enable'), tab.cdp.send('Runtime.enable')])
}

/** Tabs whose `Runtime.getHeapUsage` is not answered yet (a busy page): not asked again meanwhile. */
const asking = new WeakSet<Tab>()

/** Measures one tab; keeps the last figures when the page does not answer. */
export async function measure(tab: Tab): Promise<number> {
  const last = measured.get(tab) ?? { heap: 0, external: 0 }
  let usage: Promise<{ usedSize: number; backingStorageSize?: number } | undefined> =
    Promise.resolve(undefined)
  if (!asking.has(tab)) {
    asking.add(tab)
    const asked = (tab.cdp as CDPSession).send('Runtime.getHeapUsage') as Promise<{
      usedSize: number
      backingStorageSize?: number
    }>
    void asked.catch(() => undefined).finally(() => asking.delete(tab))
    // Array buffers and external strings: answered by an idle page only, so not waited for long.
    usage = bounded(asked, 250).catch(() => undefined)
  }
  const [metrics, heapUsage] = await Promise.all([
    bounded(tab.cdp.send('Performance.getMetrics'), 2000).catch(() => undefined),
    usage,
  ])
  const heap = metrics?.metrics.find((metric) => metric.name === 'JSHeapUsedSize')?.value
  const next = {
    heap: Math.max(heap ?? 0, heapUsage?.usedSize ?? 0) || last.heap,
    external: heapUsage ? (heapUsage.backingStorageSize ?? 0) : last.external,
  }
  measured.set(tab, next)
  return next.heap + next.external
}

/** Closes every target of the contexts `guarded` names whose URL is an extension's. */
export async function closeExtensionTargets(
  browser: Browser,
  guarded: (contextId: string) => boolean,
): Promise<string[]> {
  const session = await browser.target().createCDPSession()
  try {
    const { targetInfos } = await session.send('Target.getTargets')
    const found = targetInfos.filter(
      (info) =>
        info.url.startsWith('chrome-extension://') &&
        info.browserContextId !== undefined &&
        guarded(info.browserContextId),
    )
    await Promise.all(
      found.map((info) =>
        session.send('Target.closeTarget', { targetId: info.targetId }).catch(() => undefined),
      ),
    )
    return found.map((info) => info.url)
  } finally {
    await session.detach().catch(() => undefined)
  }
}

/** The refusal a session gets when an extension runs in its context. */
export function extensionRefusal(what: string): PageStoppedError {
  return new PageStoppedError(
    `The attached browser runs an extension in this session's pages (${what}): its scripts could read them, so the session was closed`,
    'permission_denied',
    'Attach to a browser whose extensions are not allowed in incognito (chrome://extensions, Details, "Allow in Incognito" off for each), or one started with --disable-extensions; or let the server launch its own browser (no --cdp-endpoint).',
  )
}

/** The error of a page closed for its memory. */
export function memoryStop(
  tab: Tab,
  usedBytes: number,
  limitBytes: number,
  together: boolean,
): PageStoppedError {
  const mib = (bytes: number) => Math.round(bytes / 1048576)
  return new PageStoppedError(
    together
      ? `The server's pages in the attached browser used ${mib(usedBytes)} MiB together, over --max-memory (${mib(limitBytes)} MiB); the page in tab ${tab.id}, the largest, was closed and the tab given a blank page`
      : `The page in tab ${tab.id} used ${mib(usedBytes)} MiB, over the ${mib(limitBytes)} MiB a page may use; it was closed and the tab given a blank page`,
    'too_large',
    'Navigate to a lighter page, or close other tabs (close_tab). --max-memory sets the limit.',
  )
}
