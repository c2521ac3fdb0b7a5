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

  private constructor(private readonly tab: Tab) {}

  /** A reader for the tab's current document (the Accessibility domain enabled once per document). */
  static async open(tab: Tab): Promise<TreeReader> {
    if (tab.treeGeneration !== tab.generation) {
      await tab.cdp.send('Accessibility.enable')
      tab.treeGeneration = tab.generation
    }
    return new TreeReader(tab)
  }

  private keep(nodes: AXNode[]): AXNode[] {
    for (const node of nodes) this.nodes.set(node.nodeId, node)
    return nodes
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

  /** A node's children (asked once; later calls share the answer). */
  children(node: AXNode): Promise<AXNode[]> {
    let answer = this.asked.get(node.nodeId)
    if (!answer) {
      answer = (
        this.tab.cdp.send('Accessibility.getChildAXNodes', { id: node.nodeId }) as unknown as Promise<{
          nodes: AXNode[]
        }>
      ).then(({ nodes }) => {
        this.keep(nodes)
        // A child the answer left out is not waited for: it is not in the tree any more.
        node.childIds = (node.childIds ?? []).filter((id) => this.nodes.has(id))
        const byId = new Map(nodes.map((child) => [child.nodeId, child]))
        return node.childIds.flatMap((id) => byId.get(id) ?? [])
      })
      this.asked.set(node.nodeId, answer)
    }
    return answer
  }
}

/** Siblings whose children are asked for while the one before them is read. */
const READ_AHEAD = 8

/**
 * Reads the children of the nodes under `starts` in document order until `budget` nodes have
 * been read or `maxDepth` stops a branch. Returns the nodes left closed by depth.
 */
export async function readTree(
  reader: TreeReader,
  starts: Array<{ node: AXNode; indent: number; shown: boolean }>,
  budget: number,
  maxDepth = Number.POSITIVE_INFINITY,
): Promise<{ closed: Set<string>; complete: boolean }> {
  const closed = new Set<string>()
  let left = budget
  // `depth` is where the node's own line would print; a folded node's children take its place.
  const visit = async (node: AXNode, depth: number, shown: boolean): Promise<boolean> => {
    if (!readsChildren(node)) return true
    const next = shown ? depth + 1 : depth
    if (next >= maxDepth) {
      closed.add(node.nodeId)
      return true
    }
    if (left <= 0) return false
    const kids = await reader.children(node)
    left -= kids.length
    for (let index = 0; index < kids.length; index++) {
      for (let ahead = index + 1; ahead < Math.min(kids.length, index + 1 + READ_AHEAD); ahead++) {
        const sibling = kids[ahead]
        const wanted = sibling && readsChildren(sibling) && (folds(sibling) ? next : next + 1) < maxDepth
        if (sibling && wanted && left > 0) reader.children(sibling).catch(() => undefined)
      }
      const kid = kids[index]
      if (kid && !(await visit(kid, next, !folds(kid)))) return false
    }
    return true
  }
  for (const start of starts)
    if (!(await visit(start.node, start.indent, start.shown))) return { closed, complete: false }
  return { closed, complete: true }
}

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

/** Raw nodes read per character of the cap, to begin with (doubled while the render falls short). */
const NODES_PER_CHAR = 1 / 12

/**
 * The tab's page (or the subtree of `options.ref`), read lazily and rendered by
 * {@link renderFrom}, capped at `options.maxChars`. A cut snapshot says so and gives a cursor that
 * continues it (`options.cursor`): each page of a long snapshot reads about what it shows.
 */
export async function takeSnapshot(tab: Tab, options: SnapshotOptions): Promise<Snapshot> {
  const reader = await TreeReader.open(tab)
  const resume = options.cursor ? decodeCursor(tab, options.cursor) : undefined
  const ref = resume ? resume.ref : options.ref
  const root = ref ? await reader.ofRef(ref) : await reader.root()
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
    const { closed, complete } = await readTree(reader, readStarts, budget, options.depth)
    rendered = renderFrom(reader.nodes, starts, tab.refs, { depth: options.depth, subtree, closed })
    const size = rendered.lines.reduce((sum, line) => sum + line.length + 1, 0)
    if (complete || !rendered.cut || size > options.maxChars) break
    budget *= 2
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
  let body = lines.slice(0, shown).join('\n')
  if (resume) body = `(continued)\n${body}`
  if (cursor)
    body +=
      `\n[Snapshot cut at ${options.maxChars} characters. More: snapshot cursor="${cursor}". ` +
      'Or narrow it: snapshot ref=<a ref above>, a smaller depth, or find.]'
  return { lines: lines.slice(0, shown), text: body, truncated: !!cursor, refs: rendered.refs, cursor }
}
