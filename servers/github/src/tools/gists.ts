import { ToolError, z } from '@keel-mcp/core'
import { clean } from '../lib/index.js'
import {
  cap,
  defineTool,
  entry,
  github,
  list,
  listed,
  login,
  more,
  overwrite,
  page,
  pageInfo,
  perPage,
  read,
  result,
  signalOf,
  write,
  written,
} from './shared.js'

const toolset = 'gists'
const gistId = z
  .string()
  .regex(/^[0-9a-f]{1,64}$/i, 'must be a gist id')
  .describe('Gist id')
const MAX_GIST_FILE_CHARS = 20_000

export const listGists = defineTool({
  name: 'list_gists',
  title: 'List gists',
  description: "Your gists, or a user's public gists.",
  toolset,
  input: {
    username: z.string().optional().describe('User (default: you)'),
    since: z.string().optional().describe('ISO time'),
    page,
    per_page: perPage,
  },
  output: { gists: list(), ...more },
  annotations: read,
  async run({ username, since, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const paging = { page, per_page, ...(since ? { since } : {}), ...signalOf(signal) }
    const response = username
      ? await octokit.rest.gists.listForUser({ username, ...paging })
      : await octokit.rest.gists.list(paging)
    return listed(
      {
        gists: response.data.map((gist) => ({
          id: gist.id,
          description: cap(clean(gist.description), 300),
          public: gist.public,
          files: Object.keys(gist.files).map((name) => clean(name)),
          owner: login(gist.owner),
          updatedAt: gist.updated_at,
          url: gist.html_url,
        })),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})

export const getGist = defineTool({
  name: 'get_gist',
  title: 'Get gist',
  description: 'One gist with its files (capped).',
  toolset,
  input: { gist_id: gistId },
  output: { gist: entry() },
  annotations: read,
  async run({ gist_id }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.gists.get({ gist_id, ...signalOf(signal) })
    const files = Object.values(data.files ?? {}).flatMap((file) =>
      file
        ? [
            {
              name: clean(file.filename),
              language: file.language ?? null,
              size: file.size ?? null,
              truncated: file.truncated === true || (file.content ?? '').length > MAX_GIST_FILE_CHARS,
              content: cap(clean(file.content), MAX_GIST_FILE_CHARS),
            },
          ]
        : [],
    )
    return result(
      {
        gist: {
          id: data.id,
          description: cap(clean(data.description), 1000),
          public: data.public,
          owner: login(data.owner),
          files,
          url: data.html_url,
        },
      },
      { untrusted: true },
    )
  },
})

/**
 * No silent truncation: gists answer with each file's stored size; a size other than the bytes
 * sent is an error naming the file, not a success.
 */
function checkGistSizes(
  sent: Record<string, string>,
  stored: Record<string, { size?: number } | null> | undefined,
  id: string,
) {
  const wrong = Object.entries(sent).flatMap(([name, content]) => {
    if (content === '') return []
    const bytes = Buffer.byteLength(content, 'utf8')
    const size = stored?.[name]?.size
    return size === bytes ? [] : [`${name}: ${bytes} bytes sent, ${size ?? 'none'} stored`]
  })
  if (wrong.length) {
    throw new ToolError(
      'conflict',
      `Gist ${id} was saved differently from what was sent: ${wrong.join('; ')}`,
      {
        hint: 'Read it back with get_gist and write the files again.',
      },
    )
  }
}

const files = z
  .record(z.string().min(1), z.string())
  .refine((value) => Object.keys(value).length > 0 && Object.keys(value).length <= 100, '1–100 files')
  .describe('File name → content')

export const createGist = defineTool({
  name: 'create_gist',
  title: 'Create gist',
  description: 'Create a gist (secret by default).',
  toolset,
  input: {
    files,
    description: z.string().optional().describe('Description'),
    public: z.boolean().default(false).describe('Public'),
  },
  output: { id: z.string(), url: z.string() },
  annotations: write,
  async run({ files, description, public: isPublic }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.gists.create({
      files: Object.fromEntries(Object.entries(files).map(([name, content]) => [name, { content }])),
      public: isPublic,
      ...(description === undefined ? {} : { description }),
      ...signalOf(signal),
    })
    checkGistSizes(files, data.files, data.id ?? '')
    return written({ id: data.id ?? '', url: data.html_url ?? '' })
  },
})

export const updateGist = defineTool({
  name: 'update_gist',
  title: 'Update gist',
  description: 'Replace the given files (empty content deletes one) or the description.',
  toolset,
  input: {
    gist_id: gistId,
    files: files.optional().describe('File name → content; "" deletes'),
    description: z.string().optional().describe('Description'),
  },
  output: { id: z.string(), url: z.string() },
  annotations: overwrite,
  async run({ gist_id, files, description }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.gists.update({
      gist_id,
      ...(files
        ? {
            files: Object.fromEntries(
              Object.entries(files).map(([name, content]) => [name, content === '' ? null : { content }]),
            ) as Record<string, { content: string }>,
          }
        : {}),
      ...(description === undefined ? {} : { description }),
      ...signalOf(signal),
    })
    if (files) checkGistSizes(files, data.files, gist_id)
    return written({ id: data.id ?? gist_id, url: data.html_url ?? '' })
  },
})
