import { ToolError, z } from '@keel-mcp/core'
import type { Tab } from '../lib/tab.js'
import { shownUrl } from '../lib/url.js'
import {
  type BrowserSettings,
  browse,
  defineTool,
  dialogText,
  onTab,
  pageInfo,
  pageOutput,
  pageResult,
  tabArgument,
} from './shared.js'

const waitUntil = z.enum(['load', 'domcontentloaded', 'networkidle']).default('load').describe('Done when')

const puppeteerWait = {
  load: 'load',
  domcontentloaded: 'domcontentloaded',
  networkidle: 'networkidle0',
} as const

/** {@link Tab.release} with the page's own dialogs closed meanwhile; false when it does not answer. */
async function leave(tab: Tab): Promise<boolean> {
  tab.leaving = tab.generation
  try {
    return await tab.release()
  } finally {
    tab.leaving = undefined
  }
}

/**
 * Runs a navigation and turns its failures into errors the model can act on: a refused address
 * (the page's own URL, a redirect hop) says which rule refused it; a slow page is a timeout that
 * leaves the tab usable.
 */
async function navigation(
  tab: Tab,
  settings: BrowserSettings,
  go: () => Promise<unknown>,
  released = false,
): Promise<{ data: { tab: string; url: string }; text: string }> {
  // `released`: the caller let the page go just before (navigate does, to replace a stuck page).
  if (!released) await leave(tab)
  const refusedBefore = tab.refusedCount
  tab.lastRefusedTopLevel = undefined
  // Leaving the page is what was asked: the dialogs of the page being left are closed, a
  // beforeunload prompt ("leave the page?") accepted.
  tab.leaving = tab.generation
  const dialog = tab.nextDialog()
  try {
    const going = go()
    going.catch(() => undefined)
    // A dialog the page opens while loading blocks its load: the call reports it instead of waiting.
    const opened = await Promise.race([going.then(() => undefined), dialog.promise])
    if (opened) return { data: pageInfo(tab), text: `Tab ${tab.id}. ${dialogText(opened)}` }
  } catch (error) {
    const refusal = tab.refusalSince(refusedBefore)
    if (refusal)
      throw new ToolError('permission_denied', `Refused ${refusal.url}: ${refusal.reason}`, {
        hint: 'The server refuses this address by policy; the tab did not go there.',
      })
    if ((error as Error).name === 'TimeoutError') {
      await tab.cdp.send('Page.stopLoading').catch(() => undefined)
      throw new ToolError(
        'timeout',
        `The page did not finish loading within ${settings.timeoutNavigation} ms`,
        {
          hint: 'The tab is still usable: take a snapshot, or navigate with wait_until=domcontentloaded.',
        },
      )
    }
    const message = String((error as Error).message)
    const net = /net::ERR_[A-Z_]+/.exec(message)
    if (net) throw new ToolError('unavailable', `Navigation failed: ${net[0]}`, { hint: 'Check the URL.' })
    throw error
  } finally {
    tab.leaving = undefined
    dialog.cancel()
  }
  return pageResult(tab, settings)
}

export const navigate = defineTool({
  name: 'navigate',
  title: 'Navigate',
  description:
    'Opens a URL; returns the page snapshot with refs for actions. With no session on a sessionless request it starts one: pass its handle on.',
  input: {
    url: z.string().describe('URL'),
    wait_until: waitUntil,
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: browse,
  taskSupport: 'optional',
  handle: { kind: 'session', opens: 'when-missing' },
  async run({ url, wait_until, tab: tabId }, context) {
    const { deps } = context
    let target: URL
    try {
      target = new URL(url)
    } catch {
      throw new ToolError('invalid_argument', `Not an absolute URL: ${url}`, {
        hint: 'Include the scheme: https://example.com',
      })
    }
    const refusal = await deps.host.policy.check(target.href, { topLevel: true })
    if (refusal)
      throw new ToolError('permission_denied', `Refused ${shownUrl(target.href)}: ${refusal.reason}`)
    return onTab(context, tabId, async (stuck, session) => {
      // A page that does not let go (a script that never returns, a dialog loop) is left behind:
      // the tab goes on in a fresh page.
      const tab = (await leave(stuck)) ? stuck : await session.replacePage(stuck)
      return navigation(
        tab,
        deps.settings,
        () =>
          tab.page.goto(target.href, {
            waitUntil: puppeteerWait[wait_until],
            timeout: deps.settings.timeoutNavigation,
          }),
        true,
      )
    })
  },
})

function historyTool(name: 'go_back' | 'go_forward', title: string, description: string) {
  return defineTool({
    name,
    title,
    description,
    input: { tab: tabArgument },
    output: pageOutput,
    annotations: browse,
    async run({ tab: tabId }, context) {
      const { settings } = context.deps
      return onTab(context, tabId, async (tab) => {
        // Asked of the tab's own history first: with no entry to go to there is nothing to wait for.
        const history = await tab.cdp.send('Page.getNavigationHistory')
        const target = history.currentIndex + (name === 'go_back' ? -1 : 1)
        if (target < 0 || target >= history.entries.length)
          throw new ToolError(
            'not_found',
            `No ${name === 'go_back' ? 'earlier' : 'later'} page in this tab's history`,
            { hint: 'navigate to a URL instead.' },
          )
        const before = tab.page.url()
        let moved = true
        const result = await navigation(tab, settings, async () => {
          const options = { waitUntil: 'load' as const, timeout: settings.timeoutNavigation }
          const response =
            name === 'go_back' ? await tab.page.goBack(options) : await tab.page.goForward(options)
          moved = response !== null || tab.page.url() !== before
        })
        return moved ? result : { ...result, text: `No history entry to go to.\n${result.text}` }
      })
    },
  })
}

export const goBack = historyTool('go_back', 'Go back', 'Goes back in history; returns the snapshot.')
export const goForward = historyTool(
  'go_forward',
  'Go forward',
  'Goes forward in history; returns the snapshot.',
)

export const reload = defineTool({
  name: 'reload',
  title: 'Reload',
  description: 'Reloads the page; returns the snapshot.',
  input: { tab: tabArgument },
  output: pageOutput,
  annotations: browse,
  async run({ tab: tabId }, context) {
    const { settings } = context.deps
    return onTab(context, tabId, (tab) =>
      navigation(tab, settings, () =>
        tab.page.reload({ waitUntil: 'load', timeout: settings.timeoutNavigation }),
      ),
    )
  },
})
