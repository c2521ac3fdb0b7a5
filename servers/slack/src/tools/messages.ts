import { budgetOutput, openBudget, ToolError, z } from '@keel-mcp/core'
import { parsePermalink, type SlackRecord } from '../lib/slack.js'
import {
  bounded,
  budgetArgument,
  channelArgument,
  channelFor,
  compactMessages,
  cursorArgument,
  defineTool,
  entry,
  limitArgument,
  list,
  nextCursor,
  read,
  type SlackDeps,
  shaped,
  shapedWithin,
  tsArgument,
} from './shared.js'

const timeArgument = (what: string) =>
  z
    .string()
    .refine(
      (value) => /^\d{9,11}(\.\d{1,6})?$|^\d{4}-\d{2}-\d{2}/.test(value),
      'must be a Slack ts or an ISO date',
    )
    .optional()
    .describe(what)

/** A Slack ts from a ts or an ISO date. */
function toTs(value: string | undefined): string | undefined {
  if (value === undefined) return undefined
  if (/^\d{9,11}(\.\d{1,6})?$/.test(value)) return value
  const ms = Date.parse(value)
  if (!Number.isFinite(ms)) throw new ToolError('invalid_argument', `Not a date: ${value}`)
  return (ms / 1000).toFixed(6)
}

export const getChannelHistory = defineTool({
  name: 'get_channel_history',
  title: 'Channel history',
  description:
    'Recent messages of a channel, newest first, or those between oldest and latest (ts or ISO date). Thread starters show reply counts; get_thread_replies reads a thread.',
  input: () => ({
    channel: channelArgument,
    limit: limitArgument(50, 200),
    oldest: timeArgument('From (ts or ISO date)'),
    latest: timeArgument('Until (ts or ISO date)'),
    cursor: cursorArgument,
    max_tokens: budgetArgument,
  }),
  output: () => ({
    channel: z.string(),
    channel_name: z.string(),
    messages: list(),
    next_cursor: nextCursor,
    ...budgetOutput,
  }),
  annotations: read,
  async run(args, { deps, signal }) {
    const { channel, limit, oldest, latest } = args
    // A cut page continues from a budget cursor: Slack's cursor of this page and the messages shown.
    const budget = openBudget('get_channel_history', args, { upstream: true })
    const cursor = budget.start.upstream
    const found = await channelFor(deps, channel, 'read', signal)
    const from = toTs(oldest)
    const until = toTs(latest)
    const response = await deps.bot().apiCall('conversations.history', {
      channel: found.id,
      limit,
      ...(from ? { oldest: from } : {}),
      ...(until ? { latest: until } : {}),
      ...(from || until ? { inclusive: true } : {}),
      ...(cursor ? { cursor } : {}),
    })
    const next = response.has_more ? response.response_metadata?.next_cursor || undefined : undefined
    const messages = await compactMessages(deps, response.messages ?? [])
    return shapedWithin(
      budget,
      'messages',
      { channel: found.id, channel_name: found.name, messages, next_cursor: next ?? null },
      { untrusted: true, ...(next ? { next } : {}) },
    )
  },
})

export const getThreadReplies = defineTool({
  name: 'get_thread_replies',
  title: 'Thread replies',
  description: 'A thread: its first message and the replies, oldest first.',
  input: () => ({
    channel: channelArgument,
    thread_ts: tsArgument.describe('ts of the thread’s first message'),
    limit: limitArgument(100, 200),
    cursor: cursorArgument,
    max_tokens: budgetArgument,
  }),
  output: () => ({
    channel: z.string(),
    thread_ts: z.string(),
    messages: list(),
    next_cursor: nextCursor,
    ...budgetOutput,
  }),
  annotations: read,
  async run(args, { deps, signal }) {
    const { channel, thread_ts, limit } = args
    const budget = openBudget('get_thread_replies', args, { upstream: true })
    const cursor = budget.start.upstream
    const found = await channelFor(deps, channel, 'read', signal)
    const response = await deps.bot().apiCall('conversations.replies', {
      channel: found.id,
      ts: thread_ts,
      limit,
      ...(cursor ? { cursor } : {}),
    })
    const next = response.has_more ? response.response_metadata?.next_cursor || undefined : undefined
    const messages = await compactMessages(deps, response.messages ?? [])
    return shapedWithin(
      budget,
      'messages',
      { channel: found.id, thread_ts, messages, next_cursor: next ?? null },
      { untrusted: true, ...(next ? { next } : {}) },
    )
  },
})

export const getMessage = defineTool({
  name: 'get_message',
  title: 'Message by link',
  description: 'One message by permalink URL, with its thread replies.',
  input: () => ({
    permalink: bounded(1, 500)
      .refine((value) => URL.canParse(value), 'must be a URL')
      .describe('Message link'),
  }),
  output: () => ({ channel: z.string(), channel_name: z.string(), message: entry() }),
  annotations: read,
  async run({ permalink }, { deps, signal }) {
    const parsed = parsePermalink(permalink)
    if (!parsed) {
      throw new ToolError('invalid_argument', 'Not a Slack message link', {
        hint: 'Copy it with "Copy link" on the message: …/archives/<channel>/p<digits>.',
      })
    }
    const found = await channelFor(deps, parsed.channel, 'read', signal)
    const response = parsed.threadTs
      ? await deps.bot().apiCall('conversations.replies', {
          channel: found.id,
          ts: parsed.threadTs,
          latest: parsed.ts,
          oldest: parsed.ts,
          inclusive: true,
          limit: 1,
        })
      : await deps.bot().apiCall('conversations.history', {
          channel: found.id,
          latest: parsed.ts,
          oldest: parsed.ts,
          inclusive: true,
          limit: 1,
        })
    const message = (response.messages ?? []).find((candidate: SlackRecord) => candidate.ts === parsed.ts)
    if (!message) throw new ToolError('not_found', 'No such message (deleted, or the bot cannot see it)')
    const [compact] = await compactMessages(deps, [message])
    return shaped(
      { channel: found.id, channel_name: found.name, message: compact ?? {} },
      { untrusted: true },
    )
  },
})

const dateArgument = z
  .string()
  .refine((value) => /^\d{4}-\d{2}-\d{2}$/.test(value), 'must be a date like 2024-01-31')
  .optional()
  .describe('YYYY-MM-DD')

/** Search modifiers Slack understands, from the filter arguments (a channel is checked against the policy first). */
async function searchModifiers(
  deps: SlackDeps,
  filters: {
    in?: string | undefined
    from?: string | undefined
    after?: string | undefined
    before?: string | undefined
    has?: string | undefined
  },
  signal: AbortSignal,
): Promise<string[]> {
  const modifiers: string[] = []
  if (filters.in) {
    const channel = await channelFor(deps, filters.in, 'read', signal)
    modifiers.push(channel.isDm ? `in:<#${channel.id}>` : `in:#${channel.name}`)
  }
  if (filters.from) {
    const from = filters.from.trim()
    if (/^[UW][A-Z0-9]{2,}$/.test(from)) modifiers.push(`from:<@${from}>`)
    else if (/^@?[\w.-]{1,80}$/.test(from)) modifiers.push(`from:@${from.replace(/^@/, '')}`)
    else throw new ToolError('invalid_argument', 'from must be a user id (U…) or an @handle')
  }
  if (filters.after) modifiers.push(`after:${filters.after}`)
  if (filters.before) modifiers.push(`before:${filters.before}`)
  if (filters.has === 'thread') modifiers.push('is:thread')
  else if (filters.has) modifiers.push(`has:${filters.has}`)
  return modifiers
}

export const searchMessages = defineTool({
  name: 'search_messages',
  title: 'Search messages',
  description: 'Search messages (Slack query syntax, or the filters). Newest first, paged.',
  input: () => ({
    query: bounded(1, 500).describe('Words, "phrase"'),
    in: channelArgument.optional().describe('Channel'),
    from: z.string().optional().describe('User'),
    after: dateArgument,
    before: dateArgument,
    has: z.enum(['link', 'pin', 'thread']).optional().describe('Has'),
    count: limitArgument(20, 100),
    page: z.number().int().min(1).max(100).default(1).describe('Page'),
    cursor: cursorArgument,
    max_tokens: budgetArgument,
  }),
  output: () => ({
    total: z.number(),
    page: z.number(),
    messages: list(),
    more: z.boolean(),
    ...budgetOutput,
  }),
  annotations: read,
  async run(args, { deps, signal }) {
    const { query, count, page, cursor: _cursor, max_tokens: _budget, ...filters } = args
    const budget = openBudget('search_messages', args)
    const client = deps.user()
    if (!client) throw new ToolError('unavailable', 'Search needs SLACK_USER_TOKEN')
    const full = [query, ...(await searchModifiers(deps, filters, signal))].join(' ')
    const response = await client.apiCall('search.messages', { query: full, count, page, sort: 'timestamp' })
    const matches = (response.messages?.matches ?? []) as Array<SlackRecord>
    const policyChecked: Array<SlackRecord> = []
    for (const match of matches) {
      const channelId = match.channel?.id
      // Results from channels the server may not read are dropped, whatever search returns; a hit
      // that does not say its channel cannot be judged, so it is dropped too (fail closed).
      if (typeof channelId !== 'string' || !channelId) continue
      try {
        await channelFor(deps, channelId, 'read', signal)
        policyChecked.push(match)
      } catch (error) {
        if (signal.aborted) throw error
      }
    }
    const compact = await compactMessages(deps, policyChecked)
    const results = compact.map((message, index) => ({
      ...message,
      channel: policyChecked[index]?.channel?.id,
      channel_name: policyChecked[index]?.channel?.name,
      permalink: policyChecked[index]?.permalink,
    }))
    const paging = response.messages?.paging ?? {}
    const more = typeof paging.pages === 'number' && page < paging.pages
    const data = { total: Number(response.messages?.total ?? results.length), page, messages: results, more }
    const answer = shapedWithin(budget, 'messages', data, { untrusted: true })
    if ('budget' in answer.data) return answer
    return {
      data: answer.data,
      text: answer.text + (more ? `\nMore available: call again with page ${page + 1}.` : ''),
    }
  },
})
