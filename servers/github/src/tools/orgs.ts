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
  query,
  read,
  signalOf,
} from './shared.js'

export const searchOrgs = defineTool({
  name: 'search_orgs',
  title: 'Search orgs',
  description: 'Search organisations ("location:berlin").',
  toolset: 'orgs',
  input: { query: query.describe('Query'), page, per_page: perPage },
  output: { total: z.number().int(), orgs: list(), ...more },
  annotations: read,
  async run({ query, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.search.users({
      q: `${query} type:org`,
      page,
      per_page,
      ...signalOf(signal),
    })
    return listed(
      {
        total: response.data.total_count,
        orgs: response.data.items.map((org) => ({ login: org.login, url: org.html_url })),
        ...pageInfo(response.headers),
      },
      { page },
    )
  },
})

export const getOrganization = defineTool({
  name: 'get_organization',
  title: 'Get org',
  description: 'One organisation: name, description, counts.',
  toolset: 'orgs',
  input: { org: z.string().min(1).describe('Org') },
  output: { org: z.looseObject({ login: z.string() }) },
  annotations: read,
  async run({ org }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.orgs.get({ org, ...signalOf(signal) })
    return listed(
      {
        org: {
          login: data.login,
          name: data.name ? clean(data.name) : null,
          description: cap(clean(data.description), 500),
          publicRepos: data.public_repos,
          url: data.html_url,
        },
      },
      { untrusted: true },
    )
  },
})
