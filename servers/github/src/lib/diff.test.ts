import { describe, expect, it } from 'vitest'
import { pageDiff, parseDiff } from './diff.js'

const hunk = (n: number, size = 40) => `@@ -${n},1 +${n},1 @@\n-${'a'.repeat(size)}\n+${'b'.repeat(size)}\n`
const file = (path: string, hunks: number, size = 40) =>
  `diff --git a/${path} b/${path}\nindex 111..222 100644\n--- a/${path}\n+++ b/${path}\n` +
  Array.from({ length: hunks }, (_, index) => hunk(index + 1, size)).join('')

describe('parseDiff', () => {
  it('splits files and hunks and keeps every byte', () => {
    const text = file('a.ts', 2) + file('dir/b.ts', 1)
    const files = parseDiff(text)
    expect(files.map((entry) => [entry.path, entry.hunks.length])).toEqual([
      ['a.ts', 2],
      ['dir/b.ts', 1],
    ])
    expect(files.map((entry) => entry.header + entry.hunks.join('')).join('')).toBe(text)
  })

  it('names deleted, renamed and binary files by their paths', () => {
    const text =
      'diff --git a/gone.ts b/gone.ts\ndeleted file mode 100644\n--- a/gone.ts\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n' +
      'diff --git a/old.ts b/new.ts\nsimilarity index 100%\nrename from old.ts\nrename to new.ts\n' +
      'diff --git a/logo.png b/logo.png\nBinary files a/logo.png and b/logo.png differ\n'
    expect(parseDiff(text).map((entry) => entry.path)).toEqual(['gone.ts', 'new.ts', 'logo.png'])
  })
})

describe('pageDiff', () => {
  const files = parseDiff(file('a.ts', 3) + file('b.ts', 3) + file('c.ts', 1))
  const bytes = (index: number) => files[index]?.bytes ?? 0

  it('fits whole files under the budget and points at the next one', () => {
    const page = pageDiff(files, { file: 0, hunk: 0 }, { maxBytes: bytes(0) + 10, largeBytes: 1e9 })
    expect(page).toMatchObject({ shown: ['a.ts'], next: { file: 1, hunk: 0 }, remaining: 2 })
    expect(page.text).toBe(files[0]?.header + (files[0]?.hunks.join('') ?? ''))
  })

  it('cuts a file between hunks and resumes it with its header repeated', () => {
    const budget = bytes(0) + (files[1]?.header.length ?? 0) + 100
    const first = pageDiff(files, { file: 0, hunk: 0 }, { maxBytes: budget, largeBytes: 1e9 })
    expect(first.partial).toEqual({ path: 'b.ts', fromHunk: 0, toHunk: 1, hunks: 3 })
    expect(first.next).toEqual({ file: 1, hunk: 1 })
    expect(first.remaining).toBe(1)
    const second = pageDiff(files, { file: 1, hunk: 1 }, { maxBytes: 10_000, largeBytes: 1e9 })
    expect(second.text.startsWith(files[1]?.header ?? '-')).toBe(true)
    expect(second.partial).toEqual({ path: 'b.ts', fromHunk: 1, toHunk: 3, hunks: 3 })
    expect(second.shown).toEqual(['c.ts'])
    expect(second.next).toBeUndefined()
  })

  it('shows a hunk larger than the budget alone rather than never', () => {
    const big = parseDiff(file('big.ts', 2, 5000))
    const page = pageDiff(big, { file: 0, hunk: 0 }, { maxBytes: 1000, largeBytes: 1e9 })
    expect(page.partial).toEqual({ path: 'big.ts', fromHunk: 0, toHunk: 1, hunks: 2 })
    expect(page.next).toEqual({ file: 0, hunk: 1 })
  })

  it('leaves files over largeBytes out of the text and names them', () => {
    const mixed = parseDiff(file('small.ts', 1) + file('huge.json', 50, 500) + file('tail.ts', 1))
    const page = pageDiff(mixed, { file: 0, hunk: 0 }, { maxBytes: 10_000, largeBytes: 10_000 })
    expect(page.shown).toEqual(['small.ts', 'tail.ts'])
    expect(page.large.map((entry) => entry.path)).toEqual(['huge.json'])
    expect(page.text).not.toContain('huge.json')
  })
})
