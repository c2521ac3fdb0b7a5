import { ToolError, z } from '@keel-mcp/core'
import { channelRefusal, type SlackRecord, timeOf } from '../lib/slack.js'
import {
  channelArgument,
  channelFor,
  cursorArgument,
  defineTool,
  destructive,
  list,
  nextCursor,
  read,
  shaped,
  tsArgument,
  write,
} from './shared.js'
import { safeText } from './writes.js'

/** Unix seconds from an ISO date or a number of seconds. */
function postAt(value: string): number {
  const seconds = /^\d{9,11}$/.test(value) ? Number(value) : Date.parse(value) / 1000
  if (!Number.isFinite(seconds)) throw new ToolError('invalid_argument', `post_at: not a date: ${value}`)
  const now = Date.now() / 1000
  // Slack's own bounds: in the future, at most 120 days ahead.
  if (seconds <= now) throw new ToolError('invalid_argument', 'post_at must be in the future')
  if (seconds > now + 120 * 86_400)
    throw new ToolError('invalid_argument', 'post_at is more than 120 days ahead')
  return Math.floor(seconds)
}

export const scheduleMessage = defineTool({
  name: 'schedule_message',
  title: 'Schedule message',
  description: 'Post at post_at (ISO time, ≤120 days ahead).',
  input: () => ({
    channel: channelArgument,
    text: z.string().min(1).max(40_000).describe('mrkdwn'),
    post_at: z.string().describe('Post at'),
    thread_ts: tsArgument.optional().describe('Thread'),
  }),
  output: () => ({ id: z.string(), time: z.string() }),
  annotations: write,
  toolset: 'scheduled',
  async run({ channel, text, post_at, thread_ts }, { deps, signal }) {
    const when = postAt(post_at)
    const found = await channelFor(deps, channel, 'write', signal)
    const response = await deps.bot().apiCall('chat.scheduleMessage', {
      channel: found.id,
      // The same rules as post_message: broadcasts escaped unless the operator allowed them.
      ...safeText(text, deps.allowBroadcast),
      post_at: when,
      ...(thread_ts ? { thread_ts } : {}),
    })
    return shaped({
      id: String(response.scheduled_message_id),
      time: new Date(when * 1000).toISOString(),
    })
  },
})

export const listScheduledMessages = defineTool({
  name: 'list_scheduled_messages',
  title: 'List scheduled messages',
  description: "The bot's messages scheduled and not sent yet.",
  input: () => ({ channel: channelArgument.optional().describe('Channel'), cursor: cursorArgument }),
  output: () => ({ messages: list(), next_cursor: nextCursor }),
  annotations: read,
  toolset: 'scheduled',
  async run({ channel, cursor }, { deps, signal }) {
    const found = channel ? await channelFor(deps, channel, 'read', signal) : undefined
    const response = await deps.bot().apiCall('chat.scheduledMessages.list', {
      limit: 100,
      ...(found ? { channel: found.id } : {}),
      ...(cursor ? { cursor } : {}),
    })
    const messages: Array<Record<string, unknown>> = []
    for (const message of (response.scheduled_messages ?? []) as SlackRecord[]) {
      const where = await deps.directory.channel(String(message.channel_id)).catch(() => undefined)
      if (!where || channelRefusal(where, deps.policy, 'read')) continue
      messages.push({
        id: message.id,
        channel: message.channel_id,
        time: timeOf(String(message.post_at)),
        text: message.text,
      })
    }
    const next = response.response_metadata?.next_cursor || undefined
    return shaped({ messages, next_cursor: next ?? null }, { next, untrusted: true })
  },
})

export const deleteScheduledMessage = defineTool({
  name: 'delete_scheduled_message',
  title: 'Delete scheduled message',
  description: 'Cancel a scheduled message.',
  input: () => ({
    channel: channelArgument,
    id: z
      .string()
      .refine((value) => /^Q[A-Z0-9]{2,}$/.test(value), 'must be a scheduled message id like Q0123')
      .describe('Q… id'),
  }),
  output: () => ({ deleted: z.boolean() }),
  annotations: destructive,
  toolset: 'scheduled',
  async run({ channel, id }, { deps, signal }) {
    const found = await channelFor(deps, channel, 'write', signal)
    await deps.bot().apiCall('chat.deleteScheduledMessage', { channel: found.id, scheduled_message_id: id })
    return shaped({ deleted: true })
  },
})
