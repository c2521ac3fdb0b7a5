import { nodeCrypto } from '@keel-mcp/core'
import { FsError } from './errors.js'

/**
 * Opaque pagination cursors: a position plus a fingerprint of the query that produced it, base64url-encoded.
 * A cursor is only valid with the same query (same root, pattern and options); results are sorted, so a
 * position means the same thing on the next call as long as the tree has not changed.
 */

/** A short fingerprint of the query parts (anything JSON-serialisable). */
export function queryKey(...parts: unknown[]): string {
  return nodeCrypto().createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 16)
}

/** Encodes a position (one or more non-negative integers) for the query `key`. */
export function encodeCursor(key: string, position: readonly number[]): string {
  return Buffer.from(JSON.stringify({ k: key, p: position }), 'utf8').toString('base64url')
}

/**
 * Decodes a cursor made by {@link encodeCursor} for the same query `key`; undefined or empty means the start
 * (a position of `size` zeros).
 * @throws FsError `invalid_argument` for a malformed cursor or one from another query.
 */
export function decodeCursor(cursor: string | undefined, key: string, size: number): number[] {
  if (cursor === undefined || cursor === '') return new Array<number>(size).fill(0)
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    parsed = undefined
  }
  const record = parsed as { k?: unknown; p?: unknown } | undefined
  const position = record?.p
  if (
    typeof record !== 'object' ||
    record === null ||
    typeof record.k !== 'string' ||
    !Array.isArray(position) ||
    position.length !== size ||
    !position.every((value) => Number.isSafeInteger(value) && value >= 0)
  ) {
    throw new FsError('invalid_argument', 'Invalid cursor.', {
      hint: 'Pass the cursor exactly as returned, or omit it to start over.',
    })
  }
  if (record.k !== key) {
    throw new FsError('invalid_argument', 'This cursor belongs to a different query.', {
      hint: 'Repeat the same arguments with the cursor, or omit it to start over.',
    })
  }
  return position as number[]
}
