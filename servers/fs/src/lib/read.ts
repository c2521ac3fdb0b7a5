import { FsError } from './errors.js'
import type { SafePath } from './path-guard.js'
import {
  type ByteSource,
  completeUtf8Length,
  looksBinary,
  memorySource,
  openForReadSync,
  readFileBounded,
  readRange,
  sniffLength,
  sniffMimeType,
} from './safe-io.js'

/** Default byte cap of one text read: large enough for most source files, small enough for a model's context. */
export const defaultMaxTextBytes = 256 * 1024
/** Default cap of {@link readMediaFile}. */
export const defaultMaxMediaBytes = 10 * 1024 * 1024

const chunkSize = 64 * 1024
const newline = 0x0a

/** Options of {@link readTextFile}. Give at most one of `head`, `tail`, or `startLine`/`endLine`. */
export interface ReadTextOptions {
  /** The first N lines. */
  head?: number | undefined
  /** The last N lines; reads backwards from the end, so it is cheap on huge files. */
  tail?: number | undefined
  /** First line to return, 1-based. */
  startLine?: number | undefined
  /** Last line to return, 1-based and inclusive. Default: to the end. */
  endLine?: number | undefined
  /** Byte cap of the returned text. Default {@link defaultMaxTextBytes}. */
  maxBytes?: number | undefined
  signal?: AbortSignal | undefined
}

/** The result of {@link readTextFile}. */
export interface ReadTextResult {
  /** The text, with the file's own line endings. */
  text: string
  /** Line number (1-based) of the first returned line; undefined for `tail` (counting would read the whole file). */
  startLine: number | undefined
  /** How many lines `text` holds (a cut line counts). */
  lineCount: number
  /** The byte cap stopped the read before the requested range ended. */
  truncated: boolean
  /** The last returned line was cut in the middle because it alone is longer than the cap. */
  lineCut: boolean
  /** The file's size in bytes. */
  totalBytes: number
  /** Pass this as `startLine` to continue; undefined when nothing follows (always for `tail`). */
  nextLine: number | undefined
}

/**
 * Reads a UTF-8 text file, whole or in part, under a byte cap. Refuses binary files.
 *
 * @throws FsError `binary`, `invalid_argument` (bad options, or `startLine` past the end), `not_a_file`,
 * `not_found`, `permission_denied`.
 */
export async function readTextFile(file: SafePath, options: ReadTextOptions = {}): Promise<ReadTextResult> {
  const { head, tail, startLine, endLine, signal } = options
  const maxBytes = options.maxBytes ?? defaultMaxTextBytes
  assertPositive('head', head)
  assertPositive('tail', tail)
  assertPositive('startLine', startLine)
  assertPositive('endLine', endLine)
  assertPositive('maxBytes', maxBytes)
  const ranged = startLine !== undefined || endLine !== undefined
  if (Number(head !== undefined) + Number(tail !== undefined) + Number(ranged) > 1) {
    throw new FsError('invalid_argument', 'Give only one of head, tail, or startLine/endLine.')
  }
  if (startLine !== undefined && endLine !== undefined && endLine < startLine) {
    throw new FsError('invalid_argument', `endLine (${endLine}) is before startLine (${startLine}).`)
  }
  signal?.throwIfAborted()

  const { handle, stats } = openForReadSync(file)
  try {
    const size = stats.size
    // A file that fits in one chunk is read at once, on this thread: one read(2) of a few kilobytes costs
    // less than a round trip to the thread pool. Sniffing and the line scan then work in memory. Larger
    // files are read through the thread pool, chunk by chunk.
    let source: ByteSource = handle
    if (size <= chunkSize) {
      const whole = Buffer.allocUnsafe(size)
      source = memorySource(whole.subarray(0, handle.readSync(whole, 0)))
    }
    const sample = await readRange(source, 0, Math.min(size, sniffLength))
    if (looksBinary(sample, size <= sniffLength)) {
      const mimeType = sniffMimeType(sample)
      throw new FsError('binary', `Not a UTF-8 text file: ${file.path}`, {
        hint: mimeType
          ? `It looks like ${mimeType}; use read_media_file.`
          : 'Binary files cannot be read as text.',
        details: { mimeType },
      })
    }
    if (tail !== undefined) return await readTail(source, size, tail, maxBytes, signal)
    const first = startLine ?? 1
    const last = head ?? endLine ?? Number.POSITIVE_INFINITY
    return await readForward(source, size, first, last, maxBytes, signal)
  } finally {
    handle.close()
  }
}

function assertPositive(name: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
    throw new FsError('invalid_argument', `${name} must be a positive integer.`)
  }
}

async function readForward(
  handle: ByteSource,
  size: number,
  first: number,
  last: number,
  maxBytes: number,
  signal: AbortSignal | undefined,
): Promise<ReadTextResult> {
  // Phase 1: find the byte range by counting newlines, holding one chunk at a time. The chunk is no
  // larger than the file: a fresh 64 KiB buffer per call for a 1 KiB file is most of a small read's
  // garbage-collection work (small buffers come from Node's shared pool).
  const inMemory = handle.bytes
  let chunk = inMemory ?? Buffer.allocUnsafe(Math.min(chunkSize, size))
  let line = 1 // the line the scan is in
  let start = first === 1 ? 0 : -1 // offset of the first requested line
  let boundary = start // end of the last whole line that fits under the cap
  let boundaryLine = first // the line that starts at `boundary`
  let end = -1
  let truncated = false
  let position = 0
  let lastByte = -1
  scan: while (position < size) {
    signal?.throwIfAborted()
    let bytesRead: number
    if (inMemory) {
      // A view, not a copy: the whole file is the one chunk.
      chunk = inMemory.subarray(position)
      bytesRead = chunk.length
    } else {
      bytesRead = (await handle.read(chunk, 0, Math.min(chunkSize, size - position), position)).bytesRead
    }
    if (bytesRead === 0) break
    lastByte = chunk[bytesRead - 1]!
    let index = chunk.indexOf(newline, 0)
    while (index !== -1 && index < bytesRead) {
      const offset = position + index + 1 // just past this newline
      if (start < 0) {
        if (line + 1 === first) {
          start = offset
          boundary = offset
        }
      } else {
        if (offset - start > maxBytes) {
          truncated = true
          break scan
        }
        boundary = offset
        boundaryLine = line + 1
        if (line === last) {
          end = offset
          break scan
        }
      }
      line++
      index = chunk.indexOf(newline, index + 1)
    }
    position += bytesRead
    if (start >= 0 && position - start > maxBytes) {
      // No later newline can end a line inside the cap.
      truncated = true
      break
    }
  }

  if (start < 0 || (start >= size && size > 0)) {
    const totalLines = size === 0 ? 0 : lastByte === newline ? line - 1 : line
    const unit = totalLines === 1 ? 'line' : 'lines'
    throw new FsError(
      'invalid_argument',
      `startLine ${first} is past the end of the file (${totalLines} ${unit}).`,
    )
  }

  let lineCut = false
  if (end < 0) {
    if (!truncated) end = size
    else if (boundary > start) end = boundary
    else {
      end = start + maxBytes
      lineCut = true
    }
  }

  // Phase 2: read the range in one go.
  let data = await readRange(handle, start, end - start, signal)
  if (lineCut) data = data.subarray(0, completeUtf8Length(data))
  const text = data.toString('utf8')

  let nextLine: number | undefined
  if (truncated) nextLine = lineCut ? boundaryLine + 1 : boundaryLine
  else if (end < size) nextLine = boundaryLine
  const lineCount = lineCut ? 1 : countLines(text)
  return { text, startLine: first, lineCount, truncated, lineCut, totalBytes: size, nextLine }
}

async function readTail(
  handle: ByteSource,
  size: number,
  count: number,
  maxBytes: number,
  signal: AbortSignal | undefined,
): Promise<ReadTextResult> {
  if (size === 0) {
    return {
      text: '',
      startLine: undefined,
      lineCount: 0,
      truncated: false,
      lineCut: false,
      totalBytes: 0,
      nextLine: undefined,
    }
  }
  const chunk = Buffer.allocUnsafe(Math.min(chunkSize, size))
  const lastByte = Buffer.allocUnsafe(1)
  await handle.read(lastByte, 0, 1, size - 1)
  // A final newline ends the last line; it does not start an empty one.
  let position = lastByte[0] === newline ? size - 1 : size
  let found = 0
  let start = -1
  let earliestFitting = size // start of the earliest line found so far that fits under the cap
  let truncated = false
  scan: while (position > 0) {
    signal?.throwIfAborted()
    const readStart = Math.max(0, position - chunkSize)
    const { bytesRead } = await handle.read(chunk, 0, position - readStart, readStart)
    let index = chunk.lastIndexOf(newline, bytesRead - 1)
    while (index !== -1) {
      const lineStart = readStart + index + 1
      if (size - lineStart > maxBytes) {
        truncated = true
        break scan
      }
      earliestFitting = lineStart
      found++
      if (found === count) {
        start = lineStart
        break scan
      }
      index = index === 0 ? -1 : chunk.lastIndexOf(newline, index - 1)
    }
    position = readStart
    if (size - position > maxBytes) {
      truncated = true
      break
    }
  }
  let lineCut = false
  if (start < 0) {
    if (!truncated) start = 0
    else if (earliestFitting < size) start = earliestFitting
    else {
      start = size - maxBytes
      lineCut = true
    }
  }
  let data = await readRange(handle, start, size - start, signal)
  if (lineCut) {
    // Do not start in the middle of a multi-byte character.
    let skip = 0
    while (skip < 3 && skip < data.length && (data[skip]! & 0xc0) === 0x80) skip++
    data = data.subarray(skip)
  }
  const text = data.toString('utf8')
  return {
    text,
    startLine: undefined,
    lineCount: countLines(text),
    truncated,
    lineCut,
    totalBytes: size,
    nextLine: undefined,
  }
}

/** Lines in `text`: newlines, plus one for a last line without a newline. */
export function countLines(text: string): number {
  if (text.length === 0) return 0
  let lines = 0
  let index = text.indexOf('\n')
  while (index !== -1) {
    lines++
    index = text.indexOf('\n', index + 1)
  }
  return text.endsWith('\n') ? lines : lines + 1
}

/** The result of {@link readMediaFile}. */
export interface MediaFile {
  /** Sniffed from the leading bytes; `application/octet-stream` when unknown. */
  mimeType: string
  data: Buffer
  size: number
}

/**
 * Reads a whole (image, audio, …) file for base64 transport, with its sniffed MIME type.
 * @throws FsError `too_large` over `maxBytes` (default {@link defaultMaxMediaBytes}).
 */
export async function readMediaFile(
  file: SafePath,
  options: { maxBytes?: number | undefined; signal?: AbortSignal | undefined } = {},
): Promise<MediaFile> {
  const { data, stats } = await readFileBounded(file, {
    maxBytes: options.maxBytes ?? defaultMaxMediaBytes,
    signal: options.signal,
  })
  return { mimeType: sniffMimeType(data) ?? 'application/octet-stream', data, size: stats.size }
}
