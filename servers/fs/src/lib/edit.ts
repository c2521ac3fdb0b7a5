import { isUtf8 } from 'node:buffer'
import { lstat } from 'node:fs/promises'
import { createPatch, diffArrays } from 'diff'
import { FsError, toFsError } from './errors.js'
import type { SafePath } from './path-guard.js'
import { readFileBounded, writeFileAtomic } from './safe-io.js'

/** One replacement. Edits apply in order, each to the result of the previous ones. */
export interface Edit {
  /** Text to find; must not be empty. */
  oldText: string
  /** Replacement text. */
  newText: string
  /** Replace every occurrence instead of failing when there are several. Default false. */
  replaceAll?: boolean | undefined
}

/**
 * How an edit's `oldText` was found: byte for byte; after matching line endings to the file's; line by line
 * ignoring leading/trailing whitespace (indentation); or also collapsing runs of inner whitespace.
 */
export type MatchStrategy = 'exact' | 'line-endings' | 'indentation' | 'whitespace'

/** What one edit did. */
export interface AppliedEdit {
  index: number
  strategy: MatchStrategy
  replacements: number
  /** 1-based line of the first replacement, in the content the edit was applied to. */
  line: number
}

/** The result of {@link applyEdits}. */
export interface ApplyEditsResult {
  content: string
  changed: boolean
  applied: AppliedEdit[]
}

/** Default cap of the files {@link editFile} will load. */
export const defaultMaxEditBytes = 10 * 1024 * 1024

type Eol = '\n' | '\r\n'

interface Match {
  /** Character range replaced. */
  start: number
  end: number
  replacement: string
  line: number
}

/**
 * Applies `edits` to `content` in order. Each edit is located by the first strategy that finds it (exact,
 * then line endings, then indentation-insensitive, then whitespace-insensitive); with a tolerant match the
 * new text is re-indented to the indentation found in the file. New text takes the file's line endings.
 *
 * @throws FsError `invalid_argument` (empty oldText, no edits, or an ambiguous oldText without replaceAll),
 * `not_found` (oldText not found; the message shows the closest near-miss with line numbers).
 */
export function applyEdits(content: string, edits: readonly Edit[]): ApplyEditsResult {
  if (edits.length === 0) throw new FsError('invalid_argument', 'No edits given.')
  const applied: AppliedEdit[] = []
  let current = content
  edits.forEach((edit, index) => {
    if (typeof edit.oldText !== 'string' || edit.oldText.length === 0) {
      throw new FsError('invalid_argument', `edits[${index}]: old_text must not be empty.`, {
        hint: 'To create or replace a whole file, use write_file.',
        details: { editIndex: index },
      })
    }
    if (typeof edit.newText !== 'string') {
      throw new FsError('invalid_argument', `edits[${index}]: new_text must be a string.`, {
        details: { editIndex: index },
      })
    }
    const located = locate(current, edit)
    if (!located) throw notFound(current, edit, index)
    const { strategy, matches } = located
    if (matches.length > 1 && !edit.replaceAll) {
      const lines = matches.map((match) => match.line)
      throw new FsError(
        'invalid_argument',
        `edits[${index}]: old_text matches ${matches.length} places (lines ${lines.slice(0, 10).join(', ')}${lines.length > 10 ? ', …' : ''}).`,
        {
          hint: 'Include more surrounding lines to make it unique, or set replace_all.',
          details: { editIndex: index, lines },
        },
      )
    }
    let next = ''
    let cursor = 0
    for (const match of matches) {
      next += current.slice(cursor, match.start) + match.replacement
      cursor = match.end
    }
    current = next + current.slice(cursor)
    applied.push({ index, strategy, replacements: matches.length, line: matches[0]!.line })
  })
  return { content: current, changed: current !== content, applied }
}

/** The dominant line ending of `text` (LF when there are none). */
export function detectLineEnding(text: string): Eol {
  let crlf = 0
  let lf = 0
  let index = text.indexOf('\n')
  while (index !== -1) {
    if (index > 0 && text.charCodeAt(index - 1) === 13) crlf++
    else lf++
    index = text.indexOf('\n', index + 1)
  }
  return crlf > lf ? '\r\n' : '\n'
}

function withLineEnding(text: string, eol: Eol): string {
  return text.replace(/\r?\n/g, eol)
}

function locate(content: string, edit: Edit): { strategy: MatchStrategy; matches: Match[] } | undefined {
  const eol = detectLineEnding(content)
  const newText = withLineEnding(edit.newText, eol)
  const exact = findExact(content, edit.oldText, newText)
  if (exact.length) return { strategy: 'exact', matches: exact }
  const converted = withLineEnding(edit.oldText, eol)
  if (converted !== edit.oldText) {
    const byLineEnding = findExact(content, converted, newText)
    if (byLineEnding.length) return { strategy: 'line-endings', matches: byLineEnding }
  }
  const lines = splitLines(content)
  const indentation = findTolerant(lines, edit, eol, (line) => line.trim())
  if (indentation.length) return { strategy: 'indentation', matches: indentation }
  const whitespace = findTolerant(lines, edit, eol, (line) => line.trim().replace(/\s+/g, ' '))
  if (whitespace.length) return { strategy: 'whitespace', matches: whitespace }
  return undefined
}

function findExact(content: string, needle: string, replacement: string): Match[] {
  const matches: Match[] = []
  let index = content.indexOf(needle)
  let line = 1
  let counted = 0
  while (index !== -1) {
    line += countNewlines(content, counted, index)
    counted = index
    matches.push({ start: index, end: index + needle.length, replacement, line })
    index = content.indexOf(needle, index + needle.length)
  }
  return matches
}

function countNewlines(text: string, from: number, to: number): number {
  let count = 0
  let index = text.indexOf('\n', from)
  while (index !== -1 && index < to) {
    count++
    index = text.indexOf('\n', index + 1)
  }
  return count
}

interface Line {
  text: string
  /** Offset of the line's first character. */
  start: number
  /** Offset just past its terminator. */
  end: number
  /** Its terminator: '\n', '\r\n' or '' (last line). */
  eol: string
}

function splitLines(content: string): Line[] {
  const lines: Line[] = []
  let start = 0
  while (start < content.length) {
    const newline = content.indexOf('\n', start)
    if (newline === -1) {
      lines.push({ text: content.slice(start), start, end: content.length, eol: '' })
      break
    }
    const crlf = newline > start && content.charCodeAt(newline - 1) === 13
    const textEnd = crlf ? newline - 1 : newline
    lines.push({ text: content.slice(start, textEnd), start, end: newline + 1, eol: crlf ? '\r\n' : '\n' })
    start = newline + 1
  }
  return lines
}

/** Lines of a model-supplied text: line endings normalised, one trailing newline ignored. */
function textLines(text: string): string[] {
  const lines = text.replace(/\r\n/g, '\n').split('\n')
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop()
  return lines
}

function leadingWhitespace(line: string): string {
  return /^[ \t]*/.exec(line)![0]
}

function findTolerant(lines: Line[], edit: Edit, eol: Eol, key: (line: string) => string): Match[] {
  const oldLines = textLines(edit.oldText)
  const oldKeys = oldLines.map(key)
  // A block of blank lines would match any blank region: not a meaningful target for tolerant matching.
  if (oldKeys.every((line) => line === '')) return []
  const fileKeys = lines.map((line) => key(line.text))
  const count = oldKeys.length
  const matches: Match[] = []
  for (let start = 0; start + count <= lines.length; start++) {
    let equal = true
    for (let offset = 0; offset < count; offset++) {
      if (fileKeys[start + offset] !== oldKeys[offset]) {
        equal = false
        break
      }
    }
    if (!equal) continue
    const window = lines.slice(start, start + count)
    matches.push({
      start: window[0]!.start,
      end: window[count - 1]!.end,
      replacement: reindentReplacement(edit.newText, oldLines, window, eol),
      line: start + 1,
    })
    start += count - 1
  }
  return matches
}

/** Re-indents the new text by the difference between oldText's indentation and the file's. */
function reindentReplacement(newText: string, oldLines: string[], window: Line[], eol: Eol): string {
  const newLines = newText.length === 0 ? [] : textLines(newText)
  if (newLines.length === 0) return ''
  const anchor = oldLines.findIndex((line) => line.trim() !== '')
  const oldIndent = leadingWhitespace(oldLines[anchor] ?? '')
  const fileIndent = leadingWhitespace(window[anchor]?.text ?? '')
  let adjust: (line: string) => string = (line) => line
  if (oldIndent !== fileIndent) {
    if (fileIndent.startsWith(oldIndent)) {
      const extra = fileIndent.slice(oldIndent.length)
      adjust = (line) => extra + line
    } else if (oldIndent.startsWith(fileIndent)) {
      const surplus = oldIndent.length - fileIndent.length
      adjust = (line) => line.slice(Math.min(surplus, leadingWhitespace(line).length))
    } else {
      adjust = (line) => (line.startsWith(oldIndent) ? fileIndent + line.slice(oldIndent.length) : line)
    }
  }
  const inner = window[0]!.eol || eol
  const last = window[window.length - 1]!.eol
  return newLines.map((line) => (line.trim() === '' ? line : adjust(line))).join(inner) + last
}

/** Dice coefficient over character bigrams: cheap, and good at "almost the same line". */
function similarity(left: string, right: string, cache: Map<string, Map<string, number>>): number {
  if (left === right) return 1
  if (left.length < 2 || right.length < 2) return 0
  const leftBigrams = bigrams(left, cache)
  const rightBigrams = bigrams(right, cache)
  let shared = 0
  for (const [bigram, count] of leftBigrams) {
    const other = rightBigrams.get(bigram)
    if (other) shared += Math.min(count, other)
  }
  return (2 * shared) / (left.length - 1 + right.length - 1)
}

function bigrams(text: string, cache: Map<string, Map<string, number>>): Map<string, number> {
  let result = cache.get(text)
  if (result) return result
  result = new Map()
  for (let index = 0; index < text.length - 1; index++) {
    const bigram = text.slice(index, index + 2)
    result.set(bigram, (result.get(bigram) ?? 0) + 1)
  }
  cache.set(text, result)
  return result
}

/** Work limit of the near-miss search (line comparisons); beyond it only windows around likely anchors are scored. */
const nearMissBudget = 2_000_000

interface NearMiss {
  /** 1-based first line of the window. */
  line: number
  similarity: number
  lines: string[]
}

/** The window of the file's lines most similar to `oldText`. */
export function findNearMiss(content: string, oldText: string): NearMiss | undefined {
  const fileLines = splitLines(content).map((line) => line.text)
  const oldLines = textLines(oldText)
  if (fileLines.length === 0) return undefined
  const cache = new Map<string, Map<string, number>>()
  const fileKeys = fileLines.map((line) => line.trim())
  const oldKeys = oldLines.map((line) => line.trim())
  const size = Math.min(oldKeys.length, fileKeys.length)
  const lastStart = fileKeys.length - size

  let starts: Iterable<number>
  if ((lastStart + 1) * size <= nearMissBudget) {
    starts = Array.from({ length: lastStart + 1 }, (_, index) => index)
  } else {
    // Anchor on the longest old line: only windows that align a similar file line with it are scored.
    let anchor = 0
    oldKeys.forEach((line, index) => {
      if (line.length > oldKeys[anchor]!.length) anchor = index
    })
    const scored = fileKeys
      .map((line, index) => ({ index, score: similarity(line, oldKeys[anchor]!, cache) }))
      .filter((entry) => entry.score >= 0.5)
      .sort((left, right) => right.score - left.score)
      .slice(0, 200)
    starts = new Set(scored.map((entry) => Math.max(0, Math.min(lastStart, entry.index - anchor))))
  }

  let best: NearMiss | undefined
  for (const start of starts) {
    let total = 0
    for (let offset = 0; offset < size; offset++) {
      total += similarity(fileKeys[start + offset]!, oldKeys[offset]!, cache)
    }
    const score = total / oldKeys.length
    if (!best || score > best.similarity) {
      best = { line: start + 1, similarity: score, lines: fileLines.slice(start, start + size) }
    }
  }
  return best
}

function notFound(content: string, edit: Edit, index: number): FsError {
  const nearMiss = findNearMiss(content, edit.oldText)
  if (!nearMiss || nearMiss.similarity < 0.3) {
    return new FsError(
      'not_found',
      `edits[${index}]: old_text was not found, and nothing similar was found.`,
      {
        hint: 'Read the file again: it may have changed.',
        details: { editIndex: index },
      },
    )
  }
  const oldLines = textLines(edit.oldText)
  const shown = nearMiss.lines.slice(0, 12)
  const width = String(nearMiss.line + shown.length - 1).length
  const excerpt = shown
    .map((line, offset) => `${String(nearMiss.line + offset).padStart(width)}│${clip(line)}`)
    .join('\n')
  const last = nearMiss.line + nearMiss.lines.length - 1
  const difference = shortDiff(oldLines, nearMiss.lines, nearMiss.line)
  const range = last > nearMiss.line ? `lines ${nearMiss.line}-${last}` : `line ${nearMiss.line}`
  return new FsError(
    'not_found',
    `edits[${index}]: old_text was not found. Closest match (${Math.round(nearMiss.similarity * 100)}% similar) at ${range}:\n${excerpt}${nearMiss.lines.length > shown.length ? '\n…' : ''}${difference}`,
    {
      hint: 'Copy old_text exactly from the file (the + lines above), or read it again if unsure.',
      details: { editIndex: index, closestLine: nearMiss.line, similarity: nearMiss.similarity },
    },
  )
}

/** Lines of a short diff at most; the excerpt above it shows the whole window. */
const maxDiffLines = 8

/**
 * A short diff from old_text to the closest text in the file (`-` what old_text says, `+` what the
 * file has, with the file's line numbers), so the model can correct its old_text in one step.
 * Indentation alone never explains a miss (tolerant matching ignores it): lines equal but for
 * surrounding whitespace count as equal.
 */
function shortDiff(oldLines: string[], fileLines: string[], firstLine: number): string {
  const parts = diffArrays(oldLines, fileLines, { comparator: (left, right) => left.trim() === right.trim() })
  const out: string[] = []
  let fileLine = firstLine
  let omitted = 0
  for (const part of parts) {
    if (!part.added && !part.removed) {
      fileLine += part.count ?? part.value.length
      continue
    }
    for (const line of part.value) {
      if (out.length >= maxDiffLines) omitted++
      else out.push(part.added ? `+${String(fileLine).padStart(5)}│${clip(line)}` : `-     │${clip(line)}`)
      if (part.added) fileLine++
    }
  }
  if (out.length === 0) return ''
  return `\nDiff (- old_text, + file):\n${out.join('\n')}${omitted ? `\n… ${omitted} more diff lines` : ''}`
}

function clip(line: string): string {
  return line.length > 200 ? `${line.slice(0, 200)}…` : line
}

/** Options of {@link editFile}. */
export interface EditFileOptions {
  /** Compute the result and diff but do not write. */
  dryRun?: boolean | undefined
  /** Largest file to edit. Default {@link defaultMaxEditBytes}. */
  maxBytes?: number | undefined
  /** Lines of context in the diff. Default 3. */
  contextLines?: number | undefined
  signal?: AbortSignal | undefined
}

/** The result of {@link editFile}. */
export interface EditFileResult {
  /** Unified diff of the change (empty when nothing changed); a note instead when it was too costly to compute. */
  diff: string
  changed: boolean
  /** False for a dry run or when nothing changed. */
  written: boolean
  applied: AppliedEdit[]
}

/**
 * Applies {@link applyEdits} to a file and writes it back atomically (unless `dryRun`). All edits succeed or the
 * file is untouched. Fails with `conflict` if the file changed on disk while the edit was being computed.
 *
 * @throws FsError as {@link applyEdits}, plus `binary` (not valid UTF-8), `too_large`, `conflict`.
 */
export async function editFile(
  file: SafePath,
  edits: readonly Edit[],
  options: EditFileOptions = {},
): Promise<EditFileResult> {
  const { signal } = options
  const { data, stats } = await readFileBounded(file, {
    maxBytes: options.maxBytes ?? defaultMaxEditBytes,
    signal,
  })
  // Decoding invalid UTF-8 and writing it back would silently replace bytes: refuse instead.
  if (data.includes(0) || !isUtf8(data)) {
    throw new FsError('binary', `Not a UTF-8 text file; editing it would corrupt it: ${file.path}`)
  }
  const original = data.toString('utf8')
  const result = applyEdits(original, edits)
  signal?.throwIfAborted()
  const diff = result.changed
    ? (createPatch(file.path, original, result.content, undefined, undefined, {
        context: options.contextLines ?? 3,
        timeout: 2000,
      }) ?? '(diff omitted: too many changes to compute quickly)')
    : ''
  let written = false
  if (result.changed && !options.dryRun) {
    try {
      const now = await lstat(file.path)
      if (now.ino !== stats.ino || now.size !== stats.size || now.mtimeMs !== stats.mtimeMs) {
        throw new FsError('conflict', `The file changed while the edit was being prepared: ${file.path}`, {
          hint: 'Read it again and retry the edit.',
        })
      }
    } catch (error) {
      throw toFsError(error, file.path)
    }
    await writeFileAtomic(file, result.content, { overwrite: true, signal })
    written = true
  }
  return { diff, changed: result.changed, written, applied: result.applied }
}
