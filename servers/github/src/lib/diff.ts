/**
 * A unified diff (as GitHub sends `application/vnd.github.diff`) split into files and hunks, and
 * paged under a byte budget: whole hunks only, each page a valid diff (a file resumed mid-way
 * repeats its header), and a cursor for the rest.
 */

export interface DiffFile {
  path: string
  /** `diff --git` line through the line before the first hunk (mode, index, ---/+++). */
  header: string
  hunks: string[]
  /** Bytes of header and hunks together. */
  bytes: number
}

const byteLength = (text: string) => Buffer.byteLength(text, 'utf8')

/** The path a file's header names: the new path (`+++ b/…`), else the old one for deletions. */
function pathOf(header: string): string {
  const plus = /^\+\+\+ b\/(.+)$/m.exec(header)?.[1]
  if (plus) return plus
  const minus = /^--- a\/(.+)$/m.exec(header)?.[1]
  if (minus) return minus
  const rename = /^rename to (.+)$/m.exec(header)?.[1]
  if (rename) return rename
  // `diff --git a/x b/x` with no ---/+++ (binary or mode-only): the b side.
  return /^diff --git a\/.+? b\/(.+)$/m.exec(header)?.[1] ?? '(unknown)'
}

/** Splits a unified diff into files, each into its header and hunks; line endings are kept. */
export function parseDiff(text: string): DiffFile[] {
  const files: DiffFile[] = []
  const starts: number[] = []
  const fileStart = /^diff --git /gm
  for (let match = fileStart.exec(text); match; match = fileStart.exec(text)) starts.push(match.index)
  for (const [index, start] of starts.entries()) {
    const chunk = text.slice(start, starts[index + 1] ?? text.length)
    const hunkStarts: number[] = []
    const hunkStart = /^@@ /gm
    for (let match = hunkStart.exec(chunk); match; match = hunkStart.exec(chunk)) hunkStarts.push(match.index)
    const header = chunk.slice(0, hunkStarts[0] ?? chunk.length)
    const hunks = hunkStarts.map((at, position) => chunk.slice(at, hunkStarts[position + 1] ?? chunk.length))
    files.push({ path: pathOf(header), header, hunks, bytes: byteLength(chunk) })
  }
  return files
}

/** Where a page starts: a file index and a hunk index in it. */
export interface DiffPosition {
  file: number
  hunk: number
}

export interface DiffPage {
  text: string
  /** Files shown whole on this page. */
  shown: string[]
  /** A file shown in part (it continues on the next page). */
  partial?: { path: string; fromHunk: number; toHunk: number; hunks: number }
  /** Files too large to inline: left for a resource link. */
  large: DiffFile[]
  /** Where the next page starts; undefined when this page reaches the end. */
  next?: DiffPosition
  /** Files (after `next`) not shown yet. */
  remaining: number
}

/**
 * One page of `files` from `start`, at most `maxBytes` (a single hunk larger than the budget is
 * shown alone on its own page rather than never). Files over `largeBytes` are not inlined.
 */
export function pageDiff(
  files: DiffFile[],
  start: DiffPosition,
  options: { maxBytes: number; largeBytes: number },
): DiffPage {
  const parts: string[] = []
  const shown: string[] = []
  const large: DiffFile[] = []
  let used = 0
  let partial: DiffPage['partial']
  let next: DiffPosition | undefined
  for (let index = start.file; index < files.length && !next; index++) {
    const file = files[index] as DiffFile
    const first = index === start.file ? start.hunk : 0
    if (file.bytes > options.largeBytes) {
      large.push(file)
      continue
    }
    const headerBytes = byteLength(file.header)
    if (used > 0 && used + headerBytes > options.maxBytes) {
      next = { file: index, hunk: first }
      break
    }
    let hunk = first
    let fileText = file.header
    let fileBytes = headerBytes
    for (; hunk < file.hunks.length; hunk++) {
      const text = file.hunks[hunk] as string
      const size = byteLength(text)
      const nothingYet = used === 0 && hunk === first
      if (!nothingYet && used + fileBytes + size > options.maxBytes) break
      fileText += text
      fileBytes += size
    }
    if (hunk === first && file.hunks.length > first && used > 0) {
      next = { file: index, hunk: first }
      break
    }
    parts.push(fileText)
    used += fileBytes
    if (hunk < file.hunks.length) {
      partial = { path: file.path, fromHunk: first, toHunk: hunk, hunks: file.hunks.length }
      next = { file: index, hunk }
    } else if (first > 0) {
      partial = { path: file.path, fromHunk: first, toHunk: hunk, hunks: file.hunks.length }
    } else {
      shown.push(file.path)
    }
  }
  // A file the next page resumes mid-way has been seen; the ones after it have not.
  const remaining = next ? files.length - next.file - (next.hunk > 0 ? 1 : 0) : 0
  return {
    text: parts.join(''),
    shown,
    ...(partial ? { partial } : {}),
    large,
    ...(next ? { next } : {}),
    remaining,
  }
}
