import { z } from '@keel-mcp/core'
import { defineTool, github, list, read, repo, result, signalOf } from './shared.js'

const MAX_TREE_ENTRIES = 5000

export const getRepositoryTree = defineTool({
  name: 'get_repository_tree',
  title: 'Repo tree',
  description: 'Paths of a repo tree at a ref, recursive, filterable by prefix.',
  toolset: 'git',
  input: {
    repo,
    ref: z.string().optional().describe('Branch, tag or SHA (default branch)'),
    path: z.string().default('').describe('Only under this path'),
    recursive: z.boolean().default(true).describe('Recursive'),
    max_entries: z.number().int().min(1).max(MAX_TREE_ENTRIES).default(1000).describe('Max entries'),
  },
  output: { sha: z.string(), entries: list(), total: z.number().int(), truncated: z.boolean() },
  annotations: read,
  async run({ repo: { owner, repo }, ref, path, recursive, max_entries }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const tree_sha =
      ref ?? (await octokit.rest.repos.get({ owner, repo, ...signalOf(signal) })).data.default_branch
    const prefix = path.replace(/^\/+|\/+$/g, '')
    const { data } = await octokit.rest.git.getTree({
      owner,
      repo,
      tree_sha: prefix ? `${tree_sha}:${prefix}` : tree_sha,
      ...(recursive ? { recursive: 'true' } : {}),
      ...signalOf(signal),
    })
    const all = data.tree.map((item) => ({
      path: prefix ? `${prefix}/${item.path}` : (item.path ?? ''),
      type: item.type ?? 'blob',
      ...(item.size === undefined ? {} : { size: item.size }),
    }))
    const entries = all.slice(0, max_entries)
    const notices: string[] = []
    if (all.length > entries.length)
      notices.push(`Truncated: ${entries.length} of ${all.length} entries; narrow with path.`)
    if (data.truncated) notices.push('GitHub truncated this tree (too large): list subdirectories with path.')
    return result(
      { sha: data.sha, entries, total: all.length, truncated: data.truncated || all.length > entries.length },
      notices.length ? { notice: notices.join(' ') } : {},
    )
  },
})
