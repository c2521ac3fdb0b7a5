import { boundBytes, ToolError, z } from '@keel-mcp/core'
import { sendUpload } from '../lib/files.js'
import { escapeBroadcasts, type SlackRecord, timeOf } from '../lib/slack.js'
import { readUploadFile } from '../lib/upload-source.js'
import {
  bounded,
  channelArgument,
  channelFor,
  defineTool,
  entry,
  fileAllowed,
  list,
  read,
  type SlackDeps,
  shaped,
  write,
} from './shared.js'

const fileArgument = z
  .string()
  .refine((value) => /^F[A-Z0-9]{2,}$/.test(value), 'must be a file id like F0123ABCD')
  .describe('File id (F…)')

/** Types whose bytes are text the model can read. */
const textTypes = new Set([
  'text',
  'csv',
  'tsv',
  'markdown',
  'json',
  'yaml',
  'xml',
  'html',
  'javascript',
  'typescript',
  'python',
  'shell',
  'sql',
  'diff',
  'post',
  'log',
])
const isText = (file: SlackRecord) =>
  String(file.mimetype ?? '').startsWith('text/') ||
  textTypes.has(String(file.filetype ?? '')) ||
  file.mode === 'snippet'

/** A file as the model reads it: no private URLs (they need the token), the permalink instead. */
export function compactFile(file: SlackRecord): Record<string, unknown> {
  return {
    id: file.id,
    name: file.name,
    ...(file.title && file.title !== file.name ? { title: file.title } : {}),
    type: file.filetype,
    size: file.size,
    ...(file.created ? { time: timeOf(String(file.created)) } : {}),
    ...(file.user ? { user: file.user } : {}),
    ...(file.permalink ? { link: file.permalink } : {}),
  }
}

/** files.info, refused when the file is not shared where the server may read (or write). */
export async function fileFor(deps: SlackDeps, id: string, access: 'read' | 'write'): Promise<SlackRecord> {
  const file = (await deps.bot().apiCall('files.info', { file: id, count: 0 })).file ?? {}
  if (!(await fileAllowed(deps, file, access))) {
    throw new ToolError(
      'permission_denied',
      `${id} is not shared in a channel the server may ${access === 'read' ? 'read' : 'write to'}`,
    )
  }
  return file
}

export const listFiles = defineTool({
  name: 'list_files',
  title: 'List files',
  description: 'Files in readable channels, newest first; get_file reads one.',
  input: () => ({
    channel: channelArgument.optional().describe('Channel'),
    user: z.string().optional().describe('User'),
    page: z.number().int().min(1).max(100).default(1).describe('Page'),
  }),
  output: () => ({ files: list(), more: z.boolean() }),
  annotations: read,
  toolset: 'files',
  async run({ channel, user, page }, { deps, signal }) {
    const found = channel ? await channelFor(deps, channel, 'read', signal) : undefined
    const response = await deps.bot().apiCall('files.list', {
      count: 50,
      page,
      ...(found ? { channel: found.id } : {}),
      ...(user ? { user } : {}),
    })
    const files: Array<Record<string, unknown>> = []
    for (const file of (response.files ?? []) as SlackRecord[]) {
      // Files from channels the server may not read are dropped, whatever files.list returns.
      if (await fileAllowed(deps, file, 'read')) files.push(compactFile(file))
    }
    const paging = response.paging ?? {}
    const more = typeof paging.pages === 'number' && page < paging.pages
    return {
      data: { files, more },
      text:
        JSON.stringify({ files, more }) + (more ? `\nMore available: call again with page ${page + 1}.` : ''),
    }
  },
})

export const getFile = defineTool({
  name: 'get_file',
  title: 'Get file',
  description: 'A file: text content within max_bytes, else metadata and link.',
  input: () => ({
    file: fileArgument,
    max_bytes: z.number().int().min(1).max(262_144).default(32_768).describe('Bytes'),
  }),
  output: () => ({ file: entry(), content: z.string().optional(), truncated: z.boolean().optional() }),
  annotations: read,
  toolset: 'files',
  async run({ file: id, max_bytes }, { deps, signal }) {
    const file = await fileFor(deps, id, 'read')
    const meta = compactFile(file)
    if (!isText(file) || !file.url_private) return shaped({ file: meta })
    const download = deps.bot().download
    if (!download) return shaped({ file: meta })
    const { bytes, truncated } = await download(
      String(file.url_private),
      // Bounded by the operator's answer cap (--max-answer-tokens, 4 bytes a token).
      boundBytes(max_bytes, 32_768),
      signal,
    )
    const content = new TextDecoder('utf-8', { fatal: false }).decode(bytes)
    return shaped({ file: meta, content, truncated }, { untrusted: true })
  },
})

/** Largest upload, bytes: Slack allows 1 GB; a model has no business sending more than this. */
export const MAX_UPLOAD_BYTES = 50 * 1024 * 1024

export const uploadFile = defineTool({
  name: 'upload_file',
  title: 'Upload file',
  description: 'Share a file from the upload directory into a channel.',
  input: () => ({
    channel: channelArgument,
    path: bounded(1, 1000).describe('Relative path'),
    title: bounded(1, 250).optional().describe('Title'),
    comment: bounded(1, 4000).optional().describe('Comment'),
  }),
  output: () => ({ file: z.string(), channel: z.string() }),
  annotations: write,
  toolset: 'files',
  async run({ channel, path, title, comment }, { deps, signal }) {
    if (!deps.uploadDir) {
      throw new ToolError('unavailable', 'Uploads are off: the server was started without --upload-dir')
    }
    const found = await channelFor(deps, channel, 'write', signal)
    // Opened once, component by component, never through a link (upload-source.ts).
    const { bytes, name } = await readUploadFile(deps.uploadDir, path, MAX_UPLOAD_BYTES)
    const ticket = await deps
      .bot()
      .apiCall('files.getUploadURLExternal', { filename: name, length: bytes.length })
    await sendUpload(String(ticket.upload_url), deps.apiUrl, bytes, signal)
    await deps.bot().apiCall('files.completeUploadExternal', {
      files: JSON.stringify([{ id: ticket.file_id, title: title ?? name }]),
      channel_id: found.id,
      ...(comment ? { initial_comment: deps.allowBroadcast ? comment : escapeBroadcasts(comment) } : {}),
    })
    return shaped({ file: String(ticket.file_id), channel: found.id })
  },
})
