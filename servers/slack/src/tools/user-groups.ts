import { z } from '@keel-mcp/core'
import type { SlackRecord } from '../lib/slack.js'
import { defineTool, list, read, shaped } from './shared.js'

export const listUserGroups = defineTool({
  name: 'list_user_groups',
  title: 'List user groups',
  description: 'User groups (@handle, name) with member ids and names.',
  input: () => ({ members: z.boolean().default(true).describe('Members') }),
  output: () => ({ groups: list() }),
  annotations: read,
  async run({ members }, { deps }) {
    const response = await deps
      .bot()
      .apiCall('usergroups.list', { include_users: members, include_count: true })
    const groups = (response.usergroups ?? []) as SlackRecord[]
    const ids = members ? groups.flatMap((group) => (group.users ?? []).map(String)) : []
    const names = await deps.directory.userNames(ids)
    return shaped({
      groups: groups.map((group) => ({
        id: group.id,
        handle: `@${group.handle}`,
        name: group.name,
        ...(group.description ? { description: group.description } : {}),
        count: group.user_count ?? group.users?.length,
        ...(members
          ? {
              members: (group.users ?? []).map((id: string) =>
                names.has(id) ? { id, name: names.get(id) } : { id },
              ),
            }
          : {}),
      })),
    })
  },
})
