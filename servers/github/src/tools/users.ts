import { z } from '@keel-mcp/core'
import {
  defineTool,
  github,
  list,
  listed,
  more,
  page,
  pageInfo,
  perPage,
  query,
  read,
  signalOf,
} from './shared.js'

export const searchUsers = defineTool({
  name: 'search_users',
  title: 'Search users',
  description: 'Search users and orgs.',
  toolset: 'users',
  input: { query: query.describe('Query'), page, per_page: perPage },
  output: { total: z.number().int(), users: list(), ...more },
  annotations: read,
  async run({ query, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.search.users({ q: query, page, per_page, ...signalOf(signal) })
    return listed(
      {
        total: response.data.total_count,
        users: response.data.items.map((user) => ({
          login: user.login,
          type: user.type,
          url: user.html_url,
        })),
        ...pageInfo(response.headers),
      },
      { page },
    )
  },
})
