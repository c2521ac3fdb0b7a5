import {
  type HandlerContext,
  type ResourceContents,
  type ResourceTemplateSpec,
  ToolError,
} from '@keel-mcp/core'
import { type Octokit, sliceFile } from './lib/index.js'
import { fetchDiff } from './tools/pull-requests-diff.js'
import type { GithubDeps } from './tools/shared.js'

// Repository contents as resources: `repo://owner/repo/…/contents/path` at the default branch, a
// branch, a tag, a commit or a PR's head, and one file's diff in a PR (what get_pull_request_diff
// links instead of inlining). The client picks them; completions offer owners, repositories,
// branches, tags and paths. Resources carry no per-request token: with --token-from-request they
// answer unauthenticated (see the README).

/** What a resource returns of one file at most. */
const MAX_RESOURCE_BYTES = 1024 * 1024

/** What the diff resource returns at most: under the client's 10 MiB message limit. */
const MAX_DIFF_BYTES = 8 * 1024 * 1024

type Variables = Record<string, string | string[]>
type Context = HandlerContext<GithubDeps>

const one = (value: string | string[] | undefined): string =>
  Array.isArray(value) ? (value[0] ?? '') : (value ?? '')

/** `{+path}` arrives still percent-encoded; `..` and empty segments never reach the API. */
function pathOf(variables: Variables): string {
  const raw = one(variables.path)
  let decoded: string
  try {
    decoded = decodeURIComponent(raw)
  } catch {
    throw new ToolError('invalid_argument', 'path: not valid percent-encoding')
  }
  // Decoded before splitting: an encoded slash must not hide a `..` segment.
  const segments = decoded.split('/').filter(Boolean)
  if (segments.some((segment) => segment === '.' || segment === '..')) {
    throw new ToolError('invalid_argument', 'path: "." and ".." segments are not allowed')
  }
  return segments.join('/')
}

async function octokitOf(context: Context): Promise<Octokit> {
  return (await context.deps.client(undefined)).octokit
}

async function contents(
  uri: URL,
  variables: Variables,
  ref: string | undefined,
  context: Context,
): Promise<ResourceContents[]> {
  const octokit = await octokitOf(context)
  const owner = one(variables.owner)
  const repo = one(variables.repo)
  const path = pathOf(variables)
  const { data } = await octokit.rest.repos.getContent({
    owner,
    repo,
    path,
    ...(ref ? { ref } : {}),
    request: { signal: context.signal },
  })
  if (Array.isArray(data)) {
    const listing = data.map((entry) => ({ name: entry.name, type: entry.type, size: entry.size }))
    return [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(listing) }]
  }
  if (data.type !== 'file') throw new ToolError('invalid_argument', `${path} is a ${data.type}, not a file`)
  let base64 = 'content' in data && typeof data.content === 'string' ? data.content : ''
  if (!base64 && data.size > 0) {
    if (data.size > MAX_RESOURCE_BYTES) {
      throw new ToolError('too_large', `${path} has ${data.size} bytes; resources serve files up to 1 MiB`, {
        hint: 'Read it in ranges with get_file_contents (offset, max_bytes).',
      })
    }
    base64 = (
      await octokit.rest.git.getBlob({ owner, repo, file_sha: data.sha, request: { signal: context.signal } })
    ).data.content
  }
  const bytes = Buffer.from(base64, 'base64')
  const slice = sliceFile(bytes, path, 0, MAX_RESOURCE_BYTES)
  if (slice.binary)
    return [{ uri: uri.href, mimeType: 'application/octet-stream', blob: base64.replace(/\s/g, '') }]
  return [{ uri: uri.href, mimeType: 'text/plain', text: slice.content }]
}

async function completeOwners(value: string, context: Context): Promise<string[]> {
  const octokit = await octokitOf(context)
  const { data } = await octokit.rest.repos.listForAuthenticatedUser({
    per_page: 100,
    sort: 'pushed',
    request: { signal: context.signal },
  })
  const owners = [...new Set(data.map((repository) => repository.owner.login))]
  return owners.filter((owner) => owner.toLowerCase().startsWith(value.toLowerCase()))
}

async function completeRepos(value: string, context: Context & { arguments: Record<string, string> }) {
  const owner = context.arguments.owner
  if (!owner) return []
  const octokit = await octokitOf(context)
  const { data } = await octokit.rest.search.repos({
    q: `${value} user:${owner} in:name`,
    per_page: 20,
    request: { signal: context.signal },
  })
  return data.items
    .map((repository) => repository.name)
    .filter((name) => name.toLowerCase().startsWith(value.toLowerCase()))
}

async function completeBranches(value: string, context: Context & { arguments: Record<string, string> }) {
  const { owner, repo } = context.arguments
  if (!owner || !repo) return []
  const octokit = await octokitOf(context)
  const { data } = await octokit.rest.repos.listBranches({
    owner,
    repo,
    per_page: 100,
    request: { signal: context.signal },
  })
  return data.map((branch) => branch.name).filter((name) => name.startsWith(value))
}

async function completeTags(value: string, context: Context & { arguments: Record<string, string> }) {
  const { owner, repo } = context.arguments
  if (!owner || !repo) return []
  const octokit = await octokitOf(context)
  const { data } = await octokit.rest.repos.listTags({
    owner,
    repo,
    per_page: 100,
    request: { signal: context.signal },
  })
  return data.map((tag) => tag.name).filter((name) => name.startsWith(value))
}

/** Entries of the directory the typed path is in, at the ref the other arguments name. */
async function completePaths(value: string, context: Context & { arguments: Record<string, string> }) {
  const { owner, repo, branch, tag, sha } = context.arguments
  if (!owner || !repo) return []
  const directory = value.includes('/') ? value.slice(0, value.lastIndexOf('/')) : ''
  const octokit = await octokitOf(context)
  const { data } = await octokit.rest.repos.getContent({
    owner,
    repo,
    path: directory,
    ...((branch ?? tag ?? sha) ? { ref: branch ?? tag ?? sha } : {}),
    request: { signal: context.signal },
  })
  if (!Array.isArray(data)) return []
  return data
    .map((entry) => (entry.type === 'dir' ? `${entry.path}/` : entry.path))
    .filter((path) => path.startsWith(value))
}

const base = { owner: completeOwners, repo: completeRepos }
const text = 'File or directory contents; directories as a JSON listing.'

export const resourceTemplates: ResourceTemplateSpec<GithubDeps>[] = [
  {
    name: 'repository-contents',
    title: 'Repository file (default branch)',
    uriTemplate: 'repo://{owner}/{repo}/contents/{+path}',
    description: text,
    complete: { ...base, path: completePaths },
    read: (uri, variables, context) => contents(uri, variables, undefined, context),
  },
  {
    name: 'branch-contents',
    title: 'Repository file at a branch',
    uriTemplate: 'repo://{owner}/{repo}/refs/heads/{branch}/contents/{+path}',
    description: text,
    complete: { ...base, branch: completeBranches, path: completePaths },
    read: (uri, variables, context) =>
      contents(uri, variables, `refs/heads/${one(variables.branch)}`, context),
  },
  {
    name: 'tag-contents',
    title: 'Repository file at a tag',
    uriTemplate: 'repo://{owner}/{repo}/refs/tags/{tag}/contents/{+path}',
    description: text,
    complete: { ...base, tag: completeTags, path: completePaths },
    read: (uri, variables, context) => contents(uri, variables, `refs/tags/${one(variables.tag)}`, context),
  },
  {
    name: 'commit-contents',
    title: 'Repository file at a commit',
    uriTemplate: 'repo://{owner}/{repo}/sha/{sha}/contents/{+path}',
    description: text,
    complete: { ...base, path: completePaths },
    read: (uri, variables, context) => contents(uri, variables, one(variables.sha), context),
  },
  {
    name: 'pull-request-head-contents',
    title: "Repository file at a PR's head",
    uriTemplate: 'repo://{owner}/{repo}/refs/pull/{number}/head/contents/{+path}',
    description: text,
    complete: { ...base, path: completePaths },
    read: (uri, variables, context) =>
      contents(uri, variables, `refs/pull/${one(variables.number)}/head`, context),
  },
  {
    name: 'pull-request-file-diff',
    title: 'One file of a PR diff',
    uriTemplate: 'repo://{owner}/{repo}/pull/{number}/diff/{+path}',
    description: "One file's whole unified diff in a PR (linked by get_pull_request_diff).",
    mimeType: 'text/x-diff',
    complete: { ...base },
    async read(uri, variables, context) {
      const pull = Number(one(variables.number))
      if (!Number.isInteger(pull) || pull < 1)
        throw new ToolError('invalid_argument', 'number: not a PR number')
      const path = pathOf(variables)
      const files = await fetchDiff(
        await octokitOf(context),
        { owner: one(variables.owner), repo: one(variables.repo) },
        pull,
        context.signal,
      )
      const file = files.find((entry) => entry.path === path)
      if (!file) throw new ToolError('not_found', `${path} is not changed by PR #${pull}`)
      if (file.bytes > MAX_DIFF_BYTES) {
        throw new ToolError(
          'too_large',
          `The diff of ${path} has ${file.bytes} bytes; resources serve up to 8 MiB`,
          {
            hint: 'Page it by hunk: get_pull_request_diff with file and cursor.',
          },
        )
      }
      return [{ uri: uri.href, mimeType: 'text/x-diff', text: file.header + file.hunks.join('') }]
    },
  },
]
