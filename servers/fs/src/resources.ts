import { stat } from 'node:fs/promises'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import type { ResourceContents, ResourceTemplateSpec } from '@keel-mcp/core'
import { FsError, listDirectory, readMediaFile, readTextFile } from './lib/index.js'
import { type FsDeps, formatBytes, limits } from './tools/shared.js'

/** Text resources are sent whole or not at all (a resource read has no way to say "truncated"). */
const maxTextResourceBytes = 1024 * 1024

/**
 * `file:///…` resources: read a file (text, or base64 for binaries) or a directory listing, and subscribe to
 * changes. The same guard as the tools: only inside the allowed directories, narrowed by the client's roots.
 */
export const fileResource: ResourceTemplateSpec<FsDeps> = {
  name: 'file',
  uriTemplate: 'file://{+path}',
  title: 'File or directory',
  description:
    'A file inside the allowed directories (text, or base64 for binaries) or a directory listing. Subscribe to be told when it changes.',
  async list({ deps, client }) {
    const { guard } = await deps.directories.forClient(client)
    return guard.roots.map((root) => ({
      uri: pathToFileURL(root).href,
      name: path.basename(root) || root,
      title: root,
      mimeType: 'inode/directory',
    }))
  },
  async read(uri, _variables, { deps, client, signal }): Promise<ResourceContents[]> {
    const guard = await deps.directories.guardFor(client)
    const target = await guard.resolveSafe(uri.href)
    if ((await stat(target.path)).isDirectory()) {
      const listing = await listDirectory(target, { limit: 1000, signal })
      const names = listing.entries.map(
        (entry) => `${entry.name}${entry.type === 'directory' ? '/' : entry.type === 'symlink' ? '@' : ''}`,
      )
      if (listing.nextCursor)
        names.push(`[${listing.total - listing.entries.length} more entries: use list_directory]`)
      return [{ uri: uri.href, mimeType: 'text/plain', text: names.join('\n') }]
    }
    try {
      const text = await readTextFile(target, { maxBytes: maxTextResourceBytes, signal })
      if (text.truncated) {
        throw new FsError('too_large', `Over ${formatBytes(maxTextResourceBytes)}: ${uri.href}`, {
          hint: 'Read it in parts with read_text_file (start_line/end_line).',
        })
      }
      return [{ uri: uri.href, mimeType: 'text/plain', text: text.text }]
    } catch (error) {
      if (!(error instanceof FsError) || error.code !== 'binary') throw error
    }
    const media = await readMediaFile(target, { maxBytes: limits.mediaBytes, signal })
    return [{ uri: uri.href, mimeType: media.mimeType, blob: media.data.toString('base64') }]
  },
  // The path is checked before the subscription is accepted: a path outside the allowed
  // directories (or one that does not exist) is refused with an error, never silently unwatched.
  async subscribe(uri, notify, { deps, client }) {
    const guard = await deps.directories.guardFor(client)
    const target = await guard.resolveSafe(uri.href, { mustExist: true })
    const kind = (await stat(target.path)).isDirectory() ? 'directory' : 'file'
    return deps.watchers.watch(target.path, kind, notify)
  },
}
