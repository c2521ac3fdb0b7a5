import { promises as fs } from 'node:fs'
import { basename, extname, join, relative } from 'node:path'
import { ToolError, z } from '@keel-mcp/core'
import { browse, capOf, defineTool, maxTokensArgument, sessionOf, untrusted } from './shared.js'

/** Largest download returned (inline text is cut to the answer's budget first). */
const MAX_BYTES = 20 * 1024 * 1024
/** Chromium's name for a download still being written. */
const PARTIAL = '.crdownload'

const TEXT_TYPES: Record<string, string> = {
  '.txt': 'text/plain',
  '.csv': 'text/csv',
  '.json': 'application/json',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.xml': 'application/xml',
  '.md': 'text/markdown',
  '.log': 'text/plain',
  '.tsv': 'text/tab-separated-values',
}
const BINARY_TYPES: Record<string, string> = {
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.zip': 'application/zip',
}

/** Text unless it has a NUL byte or is not UTF-8: what a reader would open in an editor. */
function isText(bytes: Buffer, name: string): boolean {
  if (TEXT_TYPES[extname(name).toLowerCase()]) return true
  if (BINARY_TYPES[extname(name).toLowerCase()]) return false
  const head = bytes.subarray(0, 8192)
  if (head.includes(0)) return false
  return !new TextDecoder('utf-8', { fatal: false }).decode(head).includes('\uFFFD')
}

export const downloads = defineTool({
  name: 'downloads',
  title: 'Downloads',
  description:
    'Files the pages downloaded: without name, the list; with name, that file (text inline, other files as a resource).',
  input: {
    name: z.string().min(1).max(255).optional().describe('File name from the list'),
    max_tokens: maxTokensArgument,
  },
  output: { files: z.number(), name: z.string().optional(), bytes: z.number().optional() },
  annotations: { ...browse, idempotentHint: true },
  async run({ name, max_tokens }, context) {
    const { session } = await sessionOf(context)
    const dir = session.downloadDir
    if (!dir)
      throw new ToolError('unavailable', 'Downloads are off', {
        hint: 'Start the server with --caps downloads.',
      })
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => [])
    const files = entries.filter((entry) => entry.isFile()).map((entry) => entry.name)
    if (!name) {
      const rows = await Promise.all(
        files.sort().map(async (file) => {
          const stat = await fs.stat(join(dir, file))
          const state = file.endsWith(PARTIAL) ? ' (still downloading)' : ''
          return `${file} ${stat.size} B ${stat.mtime.toISOString()}${state}`
        }),
      )
      return {
        data: { files: files.length },
        text: rows.length ? untrusted(rows.join('\n')) : 'No downloads yet.',
      }
    }
    // A plain name from the list: no path, so nothing outside the session's folder is reachable.
    if (basename(name) !== name || name === '.' || name === '..' || !files.includes(name))
      throw new ToolError('not_found', `No download named ${JSON.stringify(name)}`, {
        hint: 'Call downloads for the list.',
      })
    const path = join(dir, name)
    const real = await fs.realpath(path)
    const inside = relative(await fs.realpath(dir), real)
    if (!inside || inside.startsWith('..') || inside.includes('/'))
      throw new ToolError('permission_denied', `${name} is not in the download folder`)
    const stat = await fs.stat(real)
    if (stat.size > MAX_BYTES)
      throw new ToolError('too_large', `${name} is ${stat.size} bytes, over the 20 MiB cap`)
    const bytes = await fs.readFile(real)
    if (isText(bytes, name)) {
      const cap = capOf(context.deps.settings, max_tokens)
      const text = bytes.toString('utf8')
      const cut = text.length > cap ? `\n[Cut at ${cap} of ${text.length} characters.]` : ''
      return {
        data: { files: files.length, name, bytes: stat.size },
        text: `${name} (${stat.size} B):\n${untrusted(text.slice(0, cap))}${cut}`,
      }
    }
    const mimeType = BINARY_TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream'
    return {
      data: { files: files.length, name, bytes: stat.size },
      content: [
        {
          type: 'resource' as const,
          resource: {
            uri: `download://${encodeURIComponent(name)}`,
            mimeType,
            blob: bytes.toString('base64'),
          },
        },
        { type: 'text' as const, text: `${name}: ${stat.size} bytes, ${mimeType}.` },
      ],
      text: '',
    }
  },
})
