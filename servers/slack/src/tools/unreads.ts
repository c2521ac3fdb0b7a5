import { ToolError, z } from '@keel-mcp/core'
import { channelRefusal, type SlackApi, type SlackRecord, timeOf, toChannel } from '../lib/slack.js'
import {
  channelArgument,
  channelFor,
  cursorArgument,
  defineTool,
  list,
  nextCursor,
  read,
  type SlackDeps,
  shaped,
  write,
} from './shared.js'

/** Unread state belongs to a person: a bot token has none. */
function userClient(deps: SlackDeps, tool: string): SlackApi {
  const client = deps.user()
  if (!client) {
    throw new ToolError('unavailable', `${tool} needs a user token: a bot has no unread state of its own`, {
      hint: 'Start the server with SLACK_USER_TOKEN (xoxp-…) to read and mark unreads.',
    })
  }
  return client
}

/** Conversations checked a call at most (each costs a conversations.info). */
const PER_CALL = 50

export const listUnreads = defineTool({
  name: 'list_unreads',
  title: 'List unreads',
  // Threads are not listed: no documented Web API method lists a person's unread threads (Slack's own
  // Threads view uses an internal one). A thread's parent read with a user token carries last_read and
  // unread_count, but finding the threads would mean reading every channel's history.
  description:
    'Channels and DMs with unread messages, newest first, with counts (user token). Not threads: Slack has no API listing them.',
  input: () => ({ cursor: cursorArgument }),
  output: () => ({ conversations: list(), next_cursor: nextCursor }),
  annotations: read,
  toolset: 'unreads',
  async run({ cursor }, { deps, signal }) {
    const client = userClient(deps, 'list_unreads')
    const types = ['public_channel']
    if (deps.policy.includePrivate) types.push('private_channel')
    if (deps.policy.includeDms) types.push('im', 'mpim')
    const page = await client.apiCall('users.conversations', {
      types: types.join(','),
      exclude_archived: true,
      limit: PER_CALL,
      ...(cursor ? { cursor } : {}),
    })
    const unread: Array<{ entry: Record<string, unknown>; order: number }> = []
    for (const raw of (page.channels ?? []) as SlackRecord[]) {
      signal.throwIfAborted()
      const channel = toChannel(raw)
      deps.directory.rememberChannel(channel)
      if (channelRefusal(channel, deps.policy, 'read')) continue
      const info = (await client.apiCall('conversations.info', { channel: channel.id })).channel ?? {}
      const count = Number(info.unread_count_display ?? info.unread_count ?? 0)
      if (!count) continue
      const latest = info.latest?.ts as string | undefined
      unread.push({
        entry: {
          id: channel.id,
          ...(channel.isDm ? {} : { name: channel.name }),
          unread: count,
          last_read: info.last_read,
          ...(latest ? { latest, time: timeOf(latest) } : {}),
        },
        order: Number(latest ?? info.last_read ?? 0),
      })
    }
    const conversations = unread.sort((left, right) => right.order - left.order).map((item) => item.entry)
    const next = page.response_metadata?.next_cursor || undefined
    return shaped({ conversations, next_cursor: next ?? null }, { next })
  },
})

export const markRead = defineTool({
  name: 'mark_read',
  title: 'Mark read',
  description: 'Mark a channel read up to ts (default: latest; user token).',
  input: () => ({ channel: channelArgument, ts: z.string().optional().describe('Ts') }),
  output: () => ({ channel: z.string(), ts: z.string() }),
  annotations: { ...write, idempotentHint: true },
  toolset: 'unreads',
  async run({ channel, ts }, { deps, signal }) {
    const client = userClient(deps, 'mark_read')
    const found = await channelFor(deps, channel, 'read', signal)
    let upTo = ts
    if (upTo !== undefined && !/^\d{9,11}\.\d{1,6}$/.test(upTo))
      throw new ToolError('invalid_argument', 'ts must be a Slack ts like 1700000000.123456')
    if (upTo === undefined) {
      const latest = await client.apiCall('conversations.history', { channel: found.id, limit: 1 })
      upTo = latest.messages?.[0]?.ts
      if (!upTo) return shaped({ channel: found.id, ts: '' })
    }
    await client.apiCall('conversations.mark', { channel: found.id, ts: upTo })
    return shaped({ channel: found.id, ts: String(upTo) })
  },
})
