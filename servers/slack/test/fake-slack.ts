import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A loopback fake of the Slack Web API, answering as Slack documents it: `POST /api/<method>` with
 * a form or JSON body and the token as a bearer, `{ ok: true, … }` or `{ ok: false, error }`,
 * cursor pagination in `response_metadata.next_cursor`, and 429 with `Retry-After` when asked to.
 * The real `@slack/web-api` client talks to it through `slackApiUrl`.
 */
export const BOT_TOKEN = 'xoxb-fake-bot-token-1234567890-abcdefghij'
export const USER_TOKEN = 'xoxp-fake-user-token-0987654321-zyxwvutsrq'
export const BOT_USER = 'UBOT0001'
export const BOT_ID = 'BBOT0001'

export interface FakeChannel {
  id: string
  name: string
  is_private?: boolean
  is_im?: boolean
  is_archived?: boolean
  topic?: { value: string }
  num_members?: number
}

export interface FakeMessage {
  ts: string
  user?: string
  bot_id?: string
  text: string
  thread_ts?: string
  reply_count?: number
}

export interface Fault {
  method: string
  status?: number
  retryAfter?: number
  error?: string
  needed?: string
  body?: string
}

export interface FakeSlack {
  url: string
  calls: Array<{ method: string; token: string | undefined; args: Record<string, unknown> }>
  channels: FakeChannel[]
  messages: Map<string, FakeMessage[]>
  /** Queued one-shot answers: the next call of `method` gets this instead. */
  fail(fault: Fault): void
  close(): Promise<void>
}

const encode = (offset: number) => Buffer.from(`offset:${offset}`).toString('base64')
const decode = (cursor: unknown) => {
  const match = /^offset:(\d+)$/.exec(Buffer.from(String(cursor ?? ''), 'base64').toString())
  return match ? Number(match[1]) : cursor ? -1 : 0
}

async function readArgs(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  const body = Buffer.concat(chunks).toString()
  if ((request.headers['content-type'] ?? '').includes('json')) return body ? JSON.parse(body) : {}
  return Object.fromEntries(new URLSearchParams(body))
}

function page<T>(items: T[], args: Record<string, unknown>, fallback = 100) {
  const offset = decode(args.cursor)
  if (offset < 0) return undefined
  const limit = Math.min(Number(args.limit ?? fallback) || fallback, 1000)
  const slice = items.slice(offset, offset + limit)
  const next = offset + limit < items.length ? encode(offset + limit) : ''
  return { slice, next }
}

export async function startFakeSlack(
  options: { users?: number; channels?: number } = {},
): Promise<FakeSlack> {
  const userCount = options.users ?? 30
  const channelCount = options.channels ?? 5
  const users = Array.from({ length: userCount }, (_, index) => ({
    id: `U${String(index + 1).padStart(8, '0')}`,
    name: `user${index + 1}`,
    real_name: `User Number ${index + 1}`,
    profile: { display_name: `disp${index + 1}`, real_name: `User Number ${index + 1}`, title: 'Engineer' },
    tz: 'Europe/Berlin',
  }))
  users.push({
    id: BOT_USER,
    name: 'keelbot',
    real_name: 'Keel Bot',
    profile: { display_name: 'Keel Bot', real_name: 'Keel Bot', title: '' },
    tz: 'UTC',
  })
  const channels: FakeChannel[] = [
    { id: 'C0GENERAL', name: 'general', topic: { value: 'Company-wide' }, num_members: 30 },
    { id: 'C0RANDOM', name: 'random', num_members: 12 },
    { id: 'G0SECRET', name: 'secret-plans', is_private: true, num_members: 3 },
    { id: 'D0DIRECT', name: 'U00000001', is_im: true },
    { id: 'C0ARCHIVE', name: 'old-stuff', is_archived: true },
  ]
  for (let index = channels.length; index < channelCount; index++) {
    channels.push({ id: `C${String(index).padStart(8, '0')}`, name: `channel-${index}`, num_members: 2 })
  }
  const messages = new Map<string, FakeMessage[]>()
  const general: FakeMessage[] = Array.from({ length: 25 }, (_, index) => ({
    ts: `17000000${String(99 - index).padStart(2, '0')}.000100`,
    user: users[index % 3]?.id,
    text: `message ${25 - index} in general`,
  }))
  general[0] = { ...general[0], reply_count: 2, text: 'a thread starter' } as FakeMessage
  messages.set('C0GENERAL', general)
  messages.set('G0SECRET', [{ ts: '1700000001.000100', user: 'U00000002', text: 'secret plan' }])
  messages.set('D0DIRECT', [{ ts: '1700000002.000100', user: 'U00000001', text: 'a direct message' }])
  messages.set('C0RANDOM', [
    { ts: '1700000050.000100', user: BOT_USER, bot_id: BOT_ID, text: 'posted by the bot' },
    { ts: '1700000040.000100', user: 'U00000002', text: 'posted by a person' },
  ])
  const threadStart = general[0] as FakeMessage
  const replies: FakeMessage[] = [
    { ...threadStart, thread_ts: threadStart.ts },
    { ts: '1700000100.000200', user: 'U00000002', text: 'first reply', thread_ts: threadStart.ts },
    { ts: '1700000100.000300', user: 'U00000003', text: 'second reply', thread_ts: threadStart.ts },
  ]
  const faults: Fault[] = []
  const calls: FakeSlack['calls'] = []
  let posted = 0

  const channelOf = (id: unknown) => channels.find((channel) => channel.id === id)

  const handle = (method: string, args: Record<string, unknown>, token: string | undefined) => {
    if (token !== BOT_TOKEN && token !== USER_TOKEN)
      return { ok: false, error: token ? 'invalid_auth' : 'not_authed' }
    switch (method) {
      case 'auth.test':
        return { ok: true, user_id: BOT_USER, bot_id: BOT_ID, team_id: 'T0FAKE', user: 'keelbot' }
      case 'conversations.list': {
        const types = String(args.types ?? 'public_channel').split(',')
        const visible = channels
          .filter(
            (channel) =>
              (args.exclude_archived !== 'true' && args.exclude_archived !== true) || !channel.is_archived,
          )
          .filter((channel) =>
            channel.is_im
              ? types.includes('im')
              : channel.is_private
                ? types.includes('private_channel')
                : types.includes('public_channel'),
          )
        const result = page(visible, args)
        if (!result) return { ok: false, error: 'invalid_cursor' }
        return { ok: true, channels: result.slice, response_metadata: { next_cursor: result.next } }
      }
      case 'conversations.info': {
        const channel = channelOf(args.channel)
        return channel ? { ok: true, channel } : { ok: false, error: 'channel_not_found' }
      }
      case 'conversations.history': {
        if (!channelOf(args.channel)) return { ok: false, error: 'channel_not_found' }
        let list = messages.get(String(args.channel)) ?? []
        if (args.oldest) list = list.filter((message) => Number(message.ts) >= Number(args.oldest))
        if (args.latest) list = list.filter((message) => Number(message.ts) <= Number(args.latest))
        const result = page(list, args, 100)
        if (!result) return { ok: false, error: 'invalid_cursor' }
        return {
          ok: true,
          messages: result.slice,
          has_more: result.next !== '',
          response_metadata: { next_cursor: result.next },
        }
      }
      case 'conversations.replies': {
        if (!channelOf(args.channel)) return { ok: false, error: 'channel_not_found' }
        if (args.ts !== threadStart.ts) return { ok: false, error: 'thread_not_found' }
        let list = replies
        if (args.oldest) list = list.filter((message) => Number(message.ts) >= Number(args.oldest))
        if (args.latest) list = list.filter((message) => Number(message.ts) <= Number(args.latest))
        const result = page(list, args, 100)
        if (!result) return { ok: false, error: 'invalid_cursor' }
        return {
          ok: true,
          messages: result.slice,
          has_more: result.next !== '',
          response_metadata: { next_cursor: result.next },
        }
      }
      case 'users.list': {
        const result = page(users, args, 100)
        if (!result) return { ok: false, error: 'invalid_cursor' }
        return { ok: true, members: result.slice, response_metadata: { next_cursor: result.next } }
      }
      case 'users.info': {
        const user = users.find((candidate) => candidate.id === args.user)
        return user ? { ok: true, user } : { ok: false, error: 'user_not_found' }
      }
      case 'users.profile.get': {
        const user = users.find((candidate) => candidate.id === args.user)
        return user
          ? {
              ok: true,
              profile: { ...user.profile, status_text: 'In a meeting', status_emoji: ':calendar:' },
            }
          : { ok: false, error: 'user_not_found' }
      }
      case 'search.messages': {
        if (token !== USER_TOKEN) return { ok: false, error: 'not_allowed_token_type' }
        const query = String(args.query ?? '').toLowerCase()
        const matches: Array<Record<string, unknown>> = []
        for (const [channelId, list] of messages) {
          const channel = channelOf(channelId)
          for (const message of list) {
            if (message.text.toLowerCase().includes(query))
              matches.push({
                ...message,
                channel: { id: channelId, name: channel?.name },
                permalink: `https://fake.slack.com/archives/${channelId}/p${message.ts.replace('.', '')}`,
              })
          }
        }
        const count = Number(args.count ?? 20)
        const pageNumber = Number(args.page ?? 1)
        return {
          ok: true,
          messages: {
            total: matches.length,
            matches: matches.slice((pageNumber - 1) * count, pageNumber * count),
            paging: {
              count,
              total: matches.length,
              page: pageNumber,
              pages: Math.max(1, Math.ceil(matches.length / count)),
            },
          },
        }
      }
      case 'chat.postMessage': {
        const channel = channelOf(args.channel)
        if (!channel) return { ok: false, error: 'channel_not_found' }
        if (channel.is_archived) return { ok: false, error: 'is_archived' }
        const ts = `1800000000.${String(++posted).padStart(6, '0')}`
        const list = messages.get(channel.id) ?? []
        list.unshift({
          ts,
          user: BOT_USER,
          bot_id: BOT_ID,
          text: String(args.text),
          ...(args.thread_ts ? { thread_ts: String(args.thread_ts) } : {}),
        })
        messages.set(channel.id, list)
        return { ok: true, channel: channel.id, ts }
      }
      case 'chat.update':
      case 'chat.delete': {
        const list = messages.get(String(args.channel)) ?? []
        const index = list.findIndex((message) => message.ts === args.ts)
        if (index < 0) return { ok: false, error: 'message_not_found' }
        if (method === 'chat.delete') list.splice(index, 1)
        else (list[index] as FakeMessage).text = String(args.text)
        return { ok: true, channel: args.channel, ts: args.ts }
      }
      case 'reactions.add':
        return channelOf(args.channel) ? { ok: true } : { ok: false, error: 'channel_not_found' }
      default:
        return { ok: false, error: 'unknown_method' }
    }
  }

  const server: Server = createServer(async (request, response) => {
    const method = (request.url ?? '').replace(/^\/api\//, '').split('?')[0] ?? ''
    const args = await readArgs(request)
    const header = request.headers.authorization
    const token =
      typeof header === 'string' ? header.replace(/^Bearer /, '') : (args.token as string | undefined)
    calls.push({ method, token, args })
    const faultIndex = faults.findIndex((fault) => fault.method === method)
    if (faultIndex >= 0) {
      const fault = faults.splice(faultIndex, 1)[0] as Fault
      if (fault.status) {
        response.writeHead(fault.status, {
          'content-type': 'application/json',
          ...(fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {}),
        })
        response.end(
          fault.body ??
            JSON.stringify({ ok: false, error: fault.status === 429 ? 'ratelimited' : 'fatal_error' }),
        )
        return
      }
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(
        JSON.stringify({ ok: false, error: fault.error, ...(fault.needed ? { needed: fault.needed } : {}) }),
      )
      return
    }
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end(JSON.stringify(handle(method, args, token)))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/api/`,
    calls,
    channels,
    messages,
    fail: (fault) => {
      faults.push(fault)
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
