import { boundBytes, budgetOutput, openBudget, z } from '@keel-mcp/core'
import { clean, cleanRendered, sliceFile } from '../lib/index.js'
import {
  budgetInput,
  cap,
  defineTool,
  entry,
  github,
  list,
  listed,
  listedWithin,
  login,
  more,
  page,
  pageInfo,
  perPage,
  query,
  read,
  repo,
  result,
  signalOf,
} from './shared.js'

const toolset = 'repos'

export const searchRepositories = defineTool({
  name: 'search_repositories',
  title: 'Search repos',
  description: 'Search repositories ("mcp language:go").',
  toolset,
  input: { query: query.describe('Query'), page, per_page: perPage, ...budgetInput },
  output: { total: z.number().int(), repositories: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const { query, page, per_page } = args
    const budget = openBudget('search_repositories', args)
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.search.repos({ q: query, page, per_page, ...signalOf(signal) })
    return listedWithin(
      budget,
      'repositories',
      {
        total: response.data.total_count,
        repositories: response.data.items.map((entry) => ({
          fullName: entry.full_name,
          description: cap(clean(entry.description), 300),
          private: entry.private,
          stars: entry.stargazers_count,
          language: entry.language ?? null,
          updatedAt: entry.updated_at,
          url: entry.html_url,
        })),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})

export const getRepository = defineTool({
  name: 'get_repository',
  title: 'Get repo',
  description: 'Repo facts: default branch, visibility, your permissions.',
  toolset,
  input: { repo },
  output: { repository: entry() },
  annotations: read,
  async run({ repo: { owner, repo } }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.repos.get({ owner, repo, ...signalOf(signal) })
    return listed(
      {
        repository: {
          fullName: data.full_name,
          description: cap(clean(data.description), 500),
          private: data.private,
          fork: data.fork,
          archived: data.archived,
          defaultBranch: data.default_branch,
          language: data.language ?? null,
          stars: data.stargazers_count,
          forks: data.forks_count,
          openIssues: data.open_issues_count,
          topics: data.topics ?? [],
          pushedAt: data.pushed_at,
          permissions: data.permissions ?? null,
          url: data.html_url,
        },
      },
      { untrusted: true },
    )
  },
})

/** What the contents API lists of one directory, at most. */
const MAX_DIRECTORY_ENTRIES = 1000
/** What GitHub's commit answer lists of its files, at most. */
const MAX_COMMIT_FILES = 300
const DEFAULT_FILE_BYTES = 64 * 1024
const MAX_FILE_BYTES = 1024 * 1024

export const getFileContents = defineTool({
  name: 'get_file_contents',
  title: 'Get file or directory',
  description: 'Read a file (byte ranges) or list a directory, at a ref.',
  toolset,
  input: {
    repo,
    path: z.string().default('').describe('Path ("": root)'),
    ref: z.string().optional().describe('Branch, tag or SHA'),
    offset: z.number().int().min(0).default(0).describe('From nextOffset'),
    max_bytes: z.number().int().min(1).max(MAX_FILE_BYTES).default(DEFAULT_FILE_BYTES).describe('Max bytes'),
  },
  output: {
    type: z.string(),
    sha: z.string().optional(),
    content: z.string().optional(),
    entries: list().optional(),
    nextOffset: z.number().optional(),
  },
  annotations: read,
  async run({ repo: { owner, repo }, path, ref, offset, max_bytes }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const cleanPath = path.replace(/^\/+|\/+$/g, '')
    const { data } = await octokit.rest.repos.getContent({
      owner,
      repo,
      path: cleanPath,
      ...(ref ? { ref } : {}),
      ...signalOf(signal),
    })
    if (Array.isArray(data)) {
      return result(
        {
          type: 'dir',
          entries: data.map((entry) => ({ name: entry.name, type: entry.type, size: entry.size })),
        },
        data.length >= MAX_DIRECTORY_ENTRIES
          ? {
              notice: `More may exist: GitHub lists at most ${MAX_DIRECTORY_ENTRIES} entries of a directory; search_code or a subdirectory narrows it.`,
            }
          : {},
      )
    }
    if (data.type !== 'file') {
      const target =
        'target' in data ? data.target : 'submodule_git_url' in data ? data.submodule_git_url : undefined
      return result({ type: data.type, sha: data.sha, ...(target ? { content: String(target) } : {}) })
    }
    let base64 = 'content' in data && typeof data.content === 'string' ? data.content : ''
    // Files over 1 MB come without content from the contents API; the blob API serves up to 100 MB.
    if (!base64 && data.size > 0) {
      const blob = await octokit.rest.git.getBlob({ owner, repo, file_sha: data.sha, ...signalOf(signal) })
      base64 = blob.data.content
    }
    const bytes = Buffer.from(base64, 'base64')
    // max_bytes is bounded by the operator's answer cap (--max-answer-tokens, 4 bytes a token).
    const slice = sliceFile(bytes, data.path, offset, boundBytes(max_bytes, DEFAULT_FILE_BYTES))
    const notices: string[] = []
    if (slice.binary) notices.push(`Binary file (${bytes.length} bytes): content not shown.`)
    else notices.push(`${bytes.length} bytes.`)
    if (slice.nextOffset !== undefined) notices.push(`Truncated: continue with offset ${slice.nextOffset}.`)
    if (slice.sanitized) notices.push('Hidden characters or invisible markup were removed.')
    return result(
      {
        type: slice.binary ? 'binary' : 'file',
        sha: data.sha,
        content: slice.content,
        ...(slice.nextOffset === undefined ? {} : { nextOffset: slice.nextOffset }),
      },
      { untrusted: true, ...(notices.length ? { notice: notices.join(' ') } : {}) },
    )
  },
})

export const listBranches = defineTool({
  name: 'list_branches',
  title: 'List branches',
  description: 'Branches with head SHA and protection.',
  toolset,
  input: { repo, page, per_page: perPage },
  output: { branches: list(), ...more },
  annotations: read,
  async run({ repo: { owner, repo }, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.repos.listBranches({
      owner,
      repo,
      page,
      per_page,
      ...signalOf(signal),
    })
    return listed(
      {
        branches: response.data.map((branch) => ({
          name: branch.name,
          sha: branch.commit.sha,
          protected: branch.protected,
        })),
        ...pageInfo(response.headers),
      },
      { page },
    )
  },
})

const commitLine = (entry: {
  sha: string
  html_url: string
  commit: { message: string; author: { name?: string; date?: string } | null }
  author: { login?: string } | null
}) => ({
  sha: entry.sha,
  message: cap(clean(entry.commit.message), 2000),
  author: login(entry.author) ?? entry.commit.author?.name ?? null,
  date: entry.commit.author?.date ?? null,
  url: entry.html_url,
})

export const listCommits = defineTool({
  name: 'list_commits',
  title: 'List commits',
  description: 'Commits, newest first.',
  toolset,
  input: {
    repo,
    sha: z.string().optional().describe('Branch, tag or SHA'),
    path: z.string().optional().describe('Touching path'),
    author: z.string().optional().describe('Login or email'),
    page,
    per_page: perPage,
    ...budgetInput,
  },
  output: { commits: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const {
      repo: { owner, repo },
      sha,
      path,
      author,
      page,
      per_page,
    } = args
    const budget = openBudget('list_commits', args)
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.repos.listCommits({
      owner,
      repo,
      page,
      per_page,
      ...(sha ? { sha } : {}),
      ...(path ? { path } : {}),
      ...(author ? { author } : {}),
      ...signalOf(signal),
    })
    return listedWithin(
      budget,
      'commits',
      { commits: response.data.map(commitLine), ...pageInfo(response.headers) },
      { untrusted: true, page },
    )
  },
})

export const getCommit = defineTool({
  name: 'get_commit',
  title: 'Get commit',
  description: 'One commit with files and capped diff.',
  toolset,
  input: {
    repo,
    sha: z.string().describe('SHA, branch or tag'),
    max_diff_bytes: z.number().int().min(0).max(1_000_000).default(30_000).describe('0: no diff'),
  },
  output: {
    commit: entry(),
    files: list(),
    diffTruncated: z.boolean(),
  },
  annotations: read,
  async run({ repo: { owner, repo }, sha, max_diff_bytes }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.repos.getCommit({ owner, repo, ref: sha, ...signalOf(signal) })
    let budget = max_diff_bytes
    let diffTruncated = false
    const files = (data.files ?? []).map((file) => {
      const patch = file.patch ?? ''
      const fits = Buffer.byteLength(patch) <= budget
      if (fits) budget -= Buffer.byteLength(patch)
      else if (patch) diffTruncated = true
      return {
        path: file.filename,
        status: file.status,
        additions: file.additions,
        deletions: file.deletions,
        ...(fits && patch ? { patch: clean(patch) } : {}),
      }
    })
    return listed(
      {
        commit: {
          ...commitLine(data),
          stats: data.stats ?? null,
          parents: data.parents.map((parent) => parent.sha),
        },
        files,
        diffTruncated,
      },
      {
        untrusted: true,
        ...(diffTruncated || files.length >= MAX_COMMIT_FILES
          ? {
              notice: [
                diffTruncated
                  ? 'Some patches were left out: raise max_diff_bytes or use get_file_contents.'
                  : '',
                files.length >= MAX_COMMIT_FILES
                  ? `More may exist: GitHub lists at most ${MAX_COMMIT_FILES} files of a commit.`
                  : '',
              ]
                .filter(Boolean)
                .join(' '),
            }
          : {}),
      },
    )
  },
})

export const searchCode = defineTool({
  name: 'search_code',
  title: 'Search code',
  description: 'Search code ("foo repo:o/r"); returns paths for get_file_contents.',
  toolset,
  input: { query: query.describe('Query'), page, per_page: perPage, ...budgetInput },
  output: { total: z.number().int(), matches: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const { query, page, per_page } = args
    const budget = openBudget('search_code', args)
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.search.code({ q: query, page, per_page, ...signalOf(signal) })
    return listedWithin(
      budget,
      'matches',
      {
        total: response.data.total_count,
        matches: response.data.items.map((entry) => ({
          repository: entry.repository.full_name,
          path: entry.path,
          sha: entry.sha,
          url: entry.html_url,
        })),
        ...pageInfo(response.headers),
      },
      { page },
    )
  },
})

export const listTags = defineTool({
  name: 'list_tags',
  title: 'List tags',
  description: 'Tags with SHAs.',
  toolset,
  input: { repo, page, per_page: perPage },
  output: { tags: list(), ...more },
  annotations: read,
  async run({ repo: { owner, repo }, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.repos.listTags({ owner, repo, page, per_page, ...signalOf(signal) })
    return listed(
      {
        tags: response.data.map((tag) => ({ name: tag.name, sha: tag.commit.sha })),
        ...pageInfo(response.headers),
      },
      { page },
    )
  },
})

export const listReleases = defineTool({
  name: 'list_releases',
  title: 'List releases',
  description: 'Releases with notes.',
  toolset,
  input: { repo, page, per_page: perPage, ...budgetInput },
  output: { releases: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const {
      repo: { owner, repo },
      page,
      per_page,
    } = args
    const budget = openBudget('list_releases', args)
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.repos.listReleases({
      owner,
      repo,
      page,
      per_page,
      ...signalOf(signal),
    })
    return listedWithin(
      budget,
      'releases',
      {
        releases: response.data.map((release) => ({
          tag: release.tag_name,
          name: release.name ?? null,
          draft: release.draft,
          prerelease: release.prerelease,
          publishedAt: release.published_at,
          notes: cap(cleanRendered(release.body), 1000),
          url: release.html_url,
        })),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})
