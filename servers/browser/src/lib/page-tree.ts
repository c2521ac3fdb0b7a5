import { withBoxes } from './boxes.js'
import { assertPageSize, type PageSize, SNAPSHOT_MAX_ELEMENTS } from './limits.js'
import {
  type AXNode,
  folds,
  type Path,
  parseRef,
  readsChildren,
  renderFrom,
  type Snapshot,
  type SnapshotOptions,
  type Start,
} from './snapshot.js'
import { StaleRefError, type Tab } from './tab.js'

/**
 * Reads a tab's accessibility tree a node's children at a time (CDP's `getChildAXNodes`), so a
 * render reads the part it shows and not the rest of the page. One reader serves one call: the
 * tree it holds is as the page was when read.
 */
export class TreeReader {
  readonly nodes = new Map<string, AXNode>()
  private readonly asked = new Map<string, Promise<AXNode[]>>()

  private constructor(
    private readonly tab: Tab,
    private readonly batching: Batching,
  ) {}

  /**
   * A reader for the tab's current document (the Accessibility domain enabled once per document).
   * `batching`: which nodes are read with their whole subtree in one call ({@link batches}).
   */
  static async open(tab: Tab, batching: Batching = 'off'): Promise<TreeReader> {
    if (tab.treeGeneration !== tab.generation) {
      const generation = tab.generation
      // Not waited for: the session's calls are answered in order, so the reads sent next are
      // answered after it, and one round trip is saved. Failing, it is sent again next time.
      void tab.cdp.send('Accessibility.enable').then(
        () => {
          if (tab.generation === generation) tab.treeGeneration = generation
        },
        () => undefined,
      )
    }
    return new TreeReader(tab, batching)
  }

  private keep(nodes: AXNode[]): AXNode[] {
    for (const node of nodes) this.nodes.set(node.nodeId, node)
    return nodes
  }

  /**
   * The whole tree in one call (`getFullAXTree`), for a small document: one answer costs less
   * than a round trip a node. Returns its root.
   */
  async readAll(): Promise<AXNode | undefined> {
    const { nodes } = (await this.tab.cdp.send('Accessibility.getFullAXTree')) as unknown as {
      nodes: AXNode[]
    }
    this.keep(nodes)
    for (const node of nodes) {
      const kids = (node.childIds ?? []).flatMap((id) => this.nodes.get(id) ?? [])
      node.childIds = kids.map((kid) => kid.nodeId)
      this.asked.set(node.nodeId, Promise.resolve(kids))
    }
    return nodes.find((node) => !node.parentId) ?? nodes[0]
  }

  /** The document's root (RootWebArea). */
  async root(): Promise<AXNode> {
    const { node } = (await this.tab.cdp.send('Accessibility.getRootAXNode')) as unknown as { node: AXNode }
    this.keep([node])
    return node
  }

  /** The accessibility node of a DOM node, or undefined when it has none. */
  async ofElement(backendNodeId: number): Promise<AXNode | undefined> {
    const { nodes } = (await this.tab.cdp.send('Accessibility.getPartialAXTree', {
      backendNodeId,
      fetchRelatives: false,
    })) as unknown as { nodes: AXNode[] }
    const node = nodes.find((candidate) => candidate.backendDOMNodeId === backendNodeId) ?? nodes[0]
    if (node) this.keep([node])
    return node
  }

  /** The node of a ref, or a stale-ref error. */
  async ofRef(ref: string): Promise<AXNode> {
    const node = await this.ofElement(parseRef(this.tab, ref)).catch(() => undefined)
    if (!node)
      throw new StaleRefError(`Ref ${ref} is no longer in the page. Take a new snapshot and use its refs.`)
    return node
  }

  /**
   * A node's children (asked once; later calls share the answer). A node whose subtree is small
   * ({@link batching}: by its look, or by counting its DOM subtree) is read with its whole subtree
   * in one call: its descendants then answer without a round trip each.
   */
  children(node: AXNode): Promise<AXNode[]> {
    let answer = this.asked.get(node.nodeId)
    if (answer) return answer
    const read = batching(node, this.batching)
    answer =
      read === 'subtree'
        ? this.subtree(node)
        : read === 'ask'
          ? this.small(node).then((small) => (small ? this.subtree(node) : this.level(node)))
          : this.level(node)
    this.asked.set(node.nodeId, answer)
    return answer
  }

  /** Whether a node's children were read (or asked for) already: asking again costs no call. */
  has(node: AXNode): boolean {
    return this.asked.has(node.nodeId)
  }

  /** How {@link children} reads a node's children: its subtree, its subtree if small, or a level. */
  kind(node: AXNode): 'subtree' | 'ask' | 'level' {
    return batching(node, this.batching)
  }

  /** A node's children, one level (`getChildAXNodes`). */
  private async level(node: AXNode): Promise<AXNode[]> {
    const { nodes } = (await this.tab.cdp.send('Accessibility.getChildAXNodes', {
      id: node.nodeId,
    })) as unknown as { nodes: AXNode[] }
    this.keep(nodes)
    // A child the answer left out is not waited for: it is not in the tree any more.
    node.childIds = (node.childIds ?? []).filter((id) => this.nodes.has(id))
    const byId = new Map(nodes.map((child) => [child.nodeId, child]))
    return node.childIds.flatMap((id) => byId.get(id) ?? [])
  }

  /**
   * Whether a node's DOM subtree is small enough to read whole: its elements and texts counted
   * in the page (two nodes a text, as {@link treeNodes} estimates), stopping at the bound.
   */
  private async small(node: AXNode): Promise<boolean> {
    try {
      const { object } = (await this.tab.cdp.send('DOM.resolveNode', {
        backendNodeId: node.backendDOMNodeId,
      })) as unknown as { object: { objectId?: string } }
      if (!object.objectId) return false
      const { result } = (await this.tab.cdp.send('Runtime.callFunctionOn', {
        objectId: object.objectId,
        functionDeclaration: COUNT_SUBTREE,
        arguments: [{ value: SUBTREE_NODES }],
        returnByValue: true,
      })) as unknown as { result: { value?: unknown } }
      void this.tab.cdp.send('Runtime.releaseObject', { objectId: object.objectId }).catch(() => undefined)
      return typeof result.value === 'number' && result.value <= SUBTREE_NODES
    } catch {
      return false
    }
  }

  /**
   * A node's whole subtree in one call (`queryAXTree` with no filter answers every node under a
   * DOM node, in the same ids), each node's children known from it; returns the node's children.
   */
  private async subtree(node: AXNode): Promise<AXNode[]> {
    const { nodes } = (await this.tab.cdp.send('Accessibility.queryAXTree', {
      backendNodeId: node.backendDOMNodeId,
    })) as unknown as { nodes: AXNode[] }
    // Not the subtree asked for (the node left the document meanwhile): its children, as usual.
    if (!nodes.some((candidate) => candidate.nodeId === node.nodeId)) return this.level(node)
    for (const each of nodes) if (each.nodeId !== node.nodeId) this.nodes.set(each.nodeId, each)
    for (const each of [node, ...nodes]) {
      if (each !== node && each.nodeId === node.nodeId) continue
      // A child outside the answer (another frame's document) is not part of this read.
      const kids = (each.childIds ?? []).flatMap((id) => this.nodes.get(id) ?? [])
      each.childIds = kids.map((kid) => kid.nodeId)
      if (each !== node && !this.asked.has(each.nodeId)) this.asked.set(each.nodeId, Promise.resolve(kids))
    }
    return (node.childIds ?? []).flatMap((id) => this.nodes.get(id) ?? [])
  }
}

/**
 * Which nodes a read takes with their whole subtree without counting it first: `any` element a
 * model sees with few children, on a page small enough that a wrong guess costs no more than
 * reading the page; or only `leaves`, elements that hold a line or two of a page (a list item, a
 * paragraph, a heading, a link, a table cell). Any other node (a wrapper, a list, a section,
 * which may hold the page under one child) is read whole only when its DOM subtree, counted in
 * the page, is small. `off`: a level at a time (reads of a few small subtrees: an action's changes).
 */
export type Batching = 'any' | 'leaves' | 'off'

/** Children of a node read whole in one call without counting, at most. */
const BATCH_CHILDREN = { any: 64, leaves: 16, off: 0 }
/** Estimated nodes of a subtree read whole in one call once counted (about a snapshot page's). */
const SUBTREE_NODES = 2500
/** Counts an element's subtree as {@link treeNodes} does, stopping past `limit`. */
const COUNT_SUBTREE = `function (limit) {
  let count = 0
  const walker = document.createTreeWalker(this, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT)
  while (walker.nextNode() && count <= limit) {
    const node = walker.currentNode
    count += node.nodeType === 3 ? (node.data.trim() ? 2 : 0) : 1
  }
  return count
}`
/** Roles whose subtree is a line or two on pages as they are built. */
const LEAVES = new Set([
  'listitem',
  'paragraph',
  'heading',
  'link',
  'button',
  'cell',
  'gridcell',
  'columnheader',
  'rowheader',
  'row',
  'LabelText',
  'term',
  'definition',
  'code',
  'figcaption',
  'caption',
  'legend',
  'option',
  'menuitem',
  'tab',
  'checkbox',
  'radio',
  'strong',
  'emphasis',
  'mark',
  'time',
  'blockquote',
])
/** Roles that may hold the page under few children: counted before they are read whole. */
const WRAPPERS = new Set([
  'generic',
  'none',
  'presentation',
  'Section',
  'main',
  'article',
  'region',
  'group',
  'document',
  'application',
  'navigation',
  'complementary',
  'banner',
  'contentinfo',
  'form',
  'dialog',
  'tabpanel',
  'feed',
  'list',
  'table',
  'grid',
  'treegrid',
  'tree',
  'rowgroup',
  'menu',
  'listbox',
])
/** Roles never read whole: the document and frames (their size is the page's). */
const NEVER = new Set(['RootWebArea', 'WebArea', 'Iframe', 'IframePresentational'])

/** How a node's children are read: with its subtree, with its subtree if counted small, or a level. */
function batching(node: AXNode, mode: Batching): 'subtree' | 'ask' | 'level' {
  const role = String(node.role?.value ?? '')
  const count = node.childIds?.length ?? 0
  if (mode === 'off' || node.backendDOMNodeId === undefined || NEVER.has(role) || count < 1) return 'level'
  if (
    !node.ignored &&
    count <= BATCH_CHILDREN[mode] &&
    (LEAVES.has(role) || (mode === 'any' && !WRAPPERS.has(role)))
  )
    return 'subtree'
  // Counting costs two round trips: a node of one or two children is read a level (one), and
  // its children decide for themselves.
  return count > 2 ? 'ask' : 'level'
}

/** Requests for children in flight at once: the round trips overlap, Chromium answers in turn. */
const PARALLEL = 24

interface Pending {
  node: AXNode
  /** Where the node's own line would print; a folded node's children take its place. */
  depth: number
  shown: boolean
  /** Its place in document order (child indices from the first start). */
  order: number[]
}

function before(a: number[], b: number[]): boolean {
  for (let index = 0; index < Math.min(a.length, b.length); index++)
    if (a[index] !== b[index]) return (a[index] ?? 0) < (b[index] ?? 0)
  return a.length < b.length
}

/**
 * Reads the children of the nodes under `starts`, earliest in document order first with
 * {@link PARALLEL} requests in flight, until `budget` nodes have been read or `maxDepth` stops a
 * branch. What is read is the start of the tree in document order (the part a capped render
 * shows), not a breadth-first sweep of the whole page. Returns the nodes left closed by depth, and
 * whether everything under the starts was read.
 *
 * `counted`: what the budget counts. `children`: the children of each node read. `read`: every
 * node the reader holds, those a subtree read brought (a paragraph's texts and line boxes)
 * included, and nodes already read cost nothing. Then a container read whole if small (which
 * may bring 2,500 nodes) is sent only while the budget covers what the reads in flight are
 * expected to bring (a level its children; a small element's subtree what one of the same role
 * and child count brought, else three nodes a child; a container what one like it brought, the
 * first of a kind being read alone), so the last reads sent do not bring several times the budget
 * (24 sections of a catalogue, 156 nodes each, sent at once). Other reads keep
 * {@link PARALLEL} in flight while the budget lasts: holding them back as well saved a tenth of
 * the bytes on a documentation page, and no time.
 */
export async function readTree(
  reader: TreeReader,
  starts: Array<{ node: AXNode; indent: number; shown: boolean }>,
  budget: number,
  maxDepth = Number.POSITIVE_INFINITY,
  counted: 'children' | 'read' = 'children',
): Promise<{ closed: Set<string>; complete: boolean }> {
  const closed = new Set<string>()
  const waiting: Pending[] = []
  const consider = (pending: Pending) => {
    if (!readsChildren(pending.node)) return
    if ((pending.shown ? pending.depth + 1 : pending.depth) >= maxDepth) closed.add(pending.node.nodeId)
    else waiting.push(pending)
  }
  starts.forEach((start, index) => {
    consider({ node: start.node, depth: start.indent, shown: start.shown, order: [index] })
  })
  const reads = counted === 'read'
  let left = reads ? budget - reader.nodes.size : budget
  let held = reader.nodes.size
  /** Nodes the requests in flight are expected to bring. */
  let expected = 0
  let brought = 0
  let answered = 0
  /** The most nodes a read brought, by the shape of the node read; shapes being read a first time. */
  const shapes = new Map<string, number>()
  const firstReads = new Set<string>()
  // A read of what the reader holds costs nothing: always sent. Another while the budget lasts; a
  // container read whole if small (which may bring thousands) only while the budget covers what
  // the reads in flight are expected to bring, and one at a time for a shape not read yet.
  const sendable = (pending: Pending): boolean => {
    if (!reads || reader.has(pending.node)) return true
    if (reader.kind(pending.node) !== 'ask') return left > 0
    return left - expected > 0 && !firstReads.has(shapeOf(pending.node))
  }
  const inFlight = new Set<Promise<void>>()
  while (waiting.length || inFlight.size) {
    while (waiting.length && inFlight.size < PARALLEL && (reads || left > 0)) {
      let first = -1
      for (let index = 0; index < waiting.length; index++) {
        const candidate = waiting[index] as Pending
        if (first >= 0 && !before(candidate.order, (waiting[first] as Pending).order)) continue
        if (sendable(candidate)) first = index
      }
      if (first < 0) break
      const [pending] = waiting.splice(first, 1) as [Pending]
      const fresh = reads && !reader.has(pending.node)
      const kind = reader.kind(pending.node)
      const shape = shapeOf(pending.node)
      const known = shapes.get(shape)
      const count = pending.node.childIds?.length ?? 1
      let guess = 0
      if (fresh && kind === 'level') guess = count
      else if (fresh && kind === 'subtree') guess = known ?? 3 * count
      else if (fresh) guess = known ?? Math.max(count, answered ? brought / answered : 0)
      if (fresh && kind === 'ask' && known === undefined) firstReads.add(shape)
      expected += guess
      const request: Promise<void> = reader
        .children(pending.node)
        .then((kids) => {
          if (reads) {
            const added = reader.nodes.size - held
            held = reader.nodes.size
            left -= added
            if (fresh) {
              shapes.set(shape, Math.max(added, shapes.get(shape) ?? 0))
              brought += added
              answered++
            }
          } else left -= kids.length
          const depth = pending.shown ? pending.depth + 1 : pending.depth
          kids.forEach((kid, index) => {
            consider({ node: kid, depth, shown: !folds(kid), order: [...pending.order, index] })
          })
        })
        .finally(() => {
          expected -= guess
          if (fresh) firstReads.delete(shape)
          inFlight.delete(request)
        })
      inFlight.add(request)
    }
    if (!inFlight.size) break
    await Promise.race(inFlight)
  }
  return { closed, complete: waiting.length === 0 }
}

/** A node's role and child count: nodes alike in both tend to hold subtrees alike in size. */
const shapeOf = (node: AXNode): string => `${String(node.role?.value ?? '')}:${node.childIds?.length ?? 0}`

/** The starts that continue a render cut at `path` under `root`: the cut node, then what follows it. */
async function continuation(
  reader: TreeReader,
  root: AXNode,
  path: Path,
  subtree: boolean,
): Promise<Start[]> {
  const chain: AXNode[] = [root]
  const levels: AXNode[][] = []
  for (const index of path) {
    const kids = await reader.children(chain.at(-1) as AXNode)
    const next = kids[index]
    if (!next) return []
    levels.push(kids)
    chain.push(next)
  }
  const starts: Start[] = []
  for (let level = path.length - 1; level >= 0; level--) {
    let indent = subtree ? 1 : 0
    for (let up = 1; up <= level; up++) if (!folds(chain[up] as AXNode)) indent++
    const from = (path[level] ?? 0) + (level === path.length - 1 ? 0 : 1)
    levels[level]?.slice(from).forEach((node, offset) => {
      starts.push({ node, at: [...path.slice(0, level), from + offset], indent })
    })
  }
  return starts
}

/** A cursor names the document, the snapshot's root (a ref, or the page) and the path to resume at. */
function encodeCursor(tab: Tab, ref: string | undefined, path: Path): string {
  return `${tab.generation}~${ref ?? ''}~${path.join('.')}`
}

function decodeCursor(tab: Tab, cursor: string): { ref: string | undefined; path: Path } {
  const match = /^(\d+)~(e\d+)?~(\d+(?:\.\d+)*)$/.exec(cursor.trim())
  if (!match) throw new CursorError(`Not a snapshot cursor: ${cursor.slice(0, 60)}`)
  if (Number(match[1]) !== tab.generation)
    throw new StaleRefError('The cursor belongs to an earlier page. Take a new snapshot.')
  return { ref: match[2], path: (match[3] ?? '').split('.').map(Number) }
}

export class CursorError extends Error {
  override name = 'CursorError'
}

/**
 * Nodes read per character of the cap, to begin with, counting every node read (texts and
 * Chromium's line boxes of them included): about what a 25,000-character render of a catalogue
 * (7 characters a node) or of prose (9) needs, so most first snapshots take one round or two.
 */
const NODES_PER_CHAR = 1 / 8
/**
 * Documents of at most this many accessibility nodes (as {@link treeNodes} estimates them) are
 * read whole, in one call: below it one answer is cheaper than a round trip a node (at this size,
 * about 0.2 s either way); above it the cost of a snapshot stays that of what it shows.
 */
const READ_WHOLE_NODES = 6000
/**
 * Up to this many estimated nodes, any element with few children is read with its subtree in one
 * call (a wrongly guessed wrapper costs at most a read of the page); above it only leaves are.
 */
const BATCH_ANY_NODES = 30_000

/**
 * The accessibility nodes of a document, estimated: an element is one, a text two or three (its
 * text node and the lines Chromium lays it out in, each a node of the tree as the protocol sends it).
 * A page of prose has three times the nodes its element count says.
 */
function treeNodes(size: PageSize): number {
  return size.elements + 2 * size.texts
}

/**
 * The tab's page (or the subtree of `options.ref`), read lazily and rendered by
 * {@link renderFrom}, capped at `options.maxChars`. A cut snapshot says so and gives a cursor that
 * continues it (`options.cursor`): each page of a long snapshot reads about what it shows.
 */
export async function takeSnapshot(tab: Tab, options: SnapshotOptions): Promise<Snapshot> {
  const resume = options.cursor ? decodeCursor(tab, options.cursor) : undefined
  const ref = resume ? resume.ref : options.ref
  // Pages too large or too deep for Chromium to build their tree safely are refused first.
  const nodes = treeNodes(await assertPageSize(tab, SNAPSHOT_MAX_ELEMENTS, 'snapshot', { texts: true }))
  const reader = await TreeReader.open(tab, nodes <= BATCH_ANY_NODES ? 'any' : 'leaves')
  const whole = !ref && !resume && nodes <= READ_WHOLE_NODES
  const root = ref
    ? await reader.ofRef(ref)
    : ((whole ? await reader.readAll() : undefined) ?? (await reader.root()))
  const subtree = !!ref
  const starts: Start[] = resume
    ? await continuation(reader, root, resume.path, subtree)
    : [{ node: root, at: [], indent: 0, root: true }]
  const readStarts = starts.map((start) => ({
    node: start.node,
    indent: start.indent,
    shown: start.root ? subtree : !folds(start.node),
  }))
  let budget = Math.max(100, Math.round(options.maxChars * NODES_PER_CHAR))
  let rendered = renderFrom(reader.nodes, starts, tab.refs, { depth: options.depth, subtree })
  for (let round = 0; round < 8; round++) {
    const { closed, complete } = await readTree(reader, readStarts, budget, options.depth, 'read')
    rendered = renderFrom(reader.nodes, starts, tab.refs, { depth: options.depth, subtree, closed })
    const size = rendered.lines.reduce((sum, line) => sum + line.length + 1, 0)
    if (complete || !rendered.cut || size > options.maxChars) break
    // Short of the cap: read about what the rest needs (a render just short is not read twice over).
    budget = Math.round(budget * Math.min(2, Math.max(1.1, (1.1 * options.maxChars) / Math.max(size, 1))))
  }
  const { lines, paths } = rendered
  let shown = lines.length
  let size = 0
  for (let index = 0; index < lines.length; index++) {
    size += (lines[index] ?? '').length + 1
    // At least one line a page, so a cursor always moves on.
    if (size > options.maxChars && index > 0) {
      shown = index
      break
    }
  }
  const stop = shown < lines.length ? paths[shown] : rendered.cut
  const cursor = stop ? encodeCursor(tab, ref, stop) : undefined
  const kept = lines.slice(0, shown)
  let body = (options.boxes ? await withBoxes(tab, kept) : kept).join('\n')
  if (resume) body = `(continued)\n${body}`
  if (cursor)
    body +=
      `\n[Snapshot cut at ${options.maxChars} characters. More: snapshot cursor="${cursor}". ` +
      'Or narrow it: snapshot ref=<a ref above>, a smaller depth, or find.]'
  return { lines: kept, text: body, truncated: !!cursor, refs: rendered.refs, cursor }
}
