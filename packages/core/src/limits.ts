/**
 * Output limits and pagination: results are capped in bytes, and a capped result says so and
 * says how to get the rest.
 */

/** Cuts `text` to at most `maxBytes` of UTF-8 without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): { text: string; truncated: boolean } {
  if (Buffer.byteLength(text) <= maxBytes) return { text, truncated: false }
  const buffer = Buffer.from(text)
  let end = Math.max(0, maxBytes)
  // Step back to the start of a UTF-8 sequence (continuation bytes are 0b10xxxxxx).
  while (end > 0 && ((buffer[end] ?? 0) & 0xc0) === 0x80) end--
  return { text: buffer.subarray(0, end).toString('utf8'), truncated: true }
}

/** Result of {@link capText}. */
export interface CappedText {
  text: string
  truncated: boolean
  /** Bytes of the full text. */
  totalBytes: number
  /** Where the next read should start (only when truncated). */
  nextCursor?: string
}

/**
 * Caps text at `maxBytes`, cutting at the last line break when there is one, and appends an
 * explicit notice: `[truncated: … use cursor "X" to continue]`. `cursorFor(consumedBytes)` builds
 * the continuation cursor; without it the notice asks for a narrower request.
 */
export function capText(
  text: string,
  maxBytes: number,
  options: { cursorFor?: (consumedBytes: number) => string; unit?: string } = {},
): CappedText {
  const totalBytes = Buffer.byteLength(text)
  if (totalBytes <= maxBytes) return { text, truncated: false, totalBytes }
  let { text: head } = truncateUtf8(text, maxBytes)
  const lastBreak = head.lastIndexOf('\n')
  if (lastBreak > head.length / 2) head = head.slice(0, lastBreak + 1)
  const consumed = Buffer.byteLength(head)
  const nextCursor = options.cursorFor?.(consumed)
  const notice = nextCursor
    ? `[truncated: showed ${consumed} of ${totalBytes} bytes; call again with cursor "${nextCursor}" to continue]`
    : `[truncated: showed ${consumed} of ${totalBytes} bytes; narrow the request to see the rest]`
  return {
    text: `${head}${head.endsWith('\n') ? '' : '\n'}${notice}`,
    truncated: true,
    totalBytes,
    ...(nextCursor ? { nextCursor } : {}),
  }
}

/** Encodes a pagination position as an opaque cursor (base64url JSON). */
export function encodeCursor(position: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url')
}

/**
 * Decodes a cursor made by {@link encodeCursor}; `undefined` when it is malformed (callers turn
 * that into an `invalid_argument` error).
 */
export function decodeCursor<T extends Record<string, unknown>>(cursor: string): T | undefined {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as T) : undefined
  } catch {
    return undefined
  }
}

/** Slices `items` from an offset cursor; returns the page and the next cursor, if any. */
export function paginate<T>(
  items: readonly T[],
  options: { cursor?: string; limit: number; key?: string },
): { page: T[]; nextCursor?: string; offset: number } {
  let offset = 0
  if (options.cursor) {
    const decoded = decodeCursor<{ offset?: unknown; key?: unknown }>(options.cursor)
    if (
      !decoded ||
      typeof decoded.offset !== 'number' ||
      decoded.offset < 0 ||
      (options.key && decoded.key !== options.key)
    ) {
      throw new RangeError('invalid cursor: pass the nextCursor value from the previous result unchanged')
    }
    offset = decoded.offset
  }
  const page = items.slice(offset, offset + options.limit)
  const next = offset + page.length
  return {
    page,
    offset,
    ...(next < items.length
      ? { nextCursor: encodeCursor({ offset: next, ...(options.key ? { key: options.key } : {}) }) }
      : {}),
  }
}

/** Runs `fn` and rejects with a `TimeoutError` after `ms`; aborts the signal it passes down. */
export async function withTimeout<T>(
  ms: number,
  fn: (signal: AbortSignal) => Promise<T>,
  parent?: AbortSignal,
): Promise<T> {
  const controller = new AbortController()
  const timer = setTimeout(
    () => controller.abort(Object.assign(new Error(`timed out after ${ms} ms`), { name: 'TimeoutError' })),
    ms,
  )
  const onAbort = () => controller.abort(parent?.reason)
  parent?.addEventListener('abort', onAbort, { once: true })
  try {
    return await fn(controller.signal)
  } finally {
    clearTimeout(timer)
    parent?.removeEventListener('abort', onAbort)
  }
}
