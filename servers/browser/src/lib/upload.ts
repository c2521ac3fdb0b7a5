import { constants, promises as fs, readlinkSync } from 'node:fs'
// node:fs/promises loads on first use through the getter, not at start.
import type { FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, isAbsolute, join, relative, resolve, sep } from 'node:path'

/** Largest file upload_file hands to a page. */
export const UPLOAD_MAX_BYTES = 50 * 1024 * 1024
/** Private copies kept at once; the oldest is removed past this. */
const KEPT_COPIES = 200

/** Why a file cannot be uploaded, in words the model can act on. */
export class UploadError extends Error {
  override name = 'UploadError'
  constructor(
    readonly kind: 'not_found' | 'permission_denied' | 'invalid_argument' | 'too_large',
    message: string,
  ) {
    super(message)
  }
}

function inside(root: string, path: string): boolean {
  const rest = relative(root, path)
  return rest !== '' && rest !== '..' && !rest.startsWith(`..${sep}`) && !isAbsolute(rest)
}

/**
 * Files for upload_file, taken from the upload directories and handed to the page as private
 * copies. The file is opened once (never through a symlink at its last component), the opened
 * descriptor itself is proved to lie inside an upload directory (the kernel names what it is, so a
 * directory of the path swapped for a symlink during the call is caught), and the bytes read from
 * that descriptor are written to a file in a directory only this process can enter. Chromium reads
 * that copy, whenever the page reads it: nothing done to the original path afterwards reaches it.
 */
export class UploadStore {
  private dir: Promise<string> | undefined
  private counter = 0
  private readonly copies: string[] = []

  constructor(private readonly roots: string[]) {}

  /** The private copy of `path` (a file inside an upload directory); its name is the original's. */
  async copy(path: string): Promise<string> {
    const requested = resolve(path)
    const roots = (
      await Promise.all(this.roots.map((root) => fs.realpath(root).catch(() => undefined)))
    ).filter((root): root is string => root !== undefined)
    const outside = () => new UploadError('permission_denied', `${path} is outside the upload directories`)
    let handle: FileHandle
    try {
      handle = await fs.open(requested, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ELOOP') throw new UploadError('permission_denied', `${path} is a symbolic link`)
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new UploadError('not_found', `No file ${path}`)
      throw new UploadError('permission_denied', `${path} cannot be read (${code ?? 'error'})`)
    }
    try {
      const stats = await handle.stat()
      if (!stats.isFile()) throw new UploadError('invalid_argument', `${path} is not a file`)
      const opened = await this.openedPath(handle.fd, requested, stats)
      if (!opened || !roots.some((root) => inside(root, opened))) throw outside()
      if (stats.size > UPLOAD_MAX_BYTES)
        throw new UploadError(
          'too_large',
          `${path} is ${stats.size} bytes, over the ${UPLOAD_MAX_BYTES}-byte limit`,
        )
      const data = await handle.readFile()
      if (data.byteLength > UPLOAD_MAX_BYTES)
        throw new UploadError('too_large', `${path} is over the ${UPLOAD_MAX_BYTES}-byte limit`)
      return await this.keep(basename(requested), data)
    } finally {
      await handle.close()
    }
  }

  /**
   * What the descriptor really is: on Linux the kernel says (`/proc/self/fd/N`); elsewhere the
   * path is resolved again and must still be the same file (device and inode).
   */
  private async openedPath(
    descriptor: number,
    requested: string,
    stats: { dev: number; ino: number },
  ): Promise<string | undefined> {
    if (process.platform === 'linux') {
      try {
        return readlinkSync(`/proc/self/fd/${descriptor}`).replace(/ \(deleted\)$/, '')
      } catch {
        // /proc not mounted: the portable check below.
      }
    }
    const real = await fs.realpath(requested).catch(() => undefined)
    if (!real) return undefined
    const now = await fs.stat(real).catch(() => undefined)
    return now && now.dev === stats.dev && now.ino === stats.ino ? real : undefined
  }

  private async keep(name: string, data: Buffer): Promise<string> {
    this.dir ??= fs.mkdtemp(join(tmpdir(), 'keel-browser-uploads-'))
    const dir = await this.dir
    await fs.chmod(dir, 0o700)
    // One directory per copy: the page sees the original file name, and two uploads never collide.
    const own = join(dir, String(++this.counter))
    await fs.mkdir(own, { mode: 0o700 })
    const file = join(own, name)
    await fs.writeFile(file, data, { mode: 0o600, flag: 'wx' })
    this.copies.push(own)
    while (this.copies.length > KEPT_COPIES) {
      const old = this.copies.shift()
      if (old) await fs.rm(old, { recursive: true, force: true })
    }
    return file
  }

  /** Removes every private copy. */
  async dispose(): Promise<void> {
    const dir = await this.dir?.catch(() => undefined)
    this.dir = undefined
    if (dir) await fs.rm(dir, { recursive: true, force: true, maxRetries: 2 }).catch(() => undefined)
  }
}
