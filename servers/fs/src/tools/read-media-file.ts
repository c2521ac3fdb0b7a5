import { pathToFileURL } from 'node:url'
import { type ContentBlock, z } from '@keel-mcp/core'
import { readMediaFile } from '../lib/index.js'
import { defineTool, formatBytes, guardOf, limits, pathArgument } from './shared.js'

export const readMediaFileTool = defineTool({
  name: 'read_media_file',
  title: 'Read media file',
  description: `Image or audio (up to ${formatBytes(limits.mediaBytes)}) as media; other files as a resource.`,
  input: { path: pathArgument },
  output: { mimeType: z.string(), bytes: z.number().int() },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run({ path }, context) {
    const guard = await guardOf(context)
    const file = await guard.resolveSafe(path)
    const media = await readMediaFile(file, { maxBytes: limits.mediaBytes, signal: context.signal })
    const data = media.data.toString('base64')
    const kind = media.mimeType.split('/')[0]
    const block: ContentBlock =
      kind === 'image' || kind === 'audio'
        ? { type: kind, data, mimeType: media.mimeType }
        : {
            type: 'resource',
            resource: { uri: pathToFileURL(file.path).href, mimeType: media.mimeType, blob: data },
          }
    return { data: { mimeType: media.mimeType, bytes: media.data.length }, content: [block] }
  },
})
