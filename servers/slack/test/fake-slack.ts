import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { type FeatureState, featureState, handleFeature, unreadFields } from './fake-features.js'
import { BOT_ID, BOT_USER, type FakeChannel, type FakeMessage, FakeWorkspace } from './fake-workspace.js'

/**
 * A loopback fake of the Slack Web API, answering as Slack documents it: `POST /api/<method>` with
 * a form or JSON body and the token as a bearer, `{ ok: true, … }` or `{ ok: false, error }`,
 * cursor pagination in `response_metadata.next_cursor`, and 429 with `Retry-After` when asked to.
 * The real `@slack/web-api` client talks to it through `slackApiUrl`.
 */
export const BOT_TOKEN = 'xoxb-fake-bot-token-1234567890-abcdefghij'
/** A second workspace's bot token (the fake answers it like the first). */
export const SECOND_BOT_TOKEN = 'xoxb-fake-second-workspace-5555555555-qwertyuiop'
export const USER_TOKEN = 'xoxp-fake-user-token-0987654321-zyxwvutsrq'
export { BOT_ID, BOT_USER, type FakeChannel, type FakeMessage, HUMAN_USER } from './fake-workspace.js'

export interface Fault {
  method: string
  status?: number
  retryAfter?: number
  error?: string
  needed?: string
  body?: string
  /** A `Location` header (with a 3xx `status`: a redirect). */
  location?: string
  /**
   * The connection closes without an answer once the request is read, as a kept connection that
   * Slack closed while the request was on its way (the request is recorded in `calls`).
   */
  drop?: boolean
}

export interface FakeSlack {
  url: string
  calls: Array<{ method: string; token: string | undefined; args: Record<string, unknown> }>
  channels: FakeChannel[]
  messages: Map<string, FakeMessage[]>
  workspace: FakeWorkspace
  features: FeatureState
  /** Requests to the file routes (downloads and uploads), with the token they carried. */
  fileRequests: Array<{ path: string; token: string | undefined }>
  /** The most Web API requests the fake was answering at one time. */
  readonly peakInFlight: number
  /** TCP connections the fake accepted, and how many of them are open now. */
  readonly connections: { opened: number; open: number }
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
  return pageOf(items.length, (index) => items[index] as T, args, fallback)
}

/** A page of a list known only by its length and an accessor: nothing past the page is built. */
function pageOf<T>(total: number, at: (index: number) => T, args: Record<string, unknown>, fallback = 100) {
  const offset = decode(args.cursor)
  if (offset < 0) return undefined
  const limit = Math.min(Number(args.limit ?? fallback) || fallback, 1000)
  const slice: T[] = []
  for (let index = offset; index < Math.min(total, offset + limit); index++) slice.push(at(index))
  const next = offset + limit < total ? encode(offset + limit) : ''
  return { slice, next }
}

/**
 * Starts the fake. `users` and `channels` size the workspace (generated lazily: 250,000 users cost
 * nothing until paged); `memberOf` adds channels the bot is a member of. `latencyMs` delays every
 * Web API answer, as a real network does: requests made at once are answered at once, so a client
 * that serialises them shows it.
 */
export async function startFakeSlack(
  options: {
    users?: number
    channels?: number
    memberOf?: string[]
    latencyMs?: number
    /** Answers gzip-compressed to a client that accepts it, as Slack does. */
    gzip?: boolean
    /** Served over TLS with this key and certificate (the URL is then https). */
    tls?: { key: string; cert: string }
    /** How long an idle connection is kept, ms (Node's default: 5 s). */
    keepAliveMs?: number
  } = {},
): Promise<FakeSlack> {
  const workspace = new FakeWorkspace(options.users ?? 30, options.channels ?? 5, options.memberOf)
  const channels = workspace.fixedChannels
  const messages = workspace.messages
  const general: FakeMessage[] = Array.from({ length: 25 }, (_, index) => ({
    ts: `17000000${String(99 - index).padStart(2, '0')}.000100`,
    user: `U${String((index % 3) + 1).padStart(8, '0')}`,
    text: `message ${25 - index} in general`,
  }))
  general[0] = { ...general[0], reply_count: 2, text: 'a thread starter' } as FakeMessage
  messages.set('C0GENERAL', general)
  messages.set('G0SECRET', [{ ts: '1700000001.000100', user: 'U00000002', text: 'secret plan' }])
  messages.set('D0DIRECT', [{ ts: '1700000002.000100', user: 'U00000001', text: 'a direct message' }])
  messages.set('C0RANDOM', [
    { ts: '1700000050.000100', user: BOT_USER, bot_id: BOT_ID, text: 'posted by the bot' },
    { ts: '1700000040.000100', user: 'U00000002', text: 'posted by a person' },
    { ts: '1700000030.000100', user: 'U00000003', text: 'ping <!subteam^S0DEVS> and <@U00000002>' },
  ])
  const threadStart = general[0] as FakeMessage
  const replies: FakeMessage[] = [
    { ...threadStart, thread_ts: threadStart.ts },
    { ts: '1700000100.000200', user: 'U00000002', text: 'first reply', thread_ts: threadStart.ts },
    { ts: '1700000100.000300', user: 'U00000003', text: 'second reply', thread_ts: threadStart.ts },
  ]
  const faults: Fault[] = []
  const calls: FakeSlack['calls'] = []
  const fileRequests: FakeSlack['fileRequests'] = []
  let posted = 0
  let features: FeatureState = featureState('')

  const channelOf = (id: unknown) => workspace.channel(id)

  const handle = (method: string, args: Record<string, unknown>, token: string | undefined) => {
    if (token !== BOT_TOKEN && token !== USER_TOKEN && token !== SECOND_BOT_TOKEN)
      return { ok: false, error: token ? 'invalid_auth' : 'not_authed' }
    switch (method) {
      case 'auth.test':
        return { ok: true, user_id: BOT_USER, bot_id: BOT_ID, team_id: 'T0FAKE', user: 'keelbot' }
      case 'conversations.list': {
        const types = String(args.types ?? 'public_channel').split(',')
        const shown = (channel: FakeChannel) =>
          ((args.exclude_archived !== 'true' && args.exclude_archived !== true) || !channel.is_archived) &&
          (channel.is_im
            ? types.includes('im')
            : channel.is_private
              ? types.includes('private_channel')
              : types.includes('public_channel'))
        // The fixed channels are filtered; the generated ones (public, active) follow, never built in bulk.
        const fixed = channels.filter(shown)
        const generated = types.includes('public_channel') ? workspace.channelTotal - channels.length : 0
        const result = pageOf(
          fixed.length + generated,
          (index) =>
            index < fixed.length
              ? (fixed[index] as FakeChannel)
              : workspace.channelAt(channels.length + index - fixed.length),
          args,
        )
        if (!result) return { ok: false, error: 'invalid_cursor' }
        return { ok: true, channels: result.slice, response_metadata: { next_cursor: result.next } }
      }
      case 'conversations.info': {
        const channel = channelOf(args.channel)
        if (!channel) return { ok: false, error: 'channel_not_found' }
        return {
          ok: true,
          channel: { ...channel, ...(token === USER_TOKEN ? unreadFields(workspace, channel.id) : {}) },
        }
      }
      case 'conversations.history': {
        if (!channelOf(args.channel)) return { ok: false, error: 'channel_not_found' }
        let list = workspace.messagesOf(String(args.channel))
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
        const result = pageOf(workspace.userTotal, (index) => workspace.userAt(index), args, 100)
        if (!result) return { ok: false, error: 'invalid_cursor' }
        return { ok: true, members: result.slice, response_metadata: { next_cursor: result.next } }
      }
      case 'users.info': {
        const user = workspace.user(args.user)
        return user ? { ok: true, user } : { ok: false, error: 'user_not_found' }
      }
      case 'users.profile.get': {
        const user = workspace.user(args.user)
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
        return (
          handleFeature(workspace, features, method, args, token === USER_TOKEN) ?? {
            ok: false,
            error: 'unknown_method',
          }
        )
    }
  }

  let inFlight = 0
  let peakInFlight = 0
  const listener: RequestListener = async (request, response) => {
    if (await serveFile(request, response)) return
    const method = (request.url ?? '').replace(/^\/api\//, '').split('?')[0] ?? ''
    const args = await readArgs(request)
    inFlight++
    peakInFlight = Math.max(peakInFlight, inFlight)
    response.once('close', () => inFlight--)
    if (options.latencyMs) await new Promise((resolve) => setTimeout(resolve, options.latencyMs))
    const header = request.headers.authorization
    const token =
      typeof header === 'string' ? header.replace(/^Bearer /, '') : (args.token as string | undefined)
    calls.push({ method, token, args })
    const faultIndex = faults.findIndex((fault) => fault.method === method)
    if (faultIndex >= 0) {
      const fault = faults.splice(faultIndex, 1)[0] as Fault
      if (fault.drop) {
        request.socket.destroy()
        return
      }
      if (fault.status) {
        response.writeHead(fault.status, {
          'content-type': 'application/json',
          ...(fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {}),
          ...(fault.location ? { location: fault.location } : {}),
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
    const answer = JSON.stringify(handle(method, args, token))
    if (options.gzip && /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) {
      response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
      response.end(gzipSync(answer))
      return
    }
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end(answer)
  }
  const server: Server = options.tls ? createHttpsServer(options.tls, listener) : createServer(listener)
  if (options.keepAliveMs !== undefined) server.keepAliveTimeout = options.keepAliveMs
  const connections = { opened: 0, open: 0 }
  server.on(options.tls ? 'secureConnection' : 'connection', (socket) => {
    connections.opened++
    connections.open++
    socket.once('close', () => connections.open--)
  })
  /** Downloads (`/files-pri/<id>/<name>`, bearer required) and uploads (`/upload/<id>`). */
  async function serveFile(request: IncomingMessage, response: import('node:http').ServerResponse) {
    const url = request.url ?? ''
    const token = String(request.headers.authorization ?? '').replace(/^Bearer /, '') || undefined
    const download = /^\/files-pri\/(F[A-Z0-9]+)\//.exec(url)
    const upload = /^\/upload\/(F[A-Z0-9]+)$/.exec(url)
    if (!download && !upload) return false
    fileRequests.push({ path: url, token })
    if (download) {
      const file = features.files.find((candidate) => candidate.id === download[1])
      if (token !== BOT_TOKEN && token !== USER_TOKEN) response.writeHead(403).end()
      else if (!file?.content) response.writeHead(404).end()
      else response.writeHead(200, { 'content-type': file.mimetype }).end(file.content)
      return true
    }
    const entry = features.uploads.get(upload?.[1] ?? '')
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    if (!entry) response.writeHead(404).end()
    else {
      entry.bytes = Buffer.concat(chunks)
      response.writeHead(200).end('OK')
    }
    return true
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const url = `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}/api/`
  features = featureState(url.replace(/api\/$/, ''))
  return {
    url,
    calls,
    channels,
    messages,
    workspace,
    get features() {
      return features
    },
    fileRequests,
    get peakInFlight() {
      return peakInFlight
    },
    connections,
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
