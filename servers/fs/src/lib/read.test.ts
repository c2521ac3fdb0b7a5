import { open, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { useTempDirectories } from '../../test/temp-tree.js'
import { PathGuard } from './path-guard.js'
import { readMediaFile, readTextFile } from './read.js'

const tempDirectory = useTempDirectories()

async function withFile(name: string, content: string | Buffer) {
  const root = await tempDirectory()
  await writeFile(path.join(root, name), content)
  const { guard } = await PathGuard.create([root])
  return { root, guard, file: await guard.resolveSafe(name) }
}

function numbered(count: number, eol = '\n'): string {
  return Array.from({ length: count }, (_, index) => `line ${index + 1}`).join(eol) + eol
}

describe('readTextFile', () => {
  it('reads a whole small file', async () => {
    const { file } = await withFile('a.txt', numbered(3))
    expect(await readTextFile(file)).toEqual({
      text: 'line 1\nline 2\nline 3\n',
      startLine: 1,
      lineCount: 3,
      truncated: false,
      lineCut: false,
      totalBytes: 21,
      nextLine: undefined,
    })
  })

  it('answers the same either side of the one-read size (64 KiB): whole, head, tail and ranges', async () => {
    const line = (index: number) => `${String(index).padStart(6, '0')} ${'x'.repeat(56)}\n` // 64 bytes
    for (const lines of [1023, 1024, 1025]) {
      const content = Array.from({ length: lines }, (_, index) => line(index + 1)).join('')
      const { file } = await withFile(`f${lines}.txt`, content)
      expect((await readTextFile(file)).text).toBe(content)
      expect((await readTextFile(file, { head: 2 })).text).toBe(line(1) + line(2))
      expect((await readTextFile(file, { tail: 2 })).text).toBe(line(lines - 1) + line(lines))
      expect((await readTextFile(file, { startLine: 1000, endLine: 1001 })).text).toBe(
        line(1000) + line(1001),
      )
      expect((await readTextFile(file, { maxBytes: 100 })).nextLine).toBe(2)
    }
  })

  it('reads the first N lines with head and says where to continue', async () => {
    const { file } = await withFile('a.txt', numbered(10))
    const result = await readTextFile(file, { head: 3 })
    expect(result).toMatchObject({
      text: 'line 1\nline 2\nline 3\n',
      lineCount: 3,
      truncated: false,
      nextLine: 4,
    })
  })

  it('reads a line range', async () => {
    const { file } = await withFile('a.txt', numbered(10))
    const result = await readTextFile(file, { startLine: 4, endLine: 6 })
    expect(result).toMatchObject({
      text: 'line 4\nline 5\nline 6\n',
      startLine: 4,
      lineCount: 3,
      nextLine: 7,
    })
  })

  it('reads from a start line to the end, including a last line without newline', async () => {
    const { file } = await withFile('a.txt', 'one\ntwo\nthree')
    expect(await readTextFile(file, { startLine: 2 })).toMatchObject({
      text: 'two\nthree',
      lineCount: 2,
      nextLine: undefined,
    })
  })

  it('reads the last N lines with tail', async () => {
    const { file } = await withFile('a.txt', numbered(10))
    expect(await readTextFile(file, { tail: 2 })).toMatchObject({
      text: 'line 9\nline 10\n',
      lineCount: 2,
      startLine: undefined,
      truncated: false,
    })
  })

  it('tail returns the whole file when it has fewer lines', async () => {
    const { file } = await withFile('a.txt', 'only\nlines')
    expect((await readTextFile(file, { tail: 50 })).text).toBe('only\nlines')
  })

  it('keeps CRLF line endings', async () => {
    const { file } = await withFile('a.txt', numbered(4, '\r\n'))
    expect((await readTextFile(file, { head: 2 })).text).toBe('line 1\r\nline 2\r\n')
    expect((await readTextFile(file, { tail: 1 })).text).toBe('line 4\r\n')
  })

  it('truncates at the byte cap on a line boundary, and nextLine continues exactly', async () => {
    const content = numbered(1000)
    const { file } = await withFile('a.txt', content)
    let text = ''
    let startLine: number | undefined = 1
    let pages = 0
    while (startLine !== undefined) {
      const page = await readTextFile(file, { startLine, maxBytes: 1000 })
      expect(Buffer.byteLength(page.text)).toBeLessThanOrEqual(1000)
      expect(page.text.endsWith('\n')).toBe(true)
      if (page.nextLine !== undefined) expect(page.truncated).toBe(true)
      text += page.text
      startLine = page.nextLine
      pages++
    }
    expect(text).toBe(content)
    expect(pages).toBeGreaterThan(5)
  })

  it('cuts a single line longer than the cap, on a character boundary, and moves past it', async () => {
    const long = '€'.repeat(1000) // 3 bytes each
    const { file } = await withFile('a.txt', `${long}\nnext\n`)
    const result = await readTextFile(file, { maxBytes: 100 })
    expect(result).toMatchObject({ truncated: true, lineCut: true, nextLine: 2, lineCount: 1 })
    expect(result.text).toBe('€'.repeat(33))
    expect((await readTextFile(file, { startLine: result.nextLine })).text).toBe('next\n')
  })

  it('tail under a byte cap keeps the last whole lines that fit', async () => {
    const { file } = await withFile('a.txt', numbered(100))
    const result = await readTextFile(file, { tail: 50, maxBytes: 30 })
    expect(result.truncated).toBe(true)
    expect(result.text).toBe('line 98\nline 99\nline 100\n')
  })

  it('tail of a last line longer than the cap returns its end, on a character boundary', async () => {
    const { file } = await withFile('a.txt', `short\n${'é'.repeat(100)}`)
    const result = await readTextFile(file, { tail: 1, maxBytes: 51 })
    expect(result).toMatchObject({ truncated: true, lineCut: true })
    expect(result.text).toBe('é'.repeat(25))
  })

  it('tail works on a multi-megabyte file across chunk boundaries', async () => {
    const content = numbered(400_000) // about 5 MB
    const { file } = await withFile('big.txt', content)
    expect(Buffer.byteLength(content)).toBeGreaterThan(4_000_000)
    const result = await readTextFile(file, { tail: 20_000 })
    const expected = content.split('\n').slice(-20_001).join('\n')
    expect(result.text).toBe(expected)
    expect(result.lineCount).toBe(20_000)
  })

  it('tail reads backwards: the end of a 4 GiB sparse file comes back at once', async () => {
    const { root, guard } = await withFile('placeholder.txt', '')
    const target = path.join(root, 'huge.log')
    const handle = await open(target, 'w')
    // Text where the binary sniff looks (the first 8 KiB); the rest is a hole of NUL bytes.
    await handle.write(numbered(2000), 0)
    const size = 4 * 1024 ** 3
    const tail = '\nsecond to last\nlast line\n'
    await handle.write(tail, size - tail.length)
    await handle.close()
    const file = await guard.resolveSafe('huge.log')
    const started = performance.now()
    const result = await readTextFile(file, { tail: 2 })
    // Reading the whole file would take many seconds and gigabytes of memory.
    expect(performance.now() - started).toBeLessThan(2000)
    expect(result).toMatchObject({ text: 'second to last\nlast line\n', totalBytes: size })
  })

  it('head on the same sparse file stops early too', async () => {
    const { root, guard } = await withFile('placeholder.txt', '')
    const handle = await open(path.join(root, 'huge.log'), 'w')
    await handle.write(`first\nsecond\n${numbered(2000)}`, 0)
    await handle.write('end\n', 4 * 1024 ** 3 - 4)
    await handle.close()
    const result = await readTextFile(await guard.resolveSafe('huge.log'), { head: 2 })
    expect(result).toMatchObject({ text: 'first\nsecond\n', nextLine: 3 })
  })

  it('refuses a binary file with code binary and names a media type it recognises', async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13])
    const { file } = await withFile('image.png', png)
    await expect(readTextFile(file)).rejects.toMatchObject({
      code: 'binary',
      details: { mimeType: 'image/png' },
      hint: expect.stringContaining('read_media_file'),
    })
  })

  it('reads an empty file', async () => {
    const { file } = await withFile('empty.txt', '')
    expect(await readTextFile(file)).toMatchObject({ text: '', lineCount: 0, nextLine: undefined })
    expect(await readTextFile(file, { tail: 3 })).toMatchObject({ text: '', lineCount: 0 })
  })

  it.each([
    [{ head: 1, tail: 1 }, /only one of/],
    [{ head: 1, startLine: 2 }, /only one of/],
    [{ head: 0 }, /head must be a positive integer/],
    [{ tail: -1 }, /tail must be a positive integer/],
    [{ startLine: 1.5 }, /startLine must be a positive integer/],
    [{ startLine: 5, endLine: 2 }, /endLine \(2\) is before startLine \(5\)/],
    [{ startLine: 50 }, /past the end of the file \(3 lines\)/],
    [{ startLine: 4 }, /past the end of the file \(3 lines\)/],
  ])('rejects %j', async (options, message) => {
    const { file } = await withFile('a.txt', numbered(3))
    await expect(readTextFile(file, options)).rejects.toMatchObject({ code: 'invalid_argument', message })
  })

  it('refuses a directory with not_a_file', async () => {
    const root = await tempDirectory()
    const { guard } = await PathGuard.create([root])
    await expect(readTextFile(await guard.resolveSafe('.'))).rejects.toMatchObject({ code: 'not_a_file' })
  })

  it('honours an aborted signal', async () => {
    const { file } = await withFile('a.txt', numbered(3))
    const controller = new AbortController()
    controller.abort()
    await expect(readTextFile(file, { signal: controller.signal })).rejects.toThrow(/abort/i)
  })
})

describe('readMediaFile', () => {
  it('returns the bytes and the sniffed MIME type', async () => {
    const gif = Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1')
    const { file } = await withFile('picture.bin', gif)
    expect(await readMediaFile(file)).toEqual({ mimeType: 'image/gif', data: gif, size: gif.length })
  })

  it('falls back to application/octet-stream', async () => {
    const { file } = await withFile('data.bin', Buffer.from([1, 2, 3]))
    expect((await readMediaFile(file)).mimeType).toBe('application/octet-stream')
  })

  it('refuses a file over the cap with too_large', async () => {
    const { file } = await withFile('big.bin', Buffer.alloc(2000))
    await expect(readMediaFile(file, { maxBytes: 1000 })).rejects.toMatchObject({ code: 'too_large' })
  })
})
