import { ToolError, z } from '@keel-mcp/core'
import { TabGoneError } from '../lib/browser.js'
import { shownUrl } from '../lib/url.js'
import {
  browse,
  defineTool,
  delay,
  fullSnapshot,
  onTab,
  pageOutput,
  sessionOf,
  tabArgument,
  titleOf,
  untrusted,
} from './shared.js'

const tabShape = z.object({ tab: z.string(), url: z.string(), title: z.string(), current: z.boolean() })

export const listTabs = defineTool({
  name: 'list_tabs',
  title: 'List tabs',
  description: 'Open tabs: id, URL, title, current.',
  input: {},
  output: { tabs: z.array(tabShape) },
  annotations: { ...browse, idempotentHint: true },
  async run(_args, context) {
    const { session, notices } = await sessionOf(context)
    const tabs = await Promise.all(
      [...session.tabs.values()].map(async (tab) => ({
        tab: tab.id,
        url: shownUrl(tab.page.url()),
        // From the browser process: a busy or blocked page never holds up the list.
        title: await titleOf(tab),
        current: tab.id === session.current,
      })),
    )
    const lines = tabs.map(
      (tab) => `${tab.current ? '*' : ' '} ${tab.tab} ${tab.url} ${JSON.stringify(tab.title)}`,
    )
    return {
      data: { tabs },
      text: [...notices, tabs.length ? untrusted(lines.join('\n')) : 'No tabs are open.'].join('\n'),
    }
  },
})

export const newTab = defineTool({
  name: 'new_tab',
  title: 'New tab',
  description: 'Opens a blank tab and makes it current.',
  input: {},
  output: pageOutput,
  annotations: browse,
  async run(_args, context) {
    const { session, notices } = await sessionOf(context)
    const tab = await session.newTab()
    return {
      data: { tab: tab.id, url: shownUrl(tab.page.url()) },
      text: [...notices, `Opened tab ${tab.id}; it is now current.`].join('\n'),
    }
  },
})

export const selectTab = defineTool({
  name: 'select_tab',
  title: 'Select tab',
  description: 'Makes a tab current; returns its snapshot.',
  input: {
    tab: z
      .string()
      .regex(/^t\d{1,6}$/, 'must be a tab id like t1')
      .describe('Tab id'),
  },
  output: pageOutput,
  annotations: browse,
  async run({ tab: tabId }, context) {
    const { session } = await sessionOf(context)
    if (!session.tabs.has(tabId)) throw new TabGoneError(tabId)
    session.current = tabId
    await session.tabs
      .get(tabId)
      ?.page.bringToFront()
      .catch(() => undefined)
    return onTab(context, tabId, (tab) => fullSnapshot(tab, context.deps.settings))
  },
})

export const closeTab = defineTool({
  name: 'close_tab',
  title: 'Close tab',
  description: 'Closes a tab.',
  input: { tab: tabArgument },
  output: { closed: z.string(), current: z.string().nullable() },
  annotations: browse,
  async run({ tab: tabId }, context) {
    const { session } = await sessionOf(context)
    const id = tabId ?? session.current
    const tab = id ? session.tabs.get(id) : undefined
    if (!id || !tab) throw id ? new TabGoneError(id) : new ToolError('not_found', 'No tab is open')
    // Not queued behind the tab's calls, and without beforeunload: a page that is busy, in a
    // dialog loop or trapping unload is closed all the same (the browser process closes it).
    await Promise.race([
      tab.page.close({ runBeforeUnload: false }).catch(() => undefined),
      delay(5000, undefined),
    ])
    session.tabs.delete(id)
    if (session.current === id) session.current = [...session.tabs.keys()].at(-1)
    return {
      data: { closed: id, current: session.current ?? null },
      text: `Closed ${id}. ${session.current ? `Current tab: ${session.current}.` : 'No tabs are open.'}`,
    }
  },
})
