import type { SafePath } from './path-guard.js'
import { crawl, defaultScanLimit, type WalkOptions, type WalkProblems } from './walk.js'

// directory_tree: one bounded walk rendered as a tree.

/** Options of {@link directoryTree}. */
export interface DirectoryTreeOptions extends WalkOptions {
  /** Most lines in the output. Default 500. */
  maxEntries?: number | undefined
  /** Most bytes in the output. Default 32 KiB. */
  maxBytes?: number | undefined
}

/** The result of {@link directoryTree}. */
export interface DirectoryTreeResult {
  /**
   * One line per entry, indented two spaces per level, sorted by name: `name/` for a directory, `name@` for a
   * symbolic link (not followed). A directory whose contents did not fit reads `name/ (+N entries)`.
   */
  text: string
  /** Entries found (after excludes and .gitignore, within maxDepth). */
  totalEntries: number
  shownEntries: number
  /** Not every entry found is shown. */
  truncated: boolean
  /** When truncated by depth: the number of levels shown in full. */
  shownDepth: number | undefined
  /** maxDepth stopped the walk: directories at the last level were not opened. */
  depthLimited: boolean
  /** The walk hit its memory bound ({@link defaultScanLimit}); narrow the walk. */
  scanLimited: boolean
  problems: WalkProblems
}

/**
 * A compact, bounded tree of `root`. When everything does not fit, it shows as many whole levels as fit and
 * annotates the directories whose contents were left out, so the model sees the overall shape first.
 */
export async function directoryTree(
  root: SafePath,
  options: DirectoryTreeOptions = {},
): Promise<DirectoryTreeResult> {
  const maxEntries = options.maxEntries ?? 500
  const maxBytes = options.maxBytes ?? 32 * 1024
  const crawled = await crawl(root, { ...options, includeDirectories: true, scanLimit: defaultScanLimit })
  // Default sort = UTF-16 code unit order, which keeps every directory's entries right after it (preorder).
  const paths = crawled.paths.sort()
  const count = paths.length
  // Per entry: depth, and the bytes of its line; the lines themselves are only built for what is shown.
  const depths = new Uint16Array(count)
  const lineBytes = new Uint32Array(count)
  let deepest = -1
  for (let index = 0; index < count; index++) {
    const entryPath = paths[index]!
    const end = entryPath.endsWith('/') ? entryPath.length - 1 : entryPath.length
    let depth = 0
    let slash = entryPath.indexOf('/')
    let lastSlash = -1
    while (slash !== -1 && slash < end) {
      depth++
      lastSlash = slash
      slash = entryPath.indexOf('/', slash + 1)
    }
    depths[index] = depth
    // indentation + name + marker + newline; names are mostly ASCII, so length is a fair first estimate.
    lineBytes[index] = depth * 2 + (end - lastSlash - 1) + 2
    if (depth > deepest) deepest = depth
  }
  const render = (index: number) => {
    const entryPath = paths[index]!
    const isDirectory = entryPath.endsWith('/')
    const bare = isDirectory ? entryPath.slice(0, -1) : entryPath
    const name = bare.slice(bare.lastIndexOf('/') + 1)
    const marker = isDirectory ? '/' : crawled.symlinks.has(bare) ? '@' : ''
    return `${'  '.repeat(depths[index]!)}${name}${marker}`
  }
  let depthLimited = false
  if (options.maxDepth !== undefined) {
    for (let index = 0; index < count && !depthLimited; index++) {
      depthLimited = depths[index] === options.maxDepth - 1 && paths[index]!.endsWith('/')
    }
  }
  const base = {
    totalEntries: count,
    depthLimited,
    scanLimited: crawled.scanLimited,
    problems: crawled.problems.toJSON(),
  }

  let estimatedBytes = 0
  for (let index = 0; index < count; index++) estimatedBytes += lineBytes[index]!
  if (count <= maxEntries && estimatedBytes <= maxBytes) {
    const lines = Array.from({ length: count }, (_, index) => render(index))
    const text = lines.join('\n')
    if (Buffer.byteLength(text) <= maxBytes) {
      return { ...base, text, shownEntries: count, truncated: false, shownDepth: undefined }
    }
  }

  // Cumulative cost of showing every level up to d; each directory at the cut gets an annotation (~16 bytes).
  const countByDepth = new Array<number>(deepest + 1).fill(0)
  const bytesByDepth = new Array<number>(deepest + 1).fill(0)
  const directoriesByDepth = new Array<number>(deepest + 1).fill(0)
  for (let index = 0; index < count; index++) {
    const depth = depths[index]!
    countByDepth[depth]!++
    bytesByDepth[depth]! += lineBytes[index]!
    if (paths[index]!.endsWith('/')) directoriesByDepth[depth]!++
  }
  let shownDepth = -1
  let levelCount = 0
  let levelBytes = 0
  for (let depth = 0; depth <= deepest; depth++) {
    levelCount += countByDepth[depth]!
    levelBytes += bytesByDepth[depth]!
    if (levelCount > maxEntries || levelBytes + directoriesByDepth[depth]! * 16 > maxBytes) break
    shownDepth = depth
  }

  const lines: string[] = []
  let usedBytes = 0
  let shown = 0
  if (shownDepth >= 0) {
    // Preorder: everything deeper than the cut belongs to the last directory seen at the cut depth.
    const hidden = new Map<number, number>()
    let cut = -1
    for (let index = 0; index < count; index++) {
      if (depths[index]! > shownDepth) {
        if (cut !== -1) hidden.set(cut, (hidden.get(cut) ?? 0) + 1)
      } else {
        cut = depths[index] === shownDepth && paths[index]!.endsWith('/') ? index : -1
      }
    }
    for (let index = 0; index < count; index++) {
      if (depths[index]! > shownDepth) continue
      const omitted = hidden.get(index)
      const line = omitted
        ? `${render(index)} (+${omitted} ${omitted === 1 ? 'entry' : 'entries'})`
        : render(index)
      const bytes = Buffer.byteLength(line) + 1
      if (usedBytes + bytes > maxBytes) break
      lines.push(line)
      usedBytes += bytes
      shown++
    }
    if (shown < countByDepth.slice(0, shownDepth + 1).reduce((sum, value) => sum + value, 0)) {
      lines.push(`… ${count - shown} more entries`)
    }
  } else {
    // Even the first level is too big: list it in order until the budget runs out.
    for (let index = 0; index < count; index++) {
      if (depths[index]! > 0) continue
      const line = render(index)
      const bytes = Buffer.byteLength(line) + 1
      if (shown >= maxEntries || usedBytes + bytes > maxBytes) break
      lines.push(line)
      usedBytes += bytes
      shown++
    }
    lines.push(`… ${count - shown} more entries`)
  }
  return {
    ...base,
    text: lines.join('\n'),
    shownEntries: shown,
    truncated: true,
    shownDepth: shownDepth >= 0 ? shownDepth + 1 : 0,
  }
}
