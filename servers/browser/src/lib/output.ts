import { promises as fs } from 'node:fs'
import { join } from 'node:path'

let written = 0

/**
 * Writes `data` to a new file in `dir` (created if missing) and returns its path and size. The
 * name is the server's (`kind-tab-time-n.ext`), never the model's: nothing outside the output
 * directory can be named, and no file is overwritten (`wx`).
 */
export async function writeOutput(
  dir: string,
  kind: string,
  tab: string,
  extension: string,
  data: string | Uint8Array,
): Promise<{ path: string; bytes: number }> {
  await fs.mkdir(dir, { recursive: true })
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const path = join(dir, `${kind}-${tab}-${stamp}-${++written}.${extension}`)
  await fs.writeFile(path, data, { flag: 'wx', mode: 0o600 })
  return { path, bytes: typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength }
}
