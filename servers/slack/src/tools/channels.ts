import { budgetOutput, openBudget, ToolError } from '@keel-mcp/core'
import { channelRefusal, toChannel } from '../lib/slack.js'
import {
  bounded,
  budgetArgument,
  channelArgument,
  channelFor,
  cursorArgument,
  defineTool,
  entry,
  limitArgument,
  list,
  nextCursor,
  read,
  shaped,
  shapedWithin,
} from './shared.js'

export const listChannels = defineTool({
  name: 'list_channels',
  title: 'List channels',
  description:
    'Channels the bot can see (public; private and DMs when the server allows), with ids, topics and member counts.',
  input: () => ({
    name: bounded(0, 80).optional().describe('Only names containing this'),
    limit: limitArgument(100, 200),
    cursor: cursorArgument,
    max_tokens: budgetArgument,
  }),
  output: () => ({ channels: list(), next_cursor: nextCursor, ...budgetOutput }),
  annotations: read,
  async run(args, { deps, signal }) {
    const { name, limit } = args
    const budget = openBudget('list_channels', args, { upstream: true })
    const cursor = budget.start.upstream
    const types = ['public_channel']
    if (deps.policy.includePrivate) types.push('private_channel')
    if (deps.policy.includeDms) types.push('im', 'mpim')
    const wanted = name?.replace(/^#/, '').toLowerCase()
    const channels: Array<Record<string, unknown>> = []
    let next: string | undefined = cursor
    // A name filter may empty whole pages: read on, within a bound, until enough matched.
    for (let page = 0; page < 10 && channels.length < limit; page++) {
      signal.throwIfAborted()
      const response = await deps.bot().apiCall('conversations.list', {
        types: types.join(','),
        exclude_archived: true,
        limit,
        ...(next ? { cursor: next } : {}),
      })
      for (const raw of response.channels ?? []) {
        const channel = toChannel(raw)
        deps.directory.rememberChannel(channel)
        if (channelRefusal(channel, deps.policy, 'read')) continue
        if (wanted && !channel.name.toLowerCase().includes(wanted)) continue
        channels.push({ ...channel })
      }
      next = response.response_metadata?.next_cursor || undefined
      if (!next || !wanted) break
    }
    // Whole pages only, so the cursor never skips a channel.
    return shapedWithin(budget, 'channels', { channels, next_cursor: next ?? null }, next ? { next } : {})
  },
})

export const getChannelInfo = defineTool({
  name: 'get_channel_info',
  title: 'Channel info',
  description: 'One channel by id or #name: name, privacy, topic, purpose, member count.',
  input: () => ({ channel: channelArgument }),
  output: () => ({ channel: entry() }),
  annotations: read,
  async run({ channel }, { deps, signal }) {
    const found = await channelFor(deps, channel, 'read', signal)
    const response = await deps
      .bot()
      .apiCall('conversations.info', { channel: found.id, include_num_members: true })
    const fresh = toChannel(response.channel ?? {})
    deps.directory.rememberChannel(fresh)
    return shaped({ channel: { ...fresh } })
  },
})

export const findChannel = defineTool({
  name: 'find_channel',
  title: 'Find a channel',
  description:
    'The id of a channel by #name (exact, case-insensitive). Use before tools that take a channel id.',
  input: () => ({ name: bounded(1, 81).describe('#name') }),
  output: () => ({ channel: entry() }),
  annotations: read,
  async run({ name }, { deps, signal }) {
    const found = await deps.directory.findChannel(name, signal)
    if (!found)
      throw new ToolError('not_found', `No channel named ${name}`, {
        hint: deps.directory.scanned.channels
          ? 'list_channels with a name filter shows near matches.'
          : 'Not among the channels looked through so far (a large workspace is paged a part a call): call again to look further.',
      })
    const refusal = channelRefusal(found, deps.policy, 'read')
    if (refusal) throw new ToolError('permission_denied', refusal)
    return shaped({ channel: { ...found } })
  },
})
