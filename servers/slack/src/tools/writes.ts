import { ToolError, z } from '@keel-mcp/core'
import { escapeBroadcasts, type SlackRecord } from '../lib/slack.js'
import {
  channelArgument,
  channelFor,
  defineTool,
  destructive,
  type SlackDeps,
  shaped,
  tsArgument,
  write,
} from './shared.js'

const messageText = z.string().min(1).max(40_000).describe('Message text (Slack mrkdwn)')

/**
 * No link previews, no parsing of names into mentions, and no broadcast unless the operator
 * started the server with --allow-broadcast: who may notify a whole channel is never the model's
 * decision, so it is not a tool argument.
 */
export function safeText(value: string, allowBroadcast: boolean) {
  return {
    text: allowBroadcast ? value : escapeBroadcasts(value),
    parse: 'none',
    link_names: false,
    unfurl_links: false,
    unfurl_media: false,
  }
}

/** Only the bot's own messages may be edited or deleted: checked before Slack is asked. */
async function assertOwn(deps: SlackDeps, channel: string, ts: string): Promise<void> {
  const [self, history] = await Promise.all([
    deps.self(),
    deps
      .bot()
      .apiCall('conversations.history', { channel, latest: ts, oldest: ts, inclusive: true, limit: 1 }),
  ])
  const message = (history.messages ?? []).find((candidate: SlackRecord) => candidate.ts === ts)
  if (!message) throw new ToolError('not_found', `No message ${ts} in that channel`)
  const own = message.user === self.userId || (self.botId !== undefined && message.bot_id === self.botId)
  if (!own) throw new ToolError('permission_denied', 'Only messages this bot posted can be edited or deleted')
}

export const postMessage = defineTool({
  name: 'post_message',
  title: 'Post a message',
  description:
    'Post to a channel the server allows writing to. No link previews; @channel/@here-style broadcasts are escaped unless the server allows them.',
  input: () => ({ channel: channelArgument, text: messageText }),
  output: () => ({ channel: z.string(), ts: z.string() }),
  annotations: write,
  toolset: 'writes',
  async run({ channel, text: body }, { deps, signal }) {
    const found = await channelFor(deps, channel, 'write', signal)
    const response = await deps
      .bot()
      .apiCall('chat.postMessage', { channel: found.id, ...safeText(body, deps.allowBroadcast) })
    return shaped({ channel: found.id, ts: String(response.ts) })
  },
})

export const replyToThread = defineTool({
  name: 'reply_to_thread',
  title: 'Reply in a thread',
  description: 'Reply in a thread (thread_ts: the first message’s ts). Same rules as post_message.',
  input: () => ({
    channel: channelArgument,
    thread_ts: tsArgument.describe('ts of the thread’s first message'),
    text: messageText,
  }),
  output: () => ({ channel: z.string(), ts: z.string(), thread_ts: z.string() }),
  annotations: write,
  toolset: 'writes',
  async run({ channel, thread_ts, text: body }, { deps, signal }) {
    const found = await channelFor(deps, channel, 'write', signal)
    const response = await deps
      .bot()
      .apiCall('chat.postMessage', { channel: found.id, thread_ts, ...safeText(body, deps.allowBroadcast) })
    return shaped({ channel: found.id, ts: String(response.ts), thread_ts })
  },
})

export const addReaction = defineTool({
  name: 'add_reaction',
  title: 'Add a reaction',
  description: 'React to a message with an emoji name (thumbsup, eyes).',
  input: () => ({
    channel: channelArgument,
    ts: tsArgument,
    name: z
      .string()
      .regex(/^:?[a-z0-9_+'-]{1,100}:?$/, 'must be an emoji name')
      .describe('Emoji name'),
  }),
  output: () => ({ channel: z.string(), ts: z.string(), reaction: z.string() }),
  annotations: { ...write, idempotentHint: true },
  toolset: 'writes',
  async run({ channel, ts, name }, { deps, signal }) {
    const found = await channelFor(deps, channel, 'write', signal)
    await deps
      .bot()
      .apiCall('reactions.add', { channel: found.id, timestamp: ts, name: name.replace(/:/g, '') })
    return shaped({ channel: found.id, ts, reaction: name.replace(/:/g, '') })
  },
})

export const updateMessage = defineTool({
  name: 'update_message',
  title: 'Edit own message',
  description: 'Replace the text of a message this bot posted.',
  input: () => ({ channel: channelArgument, ts: tsArgument, text: messageText }),
  output: () => ({ channel: z.string(), ts: z.string(), updated: z.boolean() }),
  annotations: destructive,
  toolset: 'writes',
  async run({ channel, ts, text: body }, { deps, signal }) {
    const found = await channelFor(deps, channel, 'write', signal)
    await assertOwn(deps, found.id, ts)
    await deps.bot().apiCall('chat.update', { channel: found.id, ts, ...safeText(body, deps.allowBroadcast) })
    return shaped({ channel: found.id, ts, updated: true })
  },
})

export const deleteMessage = defineTool({
  name: 'delete_message',
  title: 'Delete own message',
  description: 'Delete a message this bot posted.',
  input: () => ({ channel: channelArgument, ts: tsArgument }),
  output: () => ({ channel: z.string(), ts: z.string(), deleted: z.boolean() }),
  annotations: destructive,
  toolset: 'writes',
  async run({ channel, ts }, { deps, signal }) {
    const found = await channelFor(deps, channel, 'write', signal)
    await assertOwn(deps, found.id, ts)
    await deps.bot().apiCall('chat.delete', { channel: found.id, ts })
    return shaped({ channel: found.id, ts, deleted: true })
  },
})
