import { sanitize, stripInvisible } from './sanitize.js'

export interface FileSlice {
  /** The text of the slice, or '' for a binary file. */
  content: string
  binary: boolean
  offset: number
  /** Byte offset to continue from, when the file goes on. */
  nextOffset: number | undefined
  /** Hidden characters or invisible markup were removed. */
  sanitized: boolean
}

/** NUL bytes or invalid UTF-8 in the first 8 KiB: not text a model should read. */
export function isBinary(bytes: Uint8Array): boolean {
  const head = bytes.subarray(0, 8192)
  if (head.includes(0)) return true
  try {
    // A multi-byte character may be cut at the 8 KiB mark: allow an incomplete tail.
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: head.length < bytes.length })
    return false
  } catch {
    return true
  }
}

/**
 * One byte range of a file as text, never splitting a UTF-8 character. Hidden Unicode is always
 * removed; invisible HTML only from Markdown, where it renders as nothing (in code it is visible
 * source and editing must see it).
 */
export function sliceFile(bytes: Uint8Array, path: string, offset: number, maxBytes: number): FileSlice {
  if (isBinary(bytes))
    return { content: '', binary: true, offset: 0, nextOffset: undefined, sanitized: false }
  let start = Math.min(offset, bytes.length)
  while (start > 0 && start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start--
  let end = Math.min(start + maxBytes, bytes.length)
  while (end < bytes.length && end > start && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--
  const raw = new TextDecoder().decode(bytes.subarray(start, end))
  const markdown = /\.(md|markdown|mdx)$/i.test(path)
  const content = markdown ? sanitize(raw) : stripInvisible(raw)
  return {
    content,
    binary: false,
    offset: start,
    nextOffset: end < bytes.length ? end : undefined,
    sanitized: content !== raw,
  }
}
