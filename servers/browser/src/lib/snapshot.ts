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
const TRANSPARENT = new Set([
  'generic',
  'none',
  'presentation',
  'InlineTextBox',
  'LineBreak',
  'Section',
  'LabelText',
  'MenuListPopup',
])

/** Roles never shown, with their subtree (bullets; a field's inner text repeats its value). */
const HIDDEN = new Set(['ListMarker'])
const LEAF = new Set(['textbox', 'searchbox', 'spinbutton', 'slider'])

const STATES = ['checked', 'pressed', 'expanded', 'selected', 'disabled', 'required', 'level', 'readonly']

const text = (value: unknown): string => (value === undefined || value === null ? '' : String(value))

function quote(value: string, max: number): string {
  const flat = value.replace(/\s+/g, ' ').trim()
  return JSON.stringify(flat.length > max ? `${flat.slice(0, max)}…` : flat)
}

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
  /** Refs handed out in this snapshot. */
  refs: number
}

/** `e123` → 123, or a stale-ref error naming what to do. */
export function parseRef(tab: Tab, ref: string): number {
  const match = /^e(\d{1,12})$/.exec(ref.trim())
  const id = match ? Number(match[1]) : Number.NaN
  if (!match || !tab.refs.has(id))
    throw new StaleRefError(
      `Ref ${ref} is not on the current page (the page changed, or the ref never existed). Take a new snapshot and use its refs.`,
    )
  return id
}

/**
 * The page's accessibility tree as compact indented text. Each interactive or named element gets
 * `[ref=e<id>]`, where the id is Chromium's backend DOM node id: stable for as long as the element
 * lives, so refs survive repeated snapshots of the same page.
 */
export async function takeSnapshot(tab: Tab, options: SnapshotOptions): Promise<Snapshot> {
  const { nodes } = (await tab.cdp.send('Accessibility.getFullAXTree')) as unknown as { nodes: AXNode[] }
  const byId = new Map(nodes.map((node) => [node.nodeId, node]))
  let root = nodes.find((node) => !node.parentId) ?? nodes[0]
  if (options.ref) {
    const id = parseRef(tab, options.ref)
    root = nodes.find((node) => node.backendDOMNodeId === id)
    if (!root)
      throw new StaleRefError(
        `Ref ${options.ref} is no longer in the page. Take a new snapshot and use its refs.`,
      )
  }
  const lines: string[] = []
  const handed: number[] = []
  const maxDepth = options.depth ?? Number.POSITIVE_INFINITY

  const visit = (node: AXNode, depth: number, isRoot: boolean): void => {
    const role = text(node.role?.value)
    const name = text(node.name?.value)
    const children = (node.childIds ?? [])
      .map((id) => byId.get(id))
      .filter((child): child is AXNode => !!child)
    if (HIDDEN.has(role) && !isRoot) return
    const skip =
      !isRoot && (node.ignored || ((TRANSPARENT.has(role) || role === '') && !name && !INTERACTIVE.has(role)))
    if (skip || (isRoot && role === 'RootWebArea' && !options.ref)) {
      for (const child of children) visit(child, depth, false)
      return
    }
    if (role === 'StaticText') {
      if (name.trim()) lines.push(`${'  '.repeat(depth)}- text: ${quote(name, 300)}`)
      return
    }
    const parts = [`${'  '.repeat(depth)}- ${role}`]
    if (name) parts.push(quote(name, 150))
    for (const property of node.properties ?? []) {
      if (!STATES.includes(property.name)) continue
      if (property.name === 'level' && role !== 'heading') continue
      const value = property.value.value
      if (value === false || value === undefined || value === 'false') continue
      parts.push(
        value === true || value === 'true' ? `[${property.name}]` : `[${property.name}=${text(value)}]`,
      )
    }
    const backend = node.backendDOMNodeId
    if (backend !== undefined && (INTERACTIVE.has(role) || name)) {
      parts.push(`[ref=e${backend}]`)
      handed.push(backend)
    }
    const value = text(node.value?.value)
    let line = parts.join(' ')
    if (value && value !== name) line += `: ${quote(value, 200)}`
    // A node named after its own text: the text child would only repeat the name.
    const textChildren = children.filter((child) => text(child.role?.value) === 'StaticText')
    const repeats =
      name &&
      textChildren.length === children.length &&
      textChildren
        .map((child) => text(child.name?.value))
        .join('')
        .replace(/\s+/g, ' ')
        .trim() === name.replace(/\s+/g, ' ').trim()
    let rendered = repeats || LEAF.has(role) ? [] : children
    // An unnamed element holding only one text (a paragraph, a cell): one line, `- paragraph: "…"`.
    const only = rendered.length === 1 ? rendered[0] : undefined
    if (
      only &&
      !name &&
      !value &&
      text(only.role?.value) === 'StaticText' &&
      !(only.childIds ?? []).some((id) => text(byId.get(id)?.role?.value) !== 'InlineTextBox')
    ) {
      const content = text(only.name?.value)
      if (content.trim()) line += `: ${quote(content, 300)}`
      rendered = []
    }
    if (depth + 1 >= maxDepth && rendered.length) {
      lines.push(`${line} (${rendered.length} children: snapshot with ref or a larger depth)`)
      return
    }
    lines.push(line)
    for (const child of rendered) visit(child, depth + 1, false)
  }
  if (root) visit(root, 0, true)

  for (const id of handed) tab.refs.add(id)
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
  return { lines, text: body, truncated, refs: handed.length }
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
