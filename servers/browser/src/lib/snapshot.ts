import { assertPageSize, SNAPSHOT_MAX_ELEMENTS } from './limits.js'
import type { Refs } from './refs.js'
import type { Tab } from './tab.js'
import { StaleRefError } from './tab.js'

/** A node of CDP's `Accessibility.getFullAXTree`. */
export interface AXNode {
  nodeId: string
  ignored?: boolean
  role?: { value?: unknown }
  name?: { value?: unknown }
  value?: { value?: unknown }
  properties?: Array<{ name: string; value: { value?: unknown } }>
  childIds?: string[]
  parentId?: string
  backendDOMNodeId?: number
}

/** Roles a model acts on: each gets a ref even when it has no name. */
const INTERACTIVE = new Set([
  'button',
  'link',
  'textbox',
  'searchbox',
  'combobox',
  'checkbox',
  'radio',
  'switch',
  'slider',
  'spinbutton',
  'menuitem',
  'menuitemcheckbox',
  'menuitemradio',
  'option',
  'tab',
  'treeitem',
  'listbox',
  'ListBox',
  'Iframe',
  'textarea',
])

/** Roles that add nothing on their own: their children take their place. */
const TRANSPARENT = new Set(['generic', 'none', 'presentation', 'Section', 'LabelText', 'MenuListPopup'])

/** Roles never shown, with their subtree (bullets; a text's pieces repeat the text). */
const HIDDEN = new Set(['ListMarker', 'InlineTextBox'])
const LEAF = new Set(['textbox', 'searchbox', 'spinbutton', 'slider'])

const STATES = ['checked', 'pressed', 'expanded', 'selected', 'disabled', 'required', 'readonly']

/** Chromium's names for roles that ARIA names shorter. */
const ROLE_NAMES: Record<string, string> = { image: 'img' }

const text = (value: unknown): string => (value === undefined || value === null ? '' : String(value))

function quote(value: string, max: number): string {
  const flat = value.replace(/\s+/g, ' ').trim()
  return JSON.stringify(flat.length > max ? `${flat.slice(0, max)}…` : flat)
}

/** The text with all whitespace removed: to compare texts that differ only in spacing. */
const squash = (value: string): string => value.replace(/\s+/g, '')

/** Unnamed roles holding only text that are shown as that text alone: a paragraph is its text. */
const TEXT_BLOCKS = new Set(['paragraph'])
/** Inline roles whose text reads as part of the sentence around it. */
const INLINE = new Set(['strong', 'emphasis', 'mark', 'time', 'subscript', 'superscript'])

/** One element of a line: `role "name" [state] #e1: "value"`. */
interface Head {
  role: string
  name: string
  /** States and the ref, each with its leading space. */
  marks: string
  value: string
}

/**
 * A rendered line: one element, or a chain of elements each holding only the next
 * (`listitem > link "Docs" #e4`), with the text its last element holds, and its children.
 * A plain string is a line of text.
 */
interface Line {
  heads: Head[]
  text?: string
  children: Item[]
}
type Item = string | Line

export interface SnapshotOptions {
  /** Render only the subtree of this ref. */
  ref?: string | undefined
  /** Levels of the tree to render (unlimited when unset). */
  depth?: number | undefined
  /** Character cap of the rendered tree. */
  maxChars: number
}

export interface Snapshot {
  lines: string[]
  text: string
  truncated: boolean
  /** Refs shown in this snapshot. */
  refs: number
}

/** `e12` (or `#e12`, as shown) → the element's backend node id, or a stale-ref error naming what to do. */
export function parseRef(tab: Tab, ref: string): number {
  const id = tab.refs.nodeOf(ref.trim().replace(/^#/, ''))
  if (id === undefined)
    throw new StaleRefError(
      `Ref ${ref} is not on the current page (the page changed, or the ref never existed). Take a new snapshot and use its refs.`,
    )
  return id
}

/** One space a level: the tree's depth costs a byte a line and level, not two or four. */
const INDENT = ' '

/**
 * An element's children without the text that only repeats a name shown anyway: its own (a
 * table's caption, a group's legend) or that of the element beside it (a field's label). Inside
 * a paragraph, neighbouring texts (split by inline elements) are one text.
 */
function tidy(children: Item[], name: string, role: string): Item[] {
  let items = children
  if (TEXT_BLOCKS.has(role)) {
    items = []
    for (const item of children) {
      const last = items.at(-1)
      // Chromium keeps the spaces around inline text, so the pieces join as they are.
      if (typeof item === 'string' && typeof last === 'string') items[items.length - 1] = last + item
      else items.push(item)
    }
  }
  const own = squash(name)
  const namesOf = (item: Item | undefined): string[] =>
    item === undefined || typeof item === 'string' ? [] : item.heads.map((head) => squash(head.name))
  return items.filter((item, index) => {
    if (typeof item === 'string') {
      const words = squash(item)
      return (
        words !== '' &&
        words !== own &&
        !namesOf(items[index - 1]).includes(words) &&
        !namesOf(items[index + 1]).includes(words)
      )
    }
    const [head, ...rest] = item.heads
    return !(
      own &&
      head &&
      !rest.length &&
      !head.name &&
      !head.marks &&
      !item.children.length &&
      item.text !== undefined &&
      squash(item.text) === own
    )
  })
}

function headText(head: Head): string {
  let out = head.role
  if (head.name) out += ` ${quote(head.name, 150)}`
  out += head.marks
  if (head.value) out += `: ${quote(head.value, 200)}`
  return out
}

/** How much of the tree {@link renderTree} renders. */
export interface RenderOptions {
  /** Levels of lines to render (unlimited when unset). */
  depth?: number | undefined
  /** The root is an element the caller named (by ref), shown even when it is the whole page. */
  subtree?: boolean | undefined
}

/**
 * An accessibility tree (CDP's `Accessibility.getFullAXTree` nodes) as compact indented text,
 * one element a line, one space a level. Elements that carry nothing of their own (unnamed
 * `generic` wrappers, ignored nodes) are folded: their children take their place. An element
 * holding only one element shares its line with it (`listitem > link "Docs" #e4`). Every
 * interactive or named element gets a ref (`#e12`) from `refs`, kept for as long as the element
 * lives. Text is quoted, so page text never reads as an element or a ref.
 */
export function renderTree(
  nodes: AXNode[],
  root: AXNode | undefined,
  refs: Refs,
  options: RenderOptions = {},
): { lines: string[]; refs: number } {
  const byId = new Map(nodes.map((node) => [node.nodeId, node]))
  const maxDepth = options.depth ?? Number.POSITIVE_INFINITY
  let shownRefs = 0

  const childrenOf = (node: AXNode): Item[] => {
    const items: Item[] = []
    for (const id of node.childIds ?? []) {
      const child = byId.get(id)
      if (child) items.push(...build(child, false))
    }
    return items
  }

  const build = (node: AXNode, isRoot: boolean): Item[] => {
    const role = text(node.role?.value)
    const name = text(node.name?.value)
    if (HIDDEN.has(role) && !isRoot) return []
    const skip =
      !isRoot && (node.ignored || ((TRANSPARENT.has(role) || role === '') && !name && !INTERACTIVE.has(role)))
    if (skip || (isRoot && role === 'RootWebArea' && !options.subtree)) return childrenOf(node)
    // Kept even when blank: the space between two inline elements; tidy drops it afterwards.
    if (role === 'StaticText') return name ? [name] : []
    // A line break is the space between two texts (a paragraph's lines join into one text).
    if (role === 'LineBreak') return ['\n']
    // A heading is shown as h1 … h6: its level is the one state every heading has.
    let shown = ROLE_NAMES[role] ?? role
    let marks = ''
    for (const property of node.properties ?? []) {
      const value = property.value.value
      if (property.name === 'level' && role === 'heading' && value !== undefined) shown = `h${text(value)}`
      if (!STATES.includes(property.name)) continue
      if (value === false || value === undefined || value === 'false') continue
      marks +=
        value === true || value === 'true' ? ` [${property.name}]` : ` [${property.name}=${text(value)}]`
    }
    const backend = node.backendDOMNodeId
    if (backend !== undefined && (INTERACTIVE.has(role) || name)) {
      marks += ` #${refs.refFor(backend)}`
      shownRefs++
    }
    const rawValue = text(node.value?.value)
    const value = rawValue !== name ? rawValue : ''
    let children = LEAF.has(role) ? [] : tidy(childrenOf(node), name, role)
    // A node named after its own text: the text would only repeat the name.
    if (
      name &&
      children.length &&
      children.every((child) => typeof child === 'string') &&
      squash(children.join('')) === squash(name)
    )
      children = []
    const head: Head = { role: shown, name, marks, value }
    const only = children.length === 1 ? children[0] : undefined
    if (only !== undefined && !name && !value) {
      // An unnamed element holding only one text: one line, `cell: "…"`; a paragraph is its text.
      if (typeof only === 'string')
        return (TEXT_BLOCKS.has(role) || INLINE.has(role)) && !marks
          ? [only]
          : [{ heads: [head], text: only, children: [] }]
      // An element holding only one element shares its line: `listitem > link "Docs" #e4`.
      return [{ ...only, heads: [head, ...only.heads] }]
    }
    if (only !== undefined && typeof only !== 'string' && !value) {
      // Named like the element it holds (a heading around a link): the name is said once.
      if (squash(only.heads[0]?.name ?? '') === squash(name)) head.name = ''
      return [{ ...only, heads: [head, ...only.heads] }]
    }
    return [{ heads: [head], children }]
  }

  const lines: string[] = []
  const print = (items: Item[], depth: number): void => {
    const pad = INDENT.repeat(depth)
    for (const item of items) {
      if (typeof item === 'string') {
        if (item.trim()) lines.push(`${pad}${quote(item, 300)}`)
        continue
      }
      let line = pad + item.heads.map(headText).join(' > ')
      if (item.text !== undefined) line += `: ${quote(item.text, 300)}`
      if (item.children.length && depth + 1 >= maxDepth) {
        lines.push(`${line} (${item.children.length} children: snapshot with ref or a larger depth)`)
        continue
      }
      lines.push(line)
      print(item.children, depth + 1)
    }
  }
  if (root) print(tidy(build(root, true), '', ''), 0)
  return { lines, refs: shownRefs }
}

/**
 * The tab's page (or the subtree of `options.ref`) rendered by {@link renderTree}, capped at
 * `options.maxChars` with a notice saying how to narrow it.
 */
export async function takeSnapshot(tab: Tab, options: SnapshotOptions): Promise<Snapshot> {
  await assertPageSize(tab, SNAPSHOT_MAX_ELEMENTS, 'snapshot')
  const { nodes } = (await tab.cdp.send('Accessibility.getFullAXTree')) as unknown as { nodes: AXNode[] }
  let root = nodes.find((node) => !node.parentId) ?? nodes[0]
  if (options.ref) {
    const id = parseRef(tab, options.ref)
    root = nodes.find((node) => node.backendDOMNodeId === id)
    if (!root)
      throw new StaleRefError(
        `Ref ${options.ref} is no longer in the page. Take a new snapshot and use its refs.`,
      )
  }
  const { lines, refs } = renderTree(nodes, root, tab.refs, { depth: options.depth, subtree: !!options.ref })
  let body = lines.join('\n')
  let truncated = false
  if (body.length > options.maxChars) {
    truncated = true
    const cut = body.lastIndexOf('\n', options.maxChars)
    const kept = body.slice(0, cut > 0 ? cut : options.maxChars)
    const shown = kept.split('\n').length
    body =
      `${kept}\n[Snapshot truncated at ${options.maxChars} characters: ${lines.length - shown} more lines. ` +
      'Narrow it: snapshot with ref=<a ref above> for one part of the page, or a smaller depth.]'
  }
  return { lines, text: body, truncated, refs }
}

/**
 * What changed between two snapshots of the same document: new or changed lines, each with the
 * ancestor lines that place it, and how many lines went away.
 */
export function changedPart(before: string[], after: string[]): { text: string; changed: number } {
  const old = new Map<string, number>()
  for (const line of before) old.set(line, (old.get(line) ?? 0) + 1)
  const fresh: boolean[] = after.map((line) => {
    const count = old.get(line) ?? 0
    if (count > 0) {
      old.set(line, count - 1)
      return false
    }
    return true
  })
  const removed = [...old.values()].reduce((sum, count) => sum + count, 0)
  const changed = fresh.filter(Boolean).length
  if (!changed && !removed) return { text: 'No change in the page.', changed: 0 }
  const show = new Set<number>()
  const indent = (line: string) => line.length - line.trimStart().length
  after.forEach((line, index) => {
    if (!fresh[index]) return
    show.add(index)
    let level = indent(line)
    for (let up = index - 1; up >= 0 && level > 0; up--) {
      const parent = after[up] ?? ''
      if (indent(parent) < level) {
        show.add(up)
        level = indent(parent)
      }
    }
  })
  const body = [...show]
    .sort((a, b) => a - b)
    .map((index) => after[index])
    .join('\n')
  return {
    text: `Changed part of the page (${changed} new or changed lines, ${removed} removed):\n${body}`,
    changed,
  }
}
