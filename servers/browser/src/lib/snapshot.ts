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

/** Where a node sits under the root a render started from: its child index at each level. */
export type Path = number[]

/** One element of a line: `role "name" [state] #e1: "value"`. */
interface Head {
  role: string
  name: string
  /** States, each with its leading space. */
  states: string
  /** The element's ref, when it has one (or gets one because its contents are left out). */
  ref?: string | undefined
  backend?: number | undefined
  value: string
}

/** A piece of text, and the node it comes from. */
interface Text {
  kind: 'text'
  text: string
  at: Path
}

/**
 * A rendered line: one element, or a chain of elements each holding only the next
 * (`listitem > link "Docs" #e4`), with the text its last element holds, and its children.
 */
interface Line {
  kind?: undefined
  heads: Head[]
  text?: string
  children: Item[]
  /** Its contents were not read (depth): shown as a ref to narrow into. */
  more?: boolean
  at: Path
}
type Item = Text | Line

const isText = (item: Item | undefined): item is Text => item?.kind === 'text'

export interface SnapshotOptions {
  /** Render only the subtree of this ref. */
  ref?: string | undefined
  /** Levels of the tree to render (unlimited when unset). */
  depth?: number | undefined
  /** Character cap of the rendered tree. */
  maxChars: number
  /** Where an earlier, cut snapshot stopped (its `cursor`). */
  cursor?: string | undefined
  /** Add each ref's bounding box (viewport CSS px). */
  boxes?: boolean | undefined
}

export interface Snapshot {
  lines: string[]
  text: string
  truncated: boolean
  /** Refs shown in this snapshot. */
  refs: number
  /** Continues the snapshot where it was cut. */
  cursor?: string | undefined
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
      if (isText(item) && isText(last)) items[items.length - 1] = { ...last, text: last.text + item.text }
      else items.push(item)
    }
  }
  const own = squash(name)
  const namesOf = (item: Item | undefined): string[] =>
    item === undefined || isText(item) ? [] : item.heads.map((head) => squash(head.name))
  return items.filter((item, index) => {
    if (isText(item)) {
      const words = squash(item.text)
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
      !head.states &&
      !head.ref &&
      !item.children.length &&
      item.text !== undefined &&
      squash(item.text) === own
    )
  })
}

function headText(head: Head): string {
  let out = head.role
  if (head.name) out += ` ${quote(head.name, 150)}`
  out += head.states
  if (head.ref) out += ` #${head.ref}`
  if (head.value) out += `: ${quote(head.value, 200)}`
  return out
}

/** Whether a node is folded away (its children take its place) when it is not the root. */
export function folds(node: AXNode): boolean {
  const role = text(node.role?.value)
  const name = text(node.name?.value)
  return !!node.ignored || ((TRANSPARENT.has(role) || role === '') && !name && !INTERACTIVE.has(role))
}

/** Whether rendering a node reads its children (text, bullets and fields show none). */
export function readsChildren(node: AXNode): boolean {
  const role = text(node.role?.value)
  return !!node.childIds?.length && role !== 'StaticText' && !HIDDEN.has(role) && !LEAF.has(role)
}

/** How much of the tree {@link renderTree} renders. */
export interface RenderOptions {
  /** Levels of lines to render (unlimited when unset). */
  depth?: number | undefined
  /** The root is an element the caller named (by ref), shown even when it is the whole page. */
  subtree?: boolean | undefined
  /** Nodes whose children were left unread on purpose (depth): shown with a ref to narrow into. */
  closed?: ReadonlySet<string> | undefined
}

/** A node to render from, where it sits under the snapshot's root, and at which indent. */
export interface Start {
  node: AXNode
  at: Path
  indent: number
  /** Render the node itself even when it folds (a snapshot's root). */
  root?: boolean
}

export interface Rendered {
  lines: string[]
  /** The node each line starts with. */
  paths: Path[]
  refs: number
  /** The first node whose children were not read yet: the render stops before it. */
  cut?: Path | undefined
}

/**
 * An accessibility tree (CDP's `Accessibility.getFullAXTree` nodes) as compact indented text,
 * one element a line, one space a level. Elements that carry nothing of their own (unnamed
 * `generic` wrappers, ignored nodes) are folded: their children take their place. An element
 * holding only one element shares its line with it (`listitem > link "Docs" #e4`). Every
 * interactive or named element gets a ref (`#e12`) from `refs`, kept for as long as the element
 * lives. Text is quoted, so page text never reads as an element or a ref.
 *
 * The nodes may be part of a tree: a node whose children are missing ends the render there
 * (`cut`), unless `closed` says they were left out on purpose.
 */
export function renderTree(
  nodes: AXNode[] | ReadonlyMap<string, AXNode>,
  root: AXNode | undefined,
  refs: Refs,
  options: RenderOptions = {},
): Rendered {
  if (!root) return { lines: [], paths: [], refs: 0 }
  return renderFrom(nodes, [{ node: root, at: [], indent: 0, root: true }], refs, options)
}

/** {@link renderTree} from several starts in order (a cut snapshot's continuation). */
export function renderFrom(
  nodes: AXNode[] | ReadonlyMap<string, AXNode>,
  starts: Start[],
  refs: Refs,
  options: RenderOptions = {},
): Rendered {
  const byId = Array.isArray(nodes) ? new Map(nodes.map((node) => [node.nodeId, node])) : nodes
  const maxDepth = options.depth ?? Number.POSITIVE_INFINITY
  let shownRefs = 0
  let cut: Path | undefined

  const childrenOf = (node: AXNode, at: Path): Item[] | 'closed' => {
    const items: Item[] = []
    const ids = node.childIds ?? []
    if (ids.length && options.closed?.has(node.nodeId)) return 'closed'
    if (ids.length && !ids.every((id) => byId.has(id))) {
      cut ??= at
      return items
    }
    ids.forEach((id, index) => {
      const child = byId.get(id)
      if (child && !cut) items.push(...build(child, [...at, index], false))
    })
    return items
  }

  const build = (node: AXNode, at: Path, isRoot: boolean): Item[] => {
    if (cut) return []
    const role = text(node.role?.value)
    const name = text(node.name?.value)
    if (HIDDEN.has(role) && !isRoot) return []
    if ((!isRoot && folds(node)) || (isRoot && role === 'RootWebArea' && !options.subtree)) {
      const inner = childrenOf(node, at)
      return inner === 'closed' ? [] : inner
    }
    // Kept even when blank: the space between two inline elements; tidy drops it afterwards.
    if (role === 'StaticText') return name ? [{ kind: 'text', text: name, at }] : []
    // A line break is the space between two texts (a paragraph's lines join into one text).
    if (role === 'LineBreak') return [{ kind: 'text', text: '\n', at }]
    // A heading is shown as h1 … h6: its level is the one state every heading has.
    let shown = ROLE_NAMES[role] ?? role
    let states = ''
    for (const property of node.properties ?? []) {
      const value = property.value.value
      if (property.name === 'level' && role === 'heading' && value !== undefined) shown = `h${text(value)}`
      if (!STATES.includes(property.name)) continue
      if (value === false || value === undefined || value === 'false') continue
      states +=
        value === true || value === 'true' ? ` [${property.name}]` : ` [${property.name}=${text(value)}]`
    }
    const backend = node.backendDOMNodeId
    let ref: string | undefined
    if (backend !== undefined && (INTERACTIVE.has(role) || name)) {
      ref = refs.refFor(backend)
      shownRefs++
    }
    const rawValue = text(node.value?.value)
    const value = rawValue !== name ? rawValue : ''
    const head: Head = { role: shown, name, states, ref, backend, value }
    const inner = LEAF.has(role) ? [] : childrenOf(node, at)
    // Its children are not read yet: the node is shown from the cursor, whole.
    if (cut === at) return []
    if (inner === 'closed') return [{ heads: [head], children: [], more: true, at }]
    let children = tidy(inner, name, role)
    // A node named after its own text: the text would only repeat the name.
    if (
      name &&
      children.length &&
      children.every(isText) &&
      squash(children.map((child) => (child as Text).text).join('')) === squash(name)
    )
      children = []
    const only = children.length === 1 ? children[0] : undefined
    if (only !== undefined && !name && !value) {
      // An unnamed element holding only one text: one line, `cell: "…"`; a paragraph is its text.
      if (isText(only))
        return (TEXT_BLOCKS.has(role) || INLINE.has(role)) && !states && !ref
          ? [only]
          : [{ heads: [head], text: only.text, children: [], at }]
      // An element holding only one element shares its line: `listitem > link "Docs" #e4`.
      return [{ ...only, heads: [head, ...only.heads], at }]
    }
    if (only !== undefined && !isText(only) && !value) {
      // Named like the element it holds (a heading around a link): the name is said once.
      if (squash(only.heads[0]?.name ?? '') === squash(name)) head.name = ''
      return [{ ...only, heads: [head, ...only.heads], at }]
    }
    return [{ heads: [head], children, at }]
  }

  /** A line whose contents are left out gets a ref, so the model can narrow into it. */
  const narrowable = (item: Line): string => {
    const last = item.heads.at(-1)
    if (last && !last.ref && last.backend !== undefined) {
      last.ref = refs.refFor(last.backend)
      shownRefs++
    }
    return last?.ref ? `snapshot ref=${last.ref}` : 'snapshot with a larger depth'
  }

  const lines: string[] = []
  const paths: Path[] = []
  const print = (items: Item[], depth: number): void => {
    const pad = INDENT.repeat(depth)
    for (const item of items) {
      if (isText(item)) {
        if (item.text.trim()) {
          lines.push(`${pad}${quote(item.text, 300)}`)
          paths.push(item.at)
        }
        continue
      }
      const hidden = item.more || (item.children.length && depth + 1 >= maxDepth)
      const hint = hidden ? narrowable(item) : ''
      let line = pad + item.heads.map(headText).join(' > ')
      if (item.text !== undefined) line += `: ${quote(item.text, 300)}`
      paths.push(item.at)
      if (hidden) {
        const count = item.more ? 'contents' : `${item.children.length} children`
        lines.push(`${line} (${count}: ${hint})`)
        continue
      }
      lines.push(line)
      print(item.children, depth + 1)
    }
  }
  for (const start of starts) {
    if (cut) break
    print(tidy(build(start.node, start.at, !!start.root), '', ''), start.indent)
  }
  return { lines, paths, refs: shownRefs, cut }
}
