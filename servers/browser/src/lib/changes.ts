import { lineOf } from './find.js'
import { readTree, TreeReader } from './page-tree.js'
import { type AXNode, folds, renderFrom } from './snapshot.js'
import { REF_OBJECT_GROUP, type Tab } from './tab.js'

/** Changed elements described at most, in document order; the rest are counted. */
const MAX_CHANGED = 12

// Runs in an isolated world of the page: the page's scripts can neither see the observer nor
// reach its records. Records only where changes happened, never their contents.
const WATCH = `(() => {
  const watch = globalThis.__keelWatch || (globalThis.__keelWatch = { records: [], observer: null })
  watch.observer?.disconnect()
  watch.records = []
  watch.observer = new MutationObserver((records) => {
    for (const record of records) if (watch.records.length < 5000) watch.records.push(record.target)
  })
  watch.observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true })
})()`

// The outermost changed elements still in the document, in document order.
const COLLECT = `(() => {
  const watch = globalThis.__keelWatch
  if (!watch || !watch.observer) return Object.assign([], { more: 0 })
  watch.observer.takeRecords().forEach((record) => watch.records.push(record.target))
  watch.observer.disconnect()
  watch.observer = null
  const seen = new Set()
  for (const target of watch.records) {
    const element = target.nodeType === 1 ? target : target.parentElement
    if (element && element.isConnected) seen.add(element)
  }
  watch.records = []
  const outer = [...seen].filter((element) => {
    for (let up = element.parentElement; up; up = up.parentElement) if (seen.has(up)) return false
    return true
  })
  outer.sort((a, b) => (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1))
  return Object.assign(outer.slice(0, ${MAX_CHANGED}), { more: Math.max(0, outer.length - ${MAX_CHANGED}) })
})()`

/**
 * Evaluates `expression` in the tab's isolated world (made once per document): the page's own
 * scripts cannot see or change what runs there. Returns the value, or an object id when `byValue`
 * is false; undefined when the expression threw.
 */
export async function evaluateIsolated(tab: Tab, expression: string, byValue: boolean): Promise<unknown> {
  for (let attempt = 0; attempt < 2; attempt++) {
    if (tab.watcher?.generation !== tab.generation) {
      const { executionContextId } = (await tab.cdp.send('Page.createIsolatedWorld', {
        frameId: tab.mainFrameId,
        worldName: 'keel-watch',
      })) as { executionContextId: number }
      tab.watcher = { generation: tab.generation, contextId: executionContextId }
    }
    try {
      // A handle (and what is read through it) belongs to the call's group, released when the
      // call ends (Tab.run), whatever the reader releases itself.
      if (!byValue) tab.refsHeld = true
      const { result, exceptionDetails } = (await tab.cdp.send('Runtime.evaluate', {
        expression,
        contextId: tab.watcher.contextId,
        returnByValue: byValue,
        ...(byValue ? {} : { objectGroup: REF_OBJECT_GROUP }),
      })) as { result: { value?: unknown; objectId?: string }; exceptionDetails?: unknown }
      if (exceptionDetails) return undefined
      return byValue ? result.value : result.objectId
    } catch (error) {
      // The world went away with its document (or was never made for it): make it again.
      if (!/context/i.test(String((error as Error).message))) throw error
      tab.watcher = undefined
    }
  }
  return undefined
}

/** The backend node ids of the elements in a page array (by its object id), in order. */
export async function backendIdsOf(
  tab: Tab,
  arrayObjectId: string,
  other?: (name: string, value: unknown) => void,
): Promise<number[]> {
  const items = (await tab.cdp.send('Runtime.getProperties', {
    objectId: arrayObjectId,
    ownProperties: true,
  })) as {
    result: Array<{ name: string; value?: { objectId?: string; value?: unknown } }>
  }
  // The array's other own properties (its length, a count it carries) go to `other`.
  for (const item of items.result) if (!/^\d+$/.test(item.name)) other?.(item.name, item.value?.value)
  const objects = items.result
    .filter((item) => /^\d+$/.test(item.name) && item.value?.objectId)
    .sort((a, b) => Number(a.name) - Number(b.name))
    .map((item) => item.value?.objectId as string)
  return Promise.all(
    objects.map(async (object) => {
      const { node } = (await tab.cdp.send('DOM.describeNode', { objectId: object })) as {
        node: { backendNodeId: number }
      }
      return node.backendNodeId
    }),
  )
}

/** Starts recording where the page changes (until {@link changedElements}). */
export async function watchChanges(tab: Tab): Promise<void> {
  await evaluateIsolated(tab, WATCH, true).catch(() => undefined)
}

/** The backend node ids of the outermost elements changed since {@link watchChanges}, and how many more. */
export async function changedElements(tab: Tab): Promise<{ ids: number[]; more: number }> {
  // One array, its elements at 0…n and the count left out as `more`: one getProperties reads both.
  const objectId = (await evaluateIsolated(tab, COLLECT, false).catch(() => undefined)) as string | undefined
  if (!objectId) return { ids: [], more: 0 }
  try {
    let more = 0
    const ids = await backendIdsOf(tab, objectId, (name, value) => {
      if (name === 'more') more = Number(value ?? 0)
    })
    return { ids, more }
  } finally {
    tab.cdp.send('Runtime.releaseObject', { objectId }).catch(() => undefined)
  }
}

/**
 * The lines describing what an action changed: the elements it acted on, then each changed part
 * of the page (its accessibility subtree, read lazily), within `maxChars`. Empty when nothing
 * visible changed.
 */
export async function describeChanges(
  tab: Tab,
  targets: number[],
  changed: { ids: number[]; more: number },
  maxChars: number,
): Promise<{ acted: string[]; changed: string[]; cut: boolean }> {
  const reader = await TreeReader.open(tab)
  // Every element's node at once: the round trips overlap.
  const nodeOf = (id: number) => reader.ofElement(id).catch(() => undefined)
  const [actedNodes, changedNodes] = await Promise.all([
    Promise.all(targets.map(nodeOf)),
    Promise.all(changed.ids.map(nodeOf)),
  ])
  const acted = actedNodes.flatMap((node) => (node ? [lineOf(tab, node)] : [])).filter(Boolean)
  const parts = changedNodes.filter((node): node is AXNode => node !== undefined)
  const share = Math.max(500, Math.floor(maxChars / Math.max(1, parts.length)))
  const { closed } = await readTree(
    reader,
    parts.map((node) => ({ node, indent: 0, shown: !folds(node) })),
    Math.ceil(maxChars / 10),
  )
  const lines: string[] = []
  let size = 0
  let cut = false
  for (const node of parts) {
    if (size >= maxChars) {
      cut = true
      break
    }
    const starts = [{ node, at: [], indent: 0, root: !folds(node) }]
    const part = renderFrom(reader.nodes, starts, tab.refs, { subtree: true, closed })
    let partSize = 0
    for (const line of part.lines) {
      partSize += line.length + 1
      if (partSize > share || size + partSize > maxChars) {
        cut = true
        break
      }
      lines.push(line)
    }
    if (part.cut) cut = true
    size += partSize
  }
  if (changed.more) cut = true
  return { acted, changed: lines, cut }
}
