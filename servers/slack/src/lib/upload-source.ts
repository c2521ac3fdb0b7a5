import { constants, type Stats } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import path from 'node:path'
import { SlackError } from './slack.js'

const directoryFlags = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0)
const fileFlags = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0)

/**
 * Reads a file inside the upload directory, opened once: the relative path is walked component by
 * component from the directory, each opened with O_NOFOLLOW through its parent's descriptor
 * (`/proc/self/fd/<fd>/<name>` on Linux), so no link — final or in the middle, planted before or
 * swapped in during the call — leads the read outside. The file is read from that descriptor only.
 * Absolute paths, `..`, and anything but a regular file are refused.
 *
 * @throws SlackError `upload_refused` (with a message for the model).
 */
export async function readUploadFile(
  directory: string,
  relative: string,
  maxBytes: number,
): Promise<{ bytes: Buffer; name: string; stats: Stats }> {
  const refuse = (why: string) => new SlackError('upload_refused', why)
  // Loaded on the first upload: node:fs/promises (and the readline modules it pulls in) is not
  // needed to start the server or to list its tools.
  const { open, readlink, realpath, stat } = await import('node:fs/promises')
  if (relative.includes('\0') || path.isAbsolute(relative) || /^[a-zA-Z]:/.test(relative)) {
    throw refuse('path must be relative to the upload directory')
  }
  const parts = relative.split(/[\\/]+/).filter((part) => part !== '' && part !== '.')
  if (parts.length === 0 || parts.includes('..'))
    throw refuse('path must name a file inside the upload directory')
  const root = await realpath(directory).catch(() => {
    throw refuse('the upload directory does not exist')
  })
  const viaProc = process.platform === 'linux'
  let handle: FileHandle = await open(root, directoryFlags)
  try {
    for (const [index, part] of parts.entries()) {
      const last = index === parts.length - 1
      const next = viaProc
        ? `/proc/self/fd/${handle.fd}/${part}`
        : path.join(root, ...parts.slice(0, index + 1))
      const opened = await open(next, last ? fileFlags : directoryFlags).catch(
        (error: NodeJS.ErrnoException) => {
          throw refuse(
            error.code === 'ENOENT'
              ? `no such file in the upload directory: ${relative}`
              : error.code === 'ELOOP' || error.code === 'ENOTDIR'
                ? `a symbolic link or non-directory is in the way: ${relative} (links are never followed)`
                : `cannot open ${relative} (${error.code ?? 'error'})`,
          )
        },
      )
      await handle.close()
      handle = opened
    }
    const stats = await handle.stat()
    if (!stats.isFile()) throw refuse(`not a regular file: ${relative}`)
    if (stats.size > maxBytes)
      throw refuse(`${relative} is ${stats.size} bytes, over the ${maxBytes}-byte limit`)
    // What was opened must lie inside the upload directory: the kernel's own name for the
    // descriptor on Linux; elsewhere (no /proc: each step was opened by path, so a middle link could
    // have been followed) the real path, and the same inode behind it.
    const actual = viaProc
      ? await readlink(`/proc/self/fd/${handle.fd}`)
      : await realpath(path.join(root, ...parts)).catch(() => '')
    if (!actual.startsWith(root + path.sep)) throw refuse(`${relative} is outside the upload directory`)
    if (!viaProc) {
      const named = await stat(actual)
      if (named.ino !== stats.ino || named.dev !== stats.dev)
        throw refuse(`${relative} changed while being opened`)
    }
    const bytes = Buffer.alloc(stats.size)
    let filled = 0
    while (filled < bytes.length) {
      const { bytesRead } = await handle.read(bytes, filled, bytes.length - filled, filled)
      if (bytesRead === 0) break
      filled += bytesRead
    }
    return { bytes: bytes.subarray(0, filled), name: parts.at(-1) as string, stats }
  } finally {
    await handle.close().catch(() => {})
  }
}
