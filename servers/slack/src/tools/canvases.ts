import { boundBytes, ToolError, z } from '@keel-mcp/core'
import { fileFor } from './files.js'
import {
  bounded,
  channelArgument,
  channelFor,
  defineTool,
  destructive,
  entry,
  read,
  shaped,
  write,
} from './shared.js'

const canvasArgument = z
  .string()
  .refine((value) => /^F[A-Z0-9]{2,}$/.test(value), 'must be a canvas id like F0123ABCD')
  .describe('Canvas id (F…)')
const markdown = bounded(1, 100_000).describe('Markdown')

/** A canvas's HTML as plain lines of text: tags dropped, block ends kept as line breaks. */
export function canvasText(html: string): string {
  return html
    .replace(/<(script|style)[\s\S]*?<\/\1>/gi, '')
    .replace(/<br\s*\/?>|<\/(p|div|h[1-6]|li|tr|pre|blockquote)>/gi, '\n')
    .replace(/<li[^>]*>/gi, '- ')
    .replace(/<[^>]+>/g, '')
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}

export const getCanvas = defineTool({
  name: 'get_canvas',
  title: 'Get canvas',
  description: 'The text of a canvas, within max_bytes.',
  input: () => ({
    canvas: canvasArgument,
    max_bytes: z.number().int().min(1).max(262_144).default(65_536).describe('Bytes'),
  }),
  output: () => ({ canvas: entry(), text: z.string(), truncated: z.boolean() }),
  annotations: read,
  toolset: 'canvases',
  async run({ canvas, max_bytes }, { deps, signal }) {
    const file = await fileFor(deps, canvas, 'read')
    if (file.filetype !== 'quip' && file.filetype !== 'canvas') {
      throw new ToolError('invalid_argument', `${canvas} is a file, not a canvas`, { hint: 'Use get_file.' })
    }
    const download = deps.bot().download
    if (!download || !file.url_private)
      throw new ToolError('unavailable', 'The canvas has no readable content')
    const { bytes, truncated } = await download(
      String(file.url_private),
      // Bounded by the operator's answer cap (--max-answer-tokens, 4 bytes a token).
      boundBytes(max_bytes, 65_536),
      signal,
    )
    const text = canvasText(new TextDecoder().decode(bytes))
    return shaped(
      { canvas: { id: file.id, title: file.title, link: file.permalink }, text, truncated },
      { untrusted: true },
    )
  },
})

export const createCanvas = defineTool({
  name: 'create_canvas',
  title: 'Create canvas',
  description: 'A new canvas from Markdown, optionally in a channel.',
  input: () => ({
    title: bounded(1, 250).describe('Title'),
    markdown,
    channel: channelArgument.optional().describe('Channel'),
  }),
  output: () => ({ canvas: z.string() }),
  annotations: write,
  toolset: 'canvases',
  async run({ title, markdown: content, channel }, { deps, signal }) {
    if (!channel && deps.policy.writeAllow) {
      throw new ToolError(
        'invalid_argument',
        'Give a channel: the server writes only to its --write-channels',
      )
    }
    const found = channel ? await channelFor(deps, channel, 'write', signal) : undefined
    const response = await deps.bot().apiCall('canvases.create', {
      title,
      document_content: { type: 'markdown', markdown: content },
      ...(found ? { channel_id: found.id } : {}),
    })
    return shaped({ canvas: String(response.canvas_id) })
  },
})

export const editCanvas = defineTool({
  name: 'edit_canvas',
  title: 'Edit canvas',
  description: 'Append, prepend or replace a canvas’s Markdown.',
  input: () => ({
    canvas: canvasArgument,
    markdown,
    operation: z
      .enum(['insert_at_end', 'insert_at_start', 'replace'])
      .default('insert_at_end')
      .describe('Operation'),
  }),
  output: () => ({ canvas: z.string() }),
  annotations: destructive,
  toolset: 'canvases',
  async run({ canvas, markdown: content, operation }, { deps }) {
    await fileFor(deps, canvas, 'write')
    await deps.bot().apiCall('canvases.edit', {
      canvas_id: canvas,
      changes: [{ operation, document_content: { type: 'markdown', markdown: content } }],
    })
    return shaped({ canvas })
  },
})
