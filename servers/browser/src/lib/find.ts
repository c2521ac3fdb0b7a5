import { backendIdsOf, evaluateIsolated } from './changes.js'
import { TreeReader } from './page-tree.js'
import { type AXNode, renderFrom } from './snapshot.js'
import type { Tab } from './tab.js'

export interface FindQuery {
  /** Visible text or accessible name (label, title, alt, placeholder, value) containing this. */
  text?: string | undefined
  /** ARIA role (button, link, textbox, heading…). */
  role?: string | undefined
  offset: number
  limit: number
  boxes: boolean
}

export interface Found {
  /** One line a match: the element with its ref, then where it is. */
  lines: string[]
  total: number
  /** Offset of the next match, when more are left. */
  next?: number | undefined
}

// Runs in the isolated world: one walk over the document's elements, no layout except for the
// elements that match (visibility, and boxes when asked).
const SEARCH = `(query) => {
  const norm = (value) => String(value ?? '').replace(/\\s+/g, ' ').trim().toLowerCase()
  const want = query.text ? norm(query.text) : ''
  const INPUT_ROLES = { button: 'button', submit: 'button', reset: 'button', image: 'button', checkbox: 'checkbox',
    radio: 'radio', range: 'slider', number: 'spinbutton', search: 'searchbox' }
  const TAG_ROLES = { A: 'link', BUTTON: 'button', TEXTAREA: 'textbox', NAV: 'navigation', MAIN: 'main',
    ASIDE: 'complementary', FORM: 'form', TABLE: 'table', TR: 'row', TD: 'cell', TH: 'columnheader', UL: 'list',
    OL: 'list', LI: 'listitem', OPTION: 'option', DIALOG: 'dialog', ARTICLE: 'article', P: 'paragraph',
    IMG: 'img', SUMMARY: 'button', DETAILS: 'group', HEADER: 'banner', FOOTER: 'contentinfo', LABEL: 'LabelText' }
  const roleOf = (element) => {
    const explicit = element.getAttribute('role')
    if (explicit) return explicit.split(' ')[0]
    const tag = element.tagName
    if (/^H[1-6]$/.test(tag)) return 'heading'
    if (tag === 'A') return element.hasAttribute('href') ? 'link' : ''
    if (tag === 'INPUT') return INPUT_ROLES[(element.type || 'text').toLowerCase()] || 'textbox'
    if (tag === 'SELECT') return element.multiple || element.size > 1 ? 'listbox' : 'combobox'
    return TAG_ROLES[tag] || ''
  }
  const ACTIVE = new Set(['link', 'button', 'textbox', 'searchbox', 'checkbox', 'radio', 'slider', 'spinbutton',
    'combobox', 'listbox', 'option', 'menuitem', 'tab', 'switch', 'treeitem', 'heading'])
  const ownText = (element) => {
    let out = ''
    for (const child of element.childNodes) if (child.nodeType === 3) out += child.data
    return norm(out)
  }
  // Fields whose label holds the text, from one pass over the labels (a field's own \`labels\`
  // list searches the document, once per field).
  const labelled = new Set()
  if (want)
    for (const label of document.querySelectorAll('label'))
      if (label.control && norm(label.textContent).includes(want)) labelled.add(label.control)
  const matches = (element, role) => {
    if (!want) return true
    for (const name of ['aria-label', 'title', 'alt', 'placeholder'])
      if (norm(element.getAttribute(name)).includes(want)) return true
    if ((element.tagName === 'INPUT' || element.tagName === 'TEXTAREA') && norm(element.value).includes(want)) return true
    // A field is found by its label's text; the label itself gives way to the field.
    if (labelled.has(element)) return true
    if (element.tagName === 'LABEL' && element.control) return false
    return (ACTIVE.has(role) ? norm(element.textContent) : ownText(element)).includes(want)
  }
  const visible = (element) =>
    element.getAttribute('aria-hidden') !== 'true' &&
    (typeof element.checkVisibility !== 'function' || element.checkVisibility({ visibilityProperty: true }))
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD'])
  const found = []
  const root = document.body || document.documentElement
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT, {
    acceptNode: (node) => (SKIP.has(node.tagName) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  })
  for (let element = walker.currentNode; element; element = walker.nextNode()) {
    const role = roleOf(element)
    if (query.role && role !== query.role) continue
    if (!matches(element, role) || !visible(element)) continue
    const last = found[found.length - 1]
    // The most specific match: text inside a button is the button; a wrapper gives way to what it holds.
    if (last && last.contains(element)) {
      if (ACTIVE.has(roleOf(last)) && !ACTIVE.has(role)) continue
      found[found.length - 1] = element
    } else found.push(element)
  }
  const page = found.slice(query.offset, query.offset + query.limit)
  const label = (element) => {
    const heading = element.querySelector(':scope > h1, :scope > h2, :scope > h3, :scope > h4, :scope > h5, :scope > h6, :scope > legend, :scope > caption')
    const named = element.getAttribute('aria-label') || (heading && heading.textContent)
    return named ? norm(named).slice(0, 60) : ''
  }
  const where = page.map((element) => {
    const labels = []
    for (let up = element.parentElement, hops = 0; up && hops < 12 && labels.length < 2; up = up.parentElement, hops++) {
      const text = label(up)
      if (text && !labels.includes(text)) labels.unshift(text)
    }
    return labels.join(' › ')
  })
  const boxes = query.boxes
    ? page.map((element) => {
        const rect = element.getBoundingClientRect()
        return [rect.left, rect.top, rect.width, rect.height].map(Math.round)
      })
    : []
  return { elements: page, where, boxes, total: found.length }
}`

/**
 * Finds elements by text or accessible name and role, in document order, and gives each its ref
 * and a line of context (the headings or labels of the parts around it). The search runs in the
 * page in one walk; only the matches returned are read from the accessibility tree.
 */
export async function findElements(tab: Tab, query: FindQuery): Promise<Found> {
  const objectId = (await evaluateIsolated(tab, `(${SEARCH})(${JSON.stringify({ ...query })})`, false)) as
    | string
    | undefined
  if (!objectId) return { lines: [], total: 0 }
  try {
    const { result } = (await tab.cdp.send('Runtime.getProperties', { objectId, ownProperties: true })) as {
      result: Array<{ name: string; value?: { objectId?: string; value?: unknown } }>
    }
    const field = (name: string) => result.find((property) => property.name === name)?.value
    const total = Number(field('total')?.value ?? 0)
    const list = field('elements')?.objectId
    const ids = list ? await backendIdsOf(tab, list) : []
    const details = (await tab.cdp.send('Runtime.callFunctionOn', {
      objectId,
      functionDeclaration: 'function(){return {where: this.where, boxes: this.boxes}}',
      returnByValue: true,
    })) as { result: { value?: { where: string[]; boxes: number[][] } } }
    const { where = [], boxes = [] } = details.result.value ?? {}
    const reader = await TreeReader.open(tab)
    const lines: string[] = []
    for (const [index, id] of ids.entries()) {
      const node = await reader.ofElement(id).catch(() => undefined)
      let line = node ? lineOf(tab, node) : ''
      if (!line) line = `element #${tab.refs.refFor(id)}`
      const box = boxes[index]
      if (box) line += ` [box ${box.join(',')}]`
      const context = where[index]
      lines.push(context ? `${line} — in ${JSON.stringify(context)}` : line)
    }
    const next = query.offset + ids.length < total ? query.offset + ids.length : undefined
    return { lines, total, next }
  } finally {
    tab.cdp.send('Runtime.releaseObject', { objectId }).catch(() => undefined)
  }
}

/** An element's own line (role, name, states, ref, value), without its children. */
export function lineOf(tab: Tab, node: AXNode): string {
  const only: AXNode = { ...node, ignored: false, childIds: [] }
  const { lines } = renderFrom(
    new Map([[only.nodeId, only]]),
    [{ node: only, at: [], indent: 0, root: true }],
    tab.refs,
    {
      subtree: true,
    },
  )
  return lines[0] ?? ''
}
