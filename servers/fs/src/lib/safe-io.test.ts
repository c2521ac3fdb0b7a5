import { execFileSync } from 'node:child_process'
import { chmod, readdir, readFile, rename, stat, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { makeTree, snapshot, useTempDirectories } from '../../test/temp-tree.js'
import { FsError } from './errors.js'
import { PathGuard } from './path-guard.js'
import { looksBinary, openForRead, sniffMimeType, writeFileAtomic } from './safe-io.js'

const tempDirectory = useTempDirectories()

async function setup() {
  const base = await tempDirectory()
  const root = path.join(base, 'root')
  const outside = path.join(base, 'outside')
  await makeTree(base, {
    root: { 'existing.txt': 'old content', dir: { 'inner.txt': 'inner' } },
    outside: { 'secret.txt': 'secret', 'inner.txt': 'outside inner' },
  })
  const { guard } = await PathGuard.create([root])
  return { base, root, outside, guard }
}

/** A signal whose throwIfAborted() throws on the n-th call: a failure at a chosen step of a write. */
function failingSignal(failOnCall: number): AbortSignal {
  const signal = new AbortController().signal
  let calls = 0
  Object.defineProperty(signal, 'throwIfAborted', {
    value: () => {
      calls++
      if (calls >= failOnCall) throw new Error('simulated failure')
    },
  })
  return signal
}

describe('writeFileAtomic', () => {
  it('creates a new file', async () => {
    const { root, guard } = await setup()
    const file = await guard.resolveSafe('new.txt', { forWrite: true })
    expect(await writeFileAtomic(file, 'hello')).toEqual({ created: true, bytesWritten: 5 })
    expect(await readFile(path.join(root, 'new.txt'), 'utf8')).toBe('hello')
  })

  it('replaces an existing file and keeps its permissions', async () => {
    const { root, guard } = await setup()
    await chmod(path.join(root, 'existing.txt'), 0o640)
    const file = await guard.resolveSafe('existing.txt', { forWrite: true })
    expect(await writeFileAtomic(file, 'new content')).toMatchObject({ created: false })
    expect(await readFile(path.join(root, 'existing.txt'), 'utf8')).toBe('new content')
    expect((await stat(path.join(root, 'existing.txt'))).mode & 0o777).toBe(0o640)
  })

  it('refuses to overwrite with overwrite: false and leaves the file and directory as they were', async () => {
    const { root, guard } = await setup()
    const before = await snapshot(root)
    const file = await guard.resolveSafe('existing.txt', { forWrite: true })
    await expect(writeFileAtomic(file, 'clobber', { overwrite: false })).rejects.toMatchObject({
      code: 'conflict',
    })
    expect(await snapshot(root)).toEqual(before)
  })

  it('with overwrite: false, fails with conflict when the file appears after the check (link is exclusive)', async () => {
    const { root, guard } = await setup()
    const file = await guard.resolveSafe('race.txt', { forWrite: true })
    // The file appears between resolveSafe and the write: the final link() must still refuse it.
    const signal = new AbortController().signal
    let calls = 0
    Object.defineProperty(signal, 'throwIfAborted', {
      value: () => {
        calls++
        // Third check runs after the temporary file is complete, just before link().
        if (calls === 3) execFileSync('sh', ['-c', `printf winner > '${path.join(root, 'race.txt')}'`])
      },
    })
    await expect(writeFileAtomic(file, 'loser', { overwrite: false, signal })).rejects.toMatchObject({
      code: 'conflict',
    })
    expect(await readFile(path.join(root, 'race.txt'), 'utf8')).toBe('winner')
    expect((await readdir(root)).filter((name) => name.endsWith('.tmp'))).toEqual([])
  })

  it('leaves no temporary file behind when the write fails midway', async () => {
    const { root, guard } = await setup()
    const before = await snapshot(root)
    const file = await guard.resolveSafe('existing.txt', { forWrite: true })
    // Call 1 is the entry check, call 2 comes after the temporary file was created.
    await expect(writeFileAtomic(file, 'partial', { signal: failingSignal(2) })).rejects.toThrow(
      'simulated failure',
    )
    expect(await snapshot(root)).toEqual(before)
  })

  it('leaves no temporary file behind when the final rename fails', async () => {
    const { root, guard } = await setup()
    const file = await guard.resolveSafe('later-dir', { forWrite: true })
    const signal = new AbortController().signal
    let calls = 0
    Object.defineProperty(signal, 'throwIfAborted', {
      value: () => {
        // After the data is written, a directory takes the name: rename() then fails.
        if (++calls === 3) execFileSync('mkdir', ['-p', path.join(root, 'later-dir', 'child')])
      },
    })
    await expect(writeFileAtomic(file, 'data', { signal })).rejects.toBeInstanceOf(FsError)
    expect((await readdir(root)).sort()).toEqual(['dir', 'existing.txt', 'later-dir'])
  })

  it('refuses a symlink that replaced the target after the check, leaving the outside untouched', async () => {
    const { root, outside, guard } = await setup()
    const before = await snapshot(outside)
    const file = await guard.resolveSafe('swapped.txt', { forWrite: true })
    await symlink(path.join(outside, 'secret.txt'), path.join(root, 'swapped.txt'))
    await expect(writeFileAtomic(file, 'pwned')).rejects.toMatchObject({ code: 'permission_denied' })
    expect(await snapshot(outside)).toEqual(before)
  })

  it('refuses when a parent directory was swapped for a symlink to the outside after the check', async () => {
    const { root, outside, guard } = await setup()
    const before = await snapshot(outside)
    const file = await guard.resolveSafe('dir/inner.txt', { forWrite: true })
    await rename(path.join(root, 'dir'), path.join(root, 'dir-old'))
    await symlink(outside, path.join(root, 'dir'))
    await expect(writeFileAtomic(file, 'pwned')).rejects.toMatchObject({ code: 'permission_denied' })
    expect(await snapshot(outside)).toEqual(before)
  })

  it('says the parent directory is missing, or creates it on request', async () => {
    const { root, guard } = await setup()
    const file = await guard.resolveSafe('a/b/c.txt', { forWrite: true })
    await expect(writeFileAtomic(file, 'x')).rejects.toMatchObject({ code: 'not_found' })
    await writeFileAtomic(file, 'x', { createParents: true })
    expect(await readFile(path.join(root, 'a', 'b', 'c.txt'), 'utf8')).toBe('x')
  })

  it('refuses to write over a directory or an allowed root', async () => {
    const { guard } = await setup()
    await expect(
      writeFileAtomic(await guard.resolveSafe('dir', { forWrite: true }), 'x'),
    ).rejects.toMatchObject({
      code: 'not_a_file',
    })
    await expect(
      writeFileAtomic(await guard.resolveSafe('.', { forWrite: true }), 'x'),
    ).rejects.toMatchObject({
      code: 'not_a_file',
    })
  })
})

describe('openForRead', () => {
  it('opens a regular file and reports its stats', async () => {
    const { guard } = await setup()
    const { handle, stats } = await openForRead(await guard.resolveSafe('existing.txt'))
    expect(stats.size).toBe(11)
    await handle.close()
  })

  it('refuses a directory and a FIFO without blocking', async () => {
    const { root, guard } = await setup()
    await expect(openForRead(await guard.resolveSafe('dir'))).rejects.toMatchObject({ code: 'not_a_file' })
    execFileSync('mkfifo', [path.join(root, 'pipe')])
    await expect(openForRead(await guard.resolveSafe('pipe'))).rejects.toMatchObject({ code: 'not_a_file' })
  })

  it('does not follow a file swapped for a symlink after the check', async () => {
    const { root, outside, guard } = await setup()
    const file = await guard.resolveSafe('existing.txt')
    await rename(path.join(root, 'existing.txt'), path.join(root, 'moved.txt'))
    await symlink(path.join(outside, 'secret.txt'), path.join(root, 'existing.txt'))
    await expect(openForRead(file)).rejects.toMatchObject({ code: 'permission_denied' })
  })

  it('re-checks after open: a parent swapped for a symlink to the outside is refused', async () => {
    const { root, outside, guard } = await setup()
    const file = await guard.resolveSafe('dir/inner.txt')
    await rename(path.join(root, 'dir'), path.join(root, 'dir-old'))
    await symlink(outside, path.join(root, 'dir'))
    await expect(openForRead(file)).rejects.toMatchObject({ code: 'permission_denied' })
  })
})

describe('ReadDescriptor (openForRead)', () => {
  /** Descriptors this process holds (/proc/self/fd: the project's machines run Linux, as the re-check does). */
  const openDescriptors = async () => (await readdir('/proc/self/fd')).length

  it('reads on the calling thread and through the thread pool, and closes once', async () => {
    const { guard } = await setup()
    const { handle } = await openForRead(await guard.resolveSafe('existing.txt'))
    const onThread = Buffer.alloc(3)
    expect(handle.readSync(onThread, 4)).toBe(3)
    expect(onThread.toString()).toBe('con')
    const pooled = Buffer.alloc(20)
    expect((await handle.read(pooled, 0, 20, 8)).bytesRead).toBe(3)
    expect(pooled.subarray(0, 3).toString()).toBe('ent')
    // Past the end: fewer bytes, no error.
    expect(handle.readSync(Buffer.alloc(8), 9)).toBe(2)
    handle.close()
    expect(handle.fd).toBe(-1)
    expect(() => handle.close()).not.toThrow()
  })

  it('leaves no descriptor open when it refuses a file', async () => {
    const { root, outside, guard } = await setup()
    const before = await openDescriptors()
    await expect(openForRead(await guard.resolveSafe('dir'))).rejects.toMatchObject({ code: 'not_a_file' })
    const file = await guard.resolveSafe('dir/inner.txt')
    await rename(path.join(root, 'dir'), path.join(root, 'dir-old'))
    await symlink(outside, path.join(root, 'dir'))
    await expect(openForRead(file)).rejects.toMatchObject({ code: 'permission_denied' })
    expect(await openDescriptors()).toBe(before)
  })
})

describe('looksBinary', () => {
  it.each([
    ['plain ASCII', Buffer.from('hello\nworld\n'), true, false],
    ['UTF-8 text', Buffer.from('grüße — 日本語 🎉'), true, false],
    ['a NUL byte', Buffer.from('abc\0def'), true, true],
    ['invalid UTF-8', Buffer.from([0x61, 0xff, 0xfe, 0x62]), true, true],
    ['Latin-1 text', Buffer.from('caf\xe9', 'latin1'), true, true],
    ['a multi-byte character cut by the sample', Buffer.from('abc€').subarray(0, 5), false, false],
    ['the same cut at the end of the whole file', Buffer.from('abc€').subarray(0, 5), true, true],
  ])('%s', (_name, bytes, complete, expected) => {
    expect(looksBinary(bytes, complete)).toBe(expected)
  })

  it('only looks at the first 8 KiB', () => {
    const text = Buffer.concat([Buffer.alloc(8192, 0x61), Buffer.from([0, 0, 0])])
    expect(looksBinary(text)).toBe(false)
  })

  it('treats a character split at the 8 KiB boundary as text', () => {
    const euro = Buffer.from('€')
    const bytes = Buffer.concat([Buffer.alloc(8191, 0x61), euro, Buffer.from('tail')])
    expect(looksBinary(bytes)).toBe(false)
  })
})

describe('sniffMimeType', () => {
  const bmpHeader = Buffer.alloc(18)
  bmpHeader.write('BM', 0, 'latin1')
  bmpHeader.writeUInt32LE(40, 14)
  it.each([
    ['image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0])],
    ['image/jpeg', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10])],
    ['image/gif', Buffer.from('GIF89a\x01\x00', 'latin1')],
    ['image/webp', Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 ', 'latin1')],
    ['image/bmp', bmpHeader],
    ['image/svg+xml', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"></svg>')],
    ['image/svg+xml', Buffer.from('\ufeff<?xml version="1.0"?>\n<!-- logo -->\n<!DOCTYPE svg>\n<svg>')],
    ['audio/mpeg', Buffer.from('ID3\x04\x00', 'latin1')],
    ['audio/mpeg', Buffer.from([0xff, 0xfb, 0x90, 0x64])],
    ['audio/wav', Buffer.from('RIFF\x10\x00\x00\x00WAVEfmt ', 'latin1')],
    ['audio/ogg', Buffer.from('OggS\x00\x02', 'latin1')],
    ['audio/flac', Buffer.from('fLaC\x00\x00', 'latin1')],
    ['audio/mp4', Buffer.from('\x00\x00\x00\x20ftypM4A \x00\x00', 'latin1')],
    ['video/mp4', Buffer.from('\x00\x00\x00\x20ftypisom\x00\x00', 'latin1')],
    ['application/pdf', Buffer.from('%PDF-1.7\n')],
  ])('recognises %s', (expected, bytes) => {
    expect(sniffMimeType(bytes)).toBe(expected)
  })

  it.each([
    ['plain text', Buffer.from('hello world')],
    ['text starting with BM', Buffer.from('BMW cars are listed below, one per line')],
    ['HTML', Buffer.from('<html><body><svg></svg></body></html>')],
    ['empty', Buffer.alloc(0)],
  ])('returns undefined for %s', (_name, bytes) => {
    expect(sniffMimeType(bytes)).toBeUndefined()
  })
})

describe('writes with a real file system', () => {
  it('writes binary data byte for byte', async () => {
    const { root, guard } = await setup()
    const bytes = Buffer.from([0, 1, 2, 255, 254])
    await writeFileAtomic(await guard.resolveSafe('blob.bin', { forWrite: true }), bytes)
    expect(await readFile(path.join(root, 'blob.bin'))).toEqual(bytes)
  })

  it('writes a multi-megabyte file in chunks', async () => {
    const { root, guard } = await setup()
    const big = Buffer.alloc(3 * 1024 * 1024 + 7, 0x61)
    expect(
      (await writeFileAtomic(await guard.resolveSafe('big.txt', { forWrite: true }), big)).bytesWritten,
    ).toBe(big.length)
    expect((await stat(path.join(root, 'big.txt'))).size).toBe(big.length)
    await writeFile(path.join(root, 'unrelated.txt'), 'x')
  })
})
