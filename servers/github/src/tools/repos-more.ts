import { budgetOutput, openBudget, ToolError, z } from '@keel-mcp/core'
import { clean, cleanRendered } from '../lib/index.js'
import { confirmDestructive } from './confirm.js'
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
  releaseOf,
  remove,
  repo,
  result,
  signalOf,
  written,
} from './shared.js'

const toolset = 'repos'

export const deleteFile = defineTool({
  name: 'delete_file',
  title: 'Delete file',
  description: 'Delete one file as a commit.',
  toolset,
  input: {
    repo,
    path: z.string().min(1).describe('File path'),
    message: z.string().min(1).describe('Commit message'),
    branch: z.string().optional().describe('Branch'),
    sha: z.string().optional().describe('Blob sha (default: current)'),
  },
  output: { commit: z.string(), path: z.string() },
  annotations: remove,
  async run({ repo: { owner, repo }, path, message, branch, sha }, { deps, auth, signal, client }) {
    const { octokit } = await github(deps, auth)
    const file = path.replace(/^\/+/, '')
    let blob = sha
    if (!blob) {
      const { data } = await octokit.rest.repos.getContent({
        owner,
        repo,
        path: file,
        ...(branch ? { ref: branch } : {}),
        ...signalOf(signal),
      })
      if (Array.isArray(data) || data.type !== 'file') {
        throw new ToolError('invalid_argument', `${file} is not a file`)
      }
      blob = data.sha
    }
    await confirmDestructive(client, `Delete ${file} from ${owner}/${repo}${branch ? ` (${branch})` : ''}?`)
    const { data } = await octokit.rest.repos.deleteFile({
      owner,
      repo,
      path: file,
      message,
      sha: blob,
      ...(branch ? { branch } : {}),
      ...signalOf(signal),
    })
    return written({ commit: data.commit.sha ?? '', path: file })
  },
})

export const getLatestRelease = defineTool({
  name: 'get_latest_release',
  title: 'Latest release',
  description: 'The latest published release.',
  toolset,
  input: { repo },
  output: { release: entry() },
  annotations: read,
  async run({ repo: { owner, repo } }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.repos.getLatestRelease({ owner, repo, ...signalOf(signal) })
    return result({ release: releaseOf(data, 10_000) }, { untrusted: true })
  },
})

export const getReleaseByTag = defineTool({
  name: 'get_release_by_tag',
  title: 'Release by tag',
  description: 'One release by its tag.',
  toolset,
  input: { repo, tag: z.string().min(1).describe('Tag') },
  output: { release: entry() },
  annotations: read,
  async run({ repo: { owner, repo }, tag }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.repos.getReleaseByTag({ owner, repo, tag, ...signalOf(signal) })
    return result({ release: releaseOf(data, 10_000) }, { untrusted: true })
  },
})

export const getTag = defineTool({
  name: 'get_tag',
  title: 'Get tag',
  description: 'A tag: target commit, and tagger and message if annotated.',
  toolset,
  input: { repo, tag: z.string().min(1).describe('Tag') },
  output: { tag: entry() },
  annotations: read,
  async run({ repo: { owner, repo }, tag }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data: ref } = await octokit.rest.git.getRef({
      owner,
      repo,
      ref: `tags/${tag}`,
      ...signalOf(signal),
    })
    if (ref.object.type !== 'tag') {
      return result({ tag: { name: tag, annotated: false, sha: ref.object.sha, type: ref.object.type } })
    }
    const { data } = await octokit.rest.git.getTag({
      owner,
      repo,
      tag_sha: ref.object.sha,
      ...signalOf(signal),
    })
    return result(
      {
        tag: {
          name: tag,
          annotated: true,
          sha: data.object.sha,
          type: data.object.type,
          tagger: data.tagger ? clean(data.tagger.name) : null,
          date: data.tagger?.date ?? null,
          message: cap(cleanRendered(data.message), 5000),
          verified: data.verification?.verified ?? false,
        },
      },
      { untrusted: true },
    )
  },
})

export const listCollaborators = defineTool({
  name: 'list_collaborators',
  title: 'List collaborators',
  description: 'Who can access a repo, with role. Needs push access.',
  toolset,
  input: {
    repo,
    affiliation: z.enum(['outside', 'direct', 'all']).default('all').describe('Affiliation'),
    page,
    per_page: perPage,
  },
  output: { collaborators: list(), ...more },
  annotations: read,
  async run({ repo: { owner, repo }, affiliation, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.repos.listCollaborators({
      owner,
      repo,
      affiliation,
      page,
      per_page,
      ...signalOf(signal),
    })
    return listed(
      {
        collaborators: response.data.map((user) => ({
          login: user.login,
          role: user.role_name ?? null,
          url: user.html_url,
        })),
        ...pageInfo(response.headers),
      },
      { page },
    )
  },
})

export const searchCommits = defineTool({
  name: 'search_commits',
  title: 'Search commits',
  description: 'Search commits ("fix repo:o/r author:x").',
  toolset,
  input: { query: query.describe('Query'), page, per_page: perPage, ...budgetInput },
  output: { total: z.number().int(), commits: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const { query, page, per_page } = args
    const budget = openBudget('search_commits', args)
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.search.commits({ q: query, page, per_page, ...signalOf(signal) })
    return listedWithin(
      budget,
      'commits',
      {
        total: response.data.total_count,
        commits: response.data.items.map((item) => ({
          repository: item.repository.full_name,
          sha: item.sha,
          message: cap(clean(item.commit.message), 2000),
          author: login(item.author) ?? item.commit.author?.name ?? null,
          date: item.commit.author?.date ?? null,
          url: item.html_url,
        })),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})
