import { z } from '@keel-mcp/core'
import { clean } from '../lib/index.js'
import {
  cap,
  defineTool,
  github,
  list,
  listed,
  more,
  page,
  pageInfo,
  perPage,
  read,
  repo,
  signalOf,
  write,
  written,
} from './shared.js'

const toolset = 'stargazers'

/** A starred repository; with the star+json media type it comes wrapped in `{ repo }`. */
interface Starred {
  full_name: string
  description: string | null
  stargazers_count?: number
  html_url: string
}

export const listStarredRepositories = defineTool({
  name: 'list_starred_repositories',
  title: 'Starred repos',
  description: 'Repos you (or a user) starred.',
  toolset,
  input: {
    username: z.string().optional().describe('User (default: you)'),
    sort: z.enum(['created', 'updated']).default('created').describe('Sort'),
    page,
    per_page: perPage,
  },
  output: { repositories: list(), ...more },
  annotations: read,
  async run({ username, sort, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const paging = { sort, page, per_page, ...signalOf(signal) }
    const response = username
      ? await octokit.rest.activity.listReposStarredByUser({ username, ...paging })
      : await octokit.rest.activity.listReposStarredByAuthenticatedUser(paging)
    return listed(
      {
        repositories: (response.data as Array<Starred | { repo: Starred }>).map((item) => {
          const repository = 'repo' in item ? item.repo : item
          return {
            fullName: String(repository.full_name),
            description: cap(clean(repository.description), 300),
            stars: repository.stargazers_count ?? null,
            url: String(repository.html_url),
          }
        }),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})

const starring = (star: boolean) =>
  defineTool({
    name: star ? 'star_repository' : 'unstar_repository',
    title: star ? 'Star repo' : 'Unstar repo',
    description: star ? 'Star a repo.' : 'Remove your star from a repo.',
    toolset,
    input: { repo },
    output: { repository: z.string(), starred: z.boolean() },
    annotations: { ...write, idempotentHint: true },
    async run({ repo: { owner, repo } }, { deps, auth, signal }) {
      const { octokit } = await github(deps, auth)
      const request = { owner, repo, ...signalOf(signal) }
      if (star) await octokit.rest.activity.starRepoForAuthenticatedUser(request)
      else await octokit.rest.activity.unstarRepoForAuthenticatedUser(request)
      return written({ repository: `${owner}/${repo}`, starred: star })
    },
  })

export const starRepository = starring(true)
export const unstarRepository = starring(false)
