import { z } from '@keel-mcp/core'
import { clean } from '../lib/index.js'
import {
  defineTool,
  github,
  list,
  listed,
  more,
  page,
  pageInfo,
  perPage,
  read,
  result,
  signalOf,
} from './shared.js'

export const getMe = defineTool({
  name: 'get_me',
  title: 'Get me',
  description: 'Your login and name: who "me" is.',
  toolset: 'context',
  input: {},
  output: { login: z.string(), name: z.string().nullable(), type: z.string(), url: z.string() },
  annotations: read,
  async run(_args, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.users.getAuthenticated(signalOf(signal))
    return result({ login: data.login, name: data.name ?? null, type: data.type, url: data.html_url })
  },
})

export const getTeams = defineTool({
  name: 'get_teams',
  title: 'Get teams',
  description: "Your teams, or an org's teams.",
  toolset: 'context',
  input: { org: z.string().optional().describe('Org (default: yours)'), page, per_page: perPage },
  output: { teams: list(), ...more },
  annotations: read,
  async run({ org, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const paging = { page, per_page, ...signalOf(signal) }
    const response = org
      ? await octokit.rest.teams.list({ org, ...paging })
      : await octokit.rest.teams.listForAuthenticatedUser(paging)
    return listed(
      {
        teams: response.data.map((team) => ({
          org: 'organization' in team ? team.organization.login : (org ?? null),
          slug: team.slug,
          name: clean(team.name),
          description: clean(team.description),
        })),
        ...pageInfo(response.headers),
      },
      { page },
    )
  },
})

export const getTeamMembers = defineTool({
  name: 'get_team_members',
  title: 'Team members',
  description: 'Members of an org team.',
  toolset: 'context',
  input: {
    org: z.string().min(1).describe('Org'),
    team_slug: z.string().min(1).describe('Team slug'),
    page,
    per_page: perPage,
  },
  output: { members: list(), ...more },
  annotations: read,
  async run({ org, team_slug, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.teams.listMembersInOrg({
      org,
      team_slug,
      page,
      per_page,
      ...signalOf(signal),
    })
    return listed(
      {
        members: response.data.map((user) => ({ login: user.login, url: user.html_url })),
        ...pageInfo(response.headers),
      },
      { page },
    )
  },
})
