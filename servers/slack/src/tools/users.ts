import { ToolError, z } from '@keel-mcp/core'
import { type SlackRecord, toUser } from '../lib/slack.js'
import {
  bounded,
  cursorArgument,
  defineTool,
  entry,
  limitArgument,
  list,
  nextCursor,
  read,
  shaped,
} from './shared.js'

const userArgument = z
  .string()
  .refine((value) => /^[UW][A-Z0-9]{2,}$/.test(value), 'must be a user id like U0123ABCD')
  .describe('User id (U…)')

export const listUsers = defineTool({
  name: 'list_users',
  title: 'List users',
  description: 'Workspace members: id, handle, real and display name. find_user finds one.',
  input: () => ({ limit: limitArgument(100, 200), cursor: cursorArgument }),
  output: () => ({ users: list(), next_cursor: nextCursor }),
  annotations: read,
  async run({ limit, cursor }, { deps }) {
    const response = await deps.bot().apiCall('users.list', { limit, ...(cursor ? { cursor } : {}) })
    const users = (response.members ?? []).map((raw: SlackRecord) => {
      const user = toUser(raw)
      deps.directory.rememberUser(user)
      return user
    })
    const next = response.response_metadata?.next_cursor || undefined
    return shaped({ users, next_cursor: next ?? null }, { next })
  },
})

export const getUserProfile = defineTool({
  name: 'get_user_profile',
  title: 'User profile',
  description: "One user's profile: names, title, time zone, status.",
  input: () => ({ user: userArgument }),
  output: () => ({ user: entry() }),
  annotations: read,
  async run({ user }, { deps }) {
    const [info, profile] = await Promise.all([
      deps.bot().apiCall('users.info', { user }),
      deps.bot().apiCall('users.profile.get', { user }),
    ])
    const entry = toUser(info.user ?? {})
    deps.directory.rememberUser(entry)
    const details = profile.profile ?? {}
    return shaped(
      {
        user: {
          ...entry,
          ...(details.title ? { title: details.title } : {}),
          ...(info.user?.tz ? { time_zone: info.user.tz } : {}),
          ...(details.status_text
            ? { status: `${details.status_emoji ?? ''} ${details.status_text}`.trim() }
            : {}),
        },
      },
      { untrusted: true },
    )
  },
})

export const findUser = defineTool({
  name: 'find_user',
  title: 'Find a user',
  description: 'The id of a user by @handle or display name (exact, case-insensitive).',
  input: () => ({ name: bounded(1, 81).describe('@name') }),
  output: () => ({ user: entry() }),
  annotations: read,
  async run({ name }, { deps, signal }) {
    const found = await deps.directory.findUser(name, signal)
    if (!found)
      throw new ToolError('not_found', `No user named ${name}`, {
        hint: deps.directory.scanned.users
          ? 'list_users shows who is there.'
          : 'Not among the users looked through so far (a large workspace is paged a part a call): call again to look further, or give an e-mail address.',
      })
    return shaped({ user: { ...found } })
  },
})
