import { z } from '@keel-mcp/core'
import { defineTool, github, read, result, signalOf } from './shared.js'

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
