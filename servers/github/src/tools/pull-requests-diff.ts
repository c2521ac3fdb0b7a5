import { boundBytes, type ContentBlock, ToolError, z } from '@keel-mcp/core'
import { clean, type DiffFile, pageDiff, parseDiff } from '../lib/index.js'
import { defineTool, github, list, number, read, repo, signalOf, UNTRUSTED } from './shared.js'

const DEFAULT_BYTES = 30_000
const MAX_BYTES = 500_000
/** A file whose diff is larger than this (or than the page) is linked, never inlined. */
const LARGE_FILE_BYTES = 64 * 1024

/** `repo://owner/repo/pull/N/diff/path`: one file's whole diff, served by the resource template. */
export function fileDiffUri(owner: string, name: string, pull: number, path: string): string {
  return `repo://${owner}/${name}/pull/${pull}/diff/${path.split('/').map(encodeURIComponent).join('/')}`
}

/** The PR's unified diff, fetched whole (GitHub has no ranges) and cleaned of hidden text. */
export async function fetchDiff(
  octokit: Awaited<ReturnType<typeof github>>['octokit'],
  where: { owner: string; repo: string },
  pull_number: number,
  signal: AbortSignal,
): Promise<DiffFile[]> {
  const response = await octokit.rest.pulls.get({
    ...where,
    pull_number,
    mediaType: { format: 'diff' },
    ...signalOf(signal),
  })
  return parseDiff(clean(String(response.data as unknown)))
}

/** A cursor names the head it was cut from: a page of another head would not fit the first. */
const cursorOf = (head: string, file: number, hunk: number) => `${head.slice(0, 12)}.${file}.${hunk}`

function readCursor(cursor: string, head: string) {
  const match = /^([0-9a-f]{1,40})\.(\d+)\.(\d+)$/.exec(cursor)
  if (!match) throw new ToolError('invalid_argument', 'cursor: not a cursor this tool returned')
  if (!head.startsWith(match[1] as string)) {
    throw new ToolError(
      'conflict',
      'The PR head moved since this cursor was made: its pages no longer line up',
      {
        hint: 'Start again without cursor.',
      },
    )
  }
  return { file: Number(match[2]), hunk: Number(match[3]) }
}

export const getPullRequestDiff = defineTool({
  name: 'get_pull_request_diff',
  title: 'Get PR diff',
  description: 'Raw unified diff of a PR, paged by file and hunk; says what it left out.',
  toolset: 'pull_requests',
  input: {
    repo,
    pull_number: number.describe('Pull number'),
    file: z.string().optional().describe('Only this path'),
    cursor: z.string().optional().describe('From nextCursor'),
    max_bytes: z.number().int().min(1000).max(MAX_BYTES).default(DEFAULT_BYTES).describe('Page budget'),
  },
  output: {
    shown: z.array(z.string()),
    partial: z.looseObject({}).optional(),
    linked: list(),
    remaining: z.number().int(),
    nextCursor: z.string().optional(),
  },
  annotations: read,
  async run({ repo: { owner, repo }, pull_number, file, cursor, max_bytes: asked }, { deps, auth, signal }) {
    // Bounded by the operator's answer cap (--max-answer-tokens, 4 bytes a token).
    const max_bytes = boundBytes(asked, DEFAULT_BYTES)
    const { octokit } = await github(deps, auth)
    const [{ data: pull }, all] = await Promise.all([
      octokit.rest.pulls.get({ owner, repo, pull_number, ...signalOf(signal) }),
      fetchDiff(octokit, { owner, repo }, pull_number, signal),
    ])
    const head = pull.head.sha
    const files = file ? all.filter((entry) => entry.path === file.replace(/^\/+/, '')) : all
    if (file && !files.length) {
      throw new ToolError('not_found', `${file} is not changed by PR #${pull_number}`, {
        hint: 'Call without file (or get_pull_request_files) for the changed paths.',
      })
    }
    const start = cursor ? readCursor(cursor, head) : { file: 0, hunk: 0 }
    // A very large file (a lockfile, generated data) is linked, not inlined, unless it was asked
    // for by name: then it is paged by hunk like any other.
    const largeBytes = file ? Number.POSITIVE_INFINITY : Math.max(max_bytes, LARGE_FILE_BYTES)
    const page = pageDiff(files, start, { maxBytes: max_bytes, largeBytes })
    const nextCursor = page.next ? cursorOf(head, page.next.file, page.next.hunk) : undefined
    const linked = page.large.map((entry) => ({
      path: entry.path,
      bytes: entry.bytes,
      uri: fileDiffUri(owner, repo, pull_number, entry.path),
    }))
    const notices: string[] = []
    if (page.partial)
      notices.push(
        `${page.partial.path}: hunks ${page.partial.fromHunk + 1}–${page.partial.toHunk} of ${page.partial.hunks} shown.`,
      )
    if (linked.length)
      notices.push(
        `Not inlined (over ${Math.round(largeBytes / 1024)} KiB): ${linked.map((entry) => `${entry.path} (${entry.bytes} B)`).join(', ')}; read the linked resources or call with file=<path>.`,
      )
    if (nextCursor)
      notices.push(
        `Left out: ${page.remaining} more file(s)${page.partial ? ' and the rest of this one' : ''}; call again with cursor ${nextCursor}.`,
      )
    if (!files.length) notices.push('This PR changes no files.')
    const data = {
      shown: page.shown,
      ...(page.partial ? { partial: page.partial } : {}),
      linked,
      remaining: page.remaining,
      ...(nextCursor ? { nextCursor } : {}),
    }
    // The diff goes out as it is, not JSON-escaped: a diff in a JSON string costs a backslash per
    // quote and newline and is harder to read. The structured data carries what was left out.
    const text = [UNTRUSTED, page.text.replace(/\n$/, ''), ...(notices.length ? ['', ...notices] : [])].join(
      '\n',
    )
    const content: ContentBlock[] = [
      { type: 'text', text },
      ...linked.map(
        (entry): ContentBlock => ({
          type: 'resource_link',
          uri: entry.uri,
          name: entry.path,
          description: `Diff of ${entry.path} in PR #${pull_number} (${entry.bytes} bytes)`,
          mimeType: 'text/x-diff',
        }),
      ),
    ]
    return { data, text, content }
  },
})
