import { isUtf8 } from 'node:buffer'
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  read,
  readlinkSync,
  readSync,
  realpathSync,
  type Stats,
  statSync,
} from 'node:fs'
import { type FileHandle, link, lstat, open, realpath, rename, rm, stat } from 'node:fs/promises'
import path from 'node:path'
import { nodeCrypto } from '@keel-mcp/core'
import { anchorDirectory } from './anchor.js'
import { FsError, isErrnoError, toFsError } from './errors.js'
import type { SafePath } from './path-guard.js'

/** How many leading bytes decide whether a file is text (same window as git and grep use, roughly). */
export const sniffLength = 8192

// O_NOFOLLOW makes open() fail on a final-component symlink instead of following it; O_NONBLOCK keeps a FIFO
// that replaced a file from hanging the open. Both are 0 where the platform lacks them (Windows).
const noFollow = constants.O_NOFOLLOW ?? 0
const readFlags = constants.O_RDONLY | noFollow | (constants.O_NONBLOCK ?? 0)
const exclusiveWriteFlags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | noFollow
/** Linux tells what an open descriptor really is through /proc/self/fd. */
export const hasProcFileDescriptors = process.platform === 'linux'

/**
 * An open file read by descriptor. Positional reads go through the thread pool ({@link read}) or run on the
 * calling thread ({@link readSync}, for a few kilobytes already known to be there); {@link close} is
 * synchronous and idempotent.
 */
export class ReadDescriptor implements ByteSource {
  #fd: number

  constructor(fd: number) {
    this.#fd = fd
  }

  /** The descriptor, or -1 once closed. */
  get fd(): number {
    return this.#fd
  }

  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }> {
    return new Promise((resolve, reject) => {
      read(this.#fd, buffer, offset, length, position, (error, bytesRead) => {
        if (error) reject(error)
        else resolve({ bytesRead })
      })
    })
  }

  /** Fills `buffer` from `position` on the calling thread; returns how many bytes were read (fewer at the end). */
  readSync(buffer: Buffer, position: number): number {
    let filled = 0
    while (filled < buffer.length) {
      const bytesRead = readSync(this.#fd, buffer, filled, buffer.length - filled, position + filled)
      if (bytesRead === 0) break
      filled += bytesRead
    }
    return filled
  }

  close(): void {
    if (this.#fd < 0) return
    const fd = this.#fd
    this.#fd = -1
    try {
      closeSync(fd)
    } catch {
      // close(2) on a read-only descriptor reports nothing worth acting on; the descriptor is gone either way.
    }
  }
}

/** An open regular file, already re-checked against the roots. Close it with `handle.close()`. */
export interface OpenedFile {
  handle: ReadDescriptor
  stats: Stats
}

/**
 * Opens a file for reading without following a final symlink, checks that it is a regular file, and re-checks
 * that what was opened is still inside the roots (a parent directory could have been swapped for a symlink
 * between resolveSafe and open).
 *
 * open, fstat and the re-check run on the calling thread: each is one system call on metadata the kernel
 * has cached, far cheaper than a round trip to the thread pool each (see docs/performance.md). The reads
 * that follow may go either way.
 *
 * @throws FsError `not_found`, `not_a_file`, `permission_denied`.
 */
export async function openForRead(file: SafePath): Promise<OpenedFile> {
  return openForReadSync(file)
}

/** {@link openForRead} for synchronous callers. */
export function openForReadSync(file: SafePath): OpenedFile {
  let handle: ReadDescriptor
  try {
    handle = new ReadDescriptor(openSync(file.path, readFlags))
  } catch (error) {
    throw toFsError(error, file.path)
  }
  try {
    const stats = fstatSync(handle.fd)
    if (stats.isDirectory()) {
      throw new FsError('not_a_file', `Is a directory, not a file: ${file.path}`, {
        hint: 'Use list_directory or directory_tree for directories.',
      })
    }
    if (!stats.isFile()) {
      throw new FsError('not_a_file', `Not a regular file (device, FIFO or socket): ${file.path}`)
    }
    assertDescriptorInsideSync(handle.fd, stats, file.path, file)
    return { handle, stats }
  } catch (error) {
    handle.close()
    throw toFsError(error, file.path)
  }
}

/**
 * Re-checks, after opening, that the descriptor really refers to something inside the roots. On Linux the
 * kernel tells us what the descriptor is (`/proc/self/fd/N`); elsewhere we realpath again and compare inodes.
 */
export async function assertDescriptorInside(
  descriptor: number,
  stats: Stats,
  openedPath: string,
  file: SafePath,
): Promise<void> {
  if (hasProcFileDescriptors) {
    try {
      // procfs answers from kernel memory (no disk): a synchronous call costs less than a round trip
      // to the thread pool, on every open.
      const actual = readlinkSync(`/proc/self/fd/${descriptor}`).replace(/ \(deleted\)$/, '')
      file.guard.assertInside(actual, file.path)
      return
    } catch (error) {
      if (error instanceof FsError) throw error
      // /proc not mounted (some containers): fall through to the portable check.
    }
  }
  const actual = await realpath(openedPath)
  file.guard.assertInside(actual, file.path)
  const current = await stat(actual)
  if (current.ino !== stats.ino || current.dev !== stats.dev) {
    throw new FsError('conflict', `The file changed while it was being opened: ${file.path}`, {
      hint: 'Try again.',
    })
  }
}

/**
 * {@link assertDescriptorInside} for synchronous callers (the content search's read loop). `stats` may be
 * omitted; the portable fallback then fstat-s the descriptor itself.
 */
export function assertDescriptorInsideSync(
  descriptor: number,
  stats: Stats | undefined,
  openedPath: string,
  file: SafePath,
): void {
  if (hasProcFileDescriptors) {
    let actual: string | undefined
    try {
      actual = readlinkSync(`/proc/self/fd/${descriptor}`).replace(/ \(deleted\)$/, '')
    } catch {
      // /proc not mounted: fall through to the portable check.
    }
    if (actual !== undefined) {
      file.guard.assertInside(actual, file.path)
      return
    }
  }
  const actual = realpathSync(openedPath)
  file.guard.assertInside(actual, file.path)
  const current = statSync(actual)
  const opened = stats ?? fstatSync(descriptor)
  if (current.ino !== opened.ino || current.dev !== opened.dev) {
    throw new FsError('conflict', `The file changed while it was being opened: ${file.path}`)
  }
}

/**
 * Reads a whole file of at most `maxBytes` bytes (no symlink following, re-checked after open).
 * @throws FsError `too_large` when the file is bigger.
 */
export async function readFileBounded(
  file: SafePath,
  options: { maxBytes: number; signal?: AbortSignal | undefined },
): Promise<{ data: Buffer; stats: Stats }> {
  options.signal?.throwIfAborted()
  const { handle, stats } = await openForRead(file)
  try {
    if (stats.size > options.maxBytes) {
      throw new FsError(
        'too_large',
        `File is ${stats.size} bytes, over the limit of ${options.maxBytes} bytes: ${file.path}`,
      )
    }
    return { data: await readRange(handle, 0, stats.size, options.signal), stats }
  } finally {
    handle.close()
  }
}

/** Options of {@link writeFileAtomic}. */
export interface WriteOptions {
  /** Replace an existing file. With false an existing entry fails with `conflict`, race-free. Default true. */
  overwrite?: boolean
  /** Create missing parent directories (inside the root). Default false. */
  createParents?: boolean
  signal?: AbortSignal | undefined
}

/** What {@link writeFileAtomic} did. */
export interface WriteResult {
  /** False when an existing file was replaced. */
  created: boolean
  bytesWritten: number
}

/**
 * Writes a file atomically: the data goes to a fresh temporary file in the same directory (O_EXCL, never
 * following links), is fsync'ed, then renamed over the target. Readers see the old or the new content, never
 * a half-written file, and a failure leaves no temporary file behind. An existing file keeps its permissions
 * (and, when the process may, its owner). A symbolic link at the target is refused, never followed.
 * With `overwrite: false` the final step is `link()`, which fails if anything appeared at the target in the
 * meantime, so two writers can never both "create" the same file.
 *
 * @throws FsError `conflict`, `not_a_file`, `not_found` (missing parent), `permission_denied`.
 */
export async function writeFileAtomic(
  file: SafePath,
  data: string | Uint8Array,
  options: WriteOptions = {},
): Promise<WriteResult> {
  const overwrite = options.overwrite ?? true
  const { signal } = options
  signal?.throwIfAborted()
  if (file.path === file.root) {
    throw new FsError('not_a_file', `Is an allowed root directory, not a file: ${file.path}`)
  }
  const directory = path.dirname(file.path)
  const name = path.basename(file.path)
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data

  // Every name below is reached through the directory's descriptor (anchor.ts): a directory on the
  // path swapped for a link to the outside after the guard's check cannot redirect the write, the
  // temporary file or the rename.
  const anchored = await anchorDirectory(file, directory, { create: options.createParents === true })
  const target = anchored.at(name)
  const temporaryName = `.${name}.${nodeCrypto().randomBytes(6).toString('hex')}.tmp`
  const temporary = anchored.at(temporaryName)
  let handle: FileHandle | undefined
  let createdTemporary = false
  try {
    const existing = await lstatOrUndefined(target)
    if (existing) {
      if (existing.isSymbolicLink()) {
        throw new FsError('permission_denied', `Refusing to write through a symbolic link: ${file.path}`)
      }
      if (existing.isDirectory()) throw new FsError('not_a_file', `Is a directory, not a file: ${file.path}`)
      if (!overwrite) throw conflict(file.path)
    }
    handle = await open(temporary, exclusiveWriteFlags, existing ? existing.mode & 0o7777 : 0o666)
    createdTemporary = true
    // The temporary file is where the data really lands: check it is inside the roots before writing.
    await assertDescriptorInside(handle.fd, await handle.stat(), temporary, file)
    if (existing) {
      // open() applied the umask; restore the original mode exactly, and the owner when we are allowed to.
      await handle.chmod(existing.mode & 0o7777)
      await handle.chown(existing.uid, existing.gid).catch(() => {})
    }
    let written = 0
    while (written < bytes.length) {
      signal?.throwIfAborted()
      const { bytesWritten } = await handle.write(bytes, written, Math.min(bytes.length - written, 1 << 20))
      written += bytesWritten
    }
    await handle.sync()
    await handle.close()
    handle = undefined
    signal?.throwIfAborted()

    if (overwrite) {
      await rename(temporary, target)
    } else {
      await linkExclusive(temporary, target, file.path)
      await rm(temporary, { force: true })
    }
    createdTemporary = false
    await anchored.sync()
    return { created: !existing, bytesWritten: written }
  } catch (error) {
    await handle?.close().catch(() => {})
    if (createdTemporary) await rm(temporary, { force: true }).catch(() => {})
    throw toFsError(error, file.path)
  } finally {
    await anchored.close()
  }
}

/** link() fails if the target exists, atomically; falls back to an exclusive create where hard links are unsupported. */
async function linkExclusive(source: string, target: string, shown: string): Promise<void> {
  try {
    await link(source, target)
  } catch (error) {
    if (!isErrnoError(error)) throw error
    if (error.code === 'EEXIST') throw conflict(shown)
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK'].includes(error.code ?? '')) throw error
    // No hard links here (some FUSE/network file systems): reserve the name exclusively, then replace it.
    const placeholder = await open(target, exclusiveWriteFlags, 0o600).catch((reason: unknown) => {
      if (isErrnoError(reason) && reason.code === 'EEXIST') throw conflict(shown)
      throw reason
    })
    await placeholder.close()
    await rename(source, target)
  }
}

function conflict(target: string): FsError {
  return new FsError('conflict', `Already exists: ${target}`, {
    hint: 'Set overwrite to true to replace it, or choose another name.',
  })
}

async function lstatOrUndefined(target: string): Promise<Stats | undefined> {
  try {
    return await lstat(target)
  } catch (error) {
    if (isErrnoError(error) && (error.code === 'ENOENT' || error.code === 'ENOTDIR')) return undefined
    throw toFsError(error, target)
  }
}

/**
 * True when the bytes look binary: a NUL byte or invalid UTF-8 within the first {@link sniffLength} bytes.
 * Pass `complete: true` when `sample` is the whole file, so a truncated multi-byte sequence at its end counts
 * as invalid (otherwise it is assumed to continue past the sample).
 */
export function looksBinary(sample: Uint8Array, complete = false): boolean {
  let window = sample.length > sniffLength ? sample.subarray(0, sniffLength) : sample
  if (window.includes(0)) return true
  if (!complete || sample.length > sniffLength) window = window.subarray(0, completeUtf8Length(window))
  return !isUtf8(window)
}

/** Length of `bytes` without a trailing, possibly incomplete UTF-8 sequence. */
export function completeUtf8Length(bytes: Uint8Array): number {
  const end = bytes.length
  let start = end - 1
  // Step back over at most 3 continuation bytes (10xxxxxx) to the lead byte.
  while (start >= 0 && end - start <= 3 && (bytes[start]! & 0xc0) === 0x80) start--
  if (start < 0) return end
  const lead = bytes[start]!
  const expected = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1
  return end - start < expected ? start : end
}

const textDecoder = new TextDecoder()

/**
 * The MIME type of common image and audio formats, from their leading bytes (no extension guessing). SVG is
 * recognised as text. Returns undefined when unknown.
 */
export function sniffMimeType(head: Uint8Array): string | undefined {
  const ascii = (offset: number, text: string) => {
    if (head.length < offset + text.length) return false
    for (let index = 0; index < text.length; index++) {
      if (head[offset + index] !== text.charCodeAt(index)) return false
    }
    return true
  }
  const bytes = (offset: number, expected: readonly number[]) =>
    head.length >= offset + expected.length &&
    expected.every((value, index) => head[offset + index] === value)

  if (bytes(0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png'
  if (bytes(0, [0xff, 0xd8, 0xff])) return 'image/jpeg'
  if (ascii(0, 'GIF87a') || ascii(0, 'GIF89a')) return 'image/gif'
  if (ascii(0, 'RIFF') && ascii(8, 'WEBP')) return 'image/webp'
  if (ascii(0, 'RIFF') && ascii(8, 'WAVE')) return 'audio/wav'
  if (ascii(0, 'FORM') && (ascii(8, 'AIFF') || ascii(8, 'AIFC'))) return 'audio/aiff'
  if (ascii(0, 'BM') && head.length >= 18) {
    // "BM" alone is too weak (text can start with it): also require a known DIB header size.
    const dibHeaderSize = head[14]! | (head[15]! << 8) | (head[16]! << 16) | (head[17]! << 24)
    if ([12, 40, 52, 56, 64, 108, 124].includes(dibHeaderSize)) return 'image/bmp'
  }
  if (ascii(0, 'II*\0') || ascii(0, 'MM\0*')) return 'image/tiff'
  if (bytes(0, [0x00, 0x00, 0x01, 0x00]) && head.length >= 6 && head[4]! > 0) return 'image/x-icon'
  if (ascii(4, 'ftyp')) {
    const brand = textDecoder.decode(head.subarray(8, 12))
    if (brand === 'avif' || brand === 'avis') return 'image/avif'
    if (['heic', 'heix', 'mif1', 'msf1'].includes(brand)) return 'image/heic'
    if (['M4A ', 'M4B ', 'M4P '].includes(brand)) return 'audio/mp4'
    return 'video/mp4'
  }
  if (ascii(0, 'ID3')) return 'audio/mpeg'
  if (head.length >= 2 && head[0] === 0xff) {
    const second = head[1]!
    if ((second & 0xf6) === 0xf0) return 'audio/aac' // ADTS: sync, layer 00
    if ((second & 0xe0) === 0xe0 && (second & 0x06) !== 0 && (second & 0x18) !== 0x08) return 'audio/mpeg'
  }
  if (ascii(0, 'OggS')) return 'audio/ogg'
  if (ascii(0, 'fLaC')) return 'audio/flac'
  if (ascii(0, 'MThd')) return 'audio/midi'
  if (bytes(0, [0x1a, 0x45, 0xdf, 0xa3])) return 'video/webm'
  if (ascii(0, '%PDF-')) return 'application/pdf'
  if (isSvg(head)) return 'image/svg+xml'
  return undefined
}

function isSvg(head: Uint8Array): boolean {
  const sample = head.subarray(0, 4096)
  if (sample.includes(0)) return false
  let text = textDecoder.decode(sample).trimStart()
  // Skip the XML declaration, comments and a doctype before the root element.
  for (;;) {
    const prolog = /^(<\?xml[\s\S]*?\?>|<!--[\s\S]*?-->|<!DOCTYPE[^>]*>)\s*/i.exec(text)
    if (!prolog) break
    text = text.slice(prolog[0].length)
  }
  return /^<svg[\s>]/i.test(text)
}

/**
 * Reads `length` bytes at `start` from an open file, in chunks of at most 1 MiB, checking the signal
 * between chunks. Returns fewer bytes when the file is shorter than expected (it shrank meanwhile).
 */
/**
 * What the readers need of an open file: positional reads. A `FileHandle` is one; so is
 * {@link memorySource} over bytes already read.
 */
export interface ByteSource {
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>
  /** The whole file, when it is already in memory: readers take views of it instead of copies. */
  readonly bytes?: Buffer | undefined
}

/**
 * A {@link ByteSource} over bytes already in memory: a small file is read with one system call and
 * then scanned (sniffed, split into lines) without a further round trip to the thread pool each.
 */
export function memorySource(bytes: Buffer): ByteSource {
  return {
    bytes,
    read(buffer, offset, length, position) {
      const end = Math.min(bytes.length, position + length)
      return Promise.resolve({ bytesRead: position < end ? bytes.copy(buffer, offset, position, end) : 0 })
    },
  }
}

export async function readRange(
  handle: ByteSource,
  start: number,
  length: number,
  signal?: AbortSignal,
): Promise<Buffer> {
  if (handle.bytes) {
    signal?.throwIfAborted()
    return handle.bytes.subarray(start, start + length)
  }
  const data = Buffer.allocUnsafe(length)
  let filled = 0
  while (filled < length) {
    signal?.throwIfAborted()
    const { bytesRead } = await handle.read(data, filled, Math.min(length - filled, 1 << 20), start + filled)
    if (bytesRead === 0) break
    filled += bytesRead
  }
  return filled === length ? data : data.subarray(0, filled)
}
