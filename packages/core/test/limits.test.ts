import { describe, expect, it } from 'vitest'
import { capText, decodeCursor, encodeCursor, paginate, truncateUtf8 } from '../src/limits.js'

describe('truncateUtf8', () => {
  it('never splits a multi-byte character', () => {
    const { text, truncated } = truncateUtf8('ééé', 3)
    expect(truncated).toBe(true)
    expect(text).toBe('é')
  })
  it('leaves short text alone', () => {
    expect(truncateUtf8('abc', 3)).toEqual({ text: 'abc', truncated: false })
  })
})

describe('capText', () => {
  it('cuts at a line break and says how to continue', () => {
    const text = Array.from({ length: 100 }, (_, index) => `line ${index}`).join('\n')
    const capped = capText(text, 100, { cursorFor: (consumed) => encodeCursor({ offset: consumed }) })
    expect(capped.truncated).toBe(true)
    expect(capped.totalBytes).toBe(Buffer.byteLength(text))
    const [body, notice] = [
      capped.text.slice(0, capped.text.lastIndexOf('\n')),
      capped.text.slice(capped.text.lastIndexOf('\n') + 1),
    ]
    expect(body.endsWith('\nline 12')).toBe(true)
    expect(notice).toMatch(
      /^\[truncated: showed \d+ of \d+ bytes; call again with cursor ".+" to continue\]$/,
    )
    expect(decodeCursor(capped.nextCursor!)).toEqual({ offset: Buffer.byteLength(`${body}\n`) })
  })
  it('asks for a narrower request when there is no cursor', () => {
    expect(capText('x'.repeat(50), 10).text).toMatch(/narrow the request/)
  })
})

describe('paginate', () => {
  const items = Array.from({ length: 25 }, (_, index) => index)
  it('walks every item once with opaque cursors', () => {
    const seen: number[] = []
    let cursor: string | undefined
    do {
      const page = paginate(items, { cursor, limit: 10, key: 'q' })
      seen.push(...page.page)
      cursor = page.nextCursor
    } while (cursor)
    expect(seen).toEqual(items)
  })
  it('refuses a cursor made for another query', () => {
    const { nextCursor } = paginate(items, { limit: 10, key: 'a' })
    expect(() => paginate(items, { cursor: nextCursor, limit: 10, key: 'b' })).toThrow(/invalid cursor/)
  })
  it('refuses garbage cursors', () => {
    expect(() => paginate(items, { cursor: '!!!', limit: 10 })).toThrow(/invalid cursor/)
  })
})
