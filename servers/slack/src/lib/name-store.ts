import { homedir } from 'node:os'
import path from 'node:path'
import { nodeCrypto } from '@keel-mcp/core'
import type { NameStore, PersistedNames } from './directory.js'

/**
 * The user's cache directory for this server: `$XDG_CACHE_HOME/keel-mcp-slack`, else
 * `~/.cache/keel-mcp-slack` (`%LOCALAPPDATA%` on Windows).
 */
export function defaultCacheDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_CACHE_HOME ||
    (process.platform === 'win32' && env.LOCALAPPDATA ? env.LOCALAPPDATA : path.join(homedir(), '.cache'))
  return path.join(base, 'keel-mcp-slack')
}

/**
 * Names learnt in one workspace, kept in `directory/names-<hash>.json`: the hash (of the API root
 * and the token) keeps workspaces apart and names no secret. Only ids, names and channel flags are
 * stored — never message text — in a file only the user can read, replaced atomically. The file's
 * name (node:crypto) and node:fs/promises are worked out on the first load or save, not at start.
 */
export function fileNameStore(directory: string, apiUrl: string, token: string): NameStore {
  let named: string | undefined
  const fileName = () => {
    named ??= path.join(
      directory,
      `names-${nodeCrypto().createHash('sha256').update(`${apiUrl}\n${token}`).digest('hex').slice(0, 20)}.json`,
    )
    return named
  }
  return {
    async load() {
      const { readFile } = await import('node:fs/promises')
      const parsed = JSON.parse(await readFile(fileName(), 'utf8')) as PersistedNames
      return Array.isArray(parsed.users) && Array.isArray(parsed.channels) ? parsed : undefined
    },
    async save(names) {
      const { mkdir, rename, writeFile } = await import('node:fs/promises')
      const file = fileName()
      await mkdir(directory, { recursive: true, mode: 0o700 })
      const temporary = `${file}.${process.pid}.tmp`
      await writeFile(temporary, JSON.stringify(names), { mode: 0o600 })
      await rename(temporary, file)
    },
  }
}
