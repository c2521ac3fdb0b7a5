/**
 * The Slack side: the Web API client (created on first use), a name directory filled lazily, and the
 * channel policy (allow and deny lists, private channels and DMs). Nothing here knows about MCP.
 */
import { connectionNeverMade } from '@keel-mcp/core'
import { downloadPrivate } from './files.js'
import { type RateLimitOptions, RateLimitPolicy } from './rate-limit.js'
import { createTransport, READ_METHODS } from './transport.js'

/** A Slack Web API response or object: JSON whose shape varies by method. */
// biome-ignore lint/suspicious/noExplicitAny: Slack's responses are untyped JSON, read field by field
export type SlackRecord = Record<string, any>

/** The subset of `@slack/web-api`'s WebClient the server calls. */
export interface SlackApi {
  apiCall(method: string, options?: Record<string, unknown>): Promise<SlackRecord>
  /** A private file's bytes (`url_private`), with this token, within `maxBytes`; only from Slack's hosts. */
  download?(
    url: string,
    maxBytes: number,
    signal?: AbortSignal,
  ): Promise<{ bytes: Buffer; truncated: boolean; contentType: string | undefined }>
}

export interface ClientOptions {
  apiUrl: string
  teamId?: string | undefined
  /**
   * Retries of a read's 5xx and network errors, and of a write that never reached Slack (rate
   * limits: see {@link RateLimitPolicy}). A write Slack may have received is never sent again.
   */
  retries?: number
  /** Shortest wait between retries, ms (tests shorten it). */
  minRetryMs?: number
  /** How 429s are waited out or answered (tests shorten the back-off). */
  rateLimit?: RateLimitOptions
  /** How long an idle keep-alive connection of a write is kept, ms (tests shorten it; see transport.ts). */
  idleMs?: number
  /** How long an idle keep-alive connection of a read is kept, ms (tests shorten it; see transport.ts). */
  readIdleMs?: number
  log(message: string, fields?: Record<string, unknown>): void
}

/** A Slack API failure the server explains: `error` is Slack's code (`channel_not_found`, …). */
export class SlackError extends Error {
  override name = 'SlackError'
  constructor(
    readonly error: string,
    message: string,
    readonly details: {
      needed?: string
      retryAfterSeconds?: number
      retryAt?: number
      status?: number
      /** A write Slack may have applied without confirming it (see {@link unconfirmedWrite}). */
      unconfirmed?: boolean
    } = {},
  ) {
    super(message)
  }
}

/**
 * Creates the WebClients for `token` on first use: `@slack/web-api` is loaded only then, so starting
 * the server costs nothing. Rate limits are rejected by the clients and judged by a
 * {@link RateLimitPolicy} (never a wait past a tool's timeout). Reads ({@link READ_METHODS}) go
 * through a client with the library's own retries of 5xx and network errors. Writes go through one
 * without them: a 5xx or a connection lost after the request left does not say whether Slack
 * applied it, and sending `chat.postMessage` again would post the message twice. A write is sent
 * again only when it never reached Slack (the connection was refused or never made); otherwise the
 * call fails with `unconfirmed` set, and the model is told to look before repeating it. Both clients
 * share one transport; their logger goes to ours at debug level, never to stdout.
 */
export function createSlackApi(token: string, options: ClientOptions): SlackApi {
  const retries = options.retries ?? 3
  const minRetryMs = options.minRetryMs ?? 500
  let library: Promise<(retries: number) => SlackApi> | undefined
  let reader: Promise<SlackApi> | undefined
  let writer: Promise<SlackApi> | undefined
  const load = async (): Promise<(retries: number) => SlackApi> => {
    const { WebClient, LogLevel } = (await import('@slack/web-api')) as typeof import('@slack/web-api')
    // The client logs about eight debug lines a request; a line's text is joined only when a
    // record is built (the logger reads `detail` only for a level someone takes).
    const quiet =
      (message: string) =>
      (...parts: unknown[]) =>
        options.log(message, {
          get detail() {
            return parts
              .map((part) => String(part))
              .join(' ')
              .slice(0, 300)
          },
        })
    // Keep-alive node:http instead of fetch: a third of a warm call's CPU (see transport.ts).
    const fetch = createTransport(options.apiUrl, { idleMs: options.idleMs, readIdleMs: options.readIdleMs })
    return (clientRetries) =>
      new WebClient(token, {
        slackApiUrl: options.apiUrl,
        ...(options.teamId ? { teamId: options.teamId } : {}),
        // Its own handling would sleep for the whole Retry-After with every request queued behind it.
        rejectRateLimitedCalls: true,
        fetch,
        retryConfig: {
          retries: clientRetries,
          factor: 2,
          minTimeout: minRetryMs,
          maxTimeout: 30_000,
          randomize: true,
        },
        logLevel: LogLevel.DEBUG,
        logger: {
          debug: quiet('slack client'),
          info: quiet('slack client'),
          warn: quiet('slack client warning'),
          error: quiet('slack client error'),
          setLevel: () => {},
          getLevel: () => LogLevel.DEBUG,
          setName: () => {},
        },
      }) as unknown as SlackApi
  }
  const clientFor = (read: boolean): Promise<SlackApi> => {
    library ??= load()
    const made = library
    if (read) {
      reader ??= made.then((make) => make(retries))
      return reader
    }
    writer ??= made.then((make) => make(0))
    return writer
  }
  const limits = new RateLimitPolicy(options.rateLimit)
  return {
    async apiCall(method, args = {}) {
      const read = READ_METHODS.has(method)
      const client = clientFor(read)
      let resent = 0
      let waited = 0
      for (;;) {
        const closed = limits.closed(method)
        if (closed) throw rateLimited(closed)
        try {
          const response = await (await client).apiCall(method, args)
          limits.succeeded(method)
          return response
        } catch (error) {
          if (!read && neverSent(error) && resent < retries) {
            // Nothing reached Slack: sending the write again cannot apply it twice.
            const wait = minRetryMs * 2 ** resent++
            options.log('slack write not sent: trying again', { method, wait })
            await new Promise((resolve) => setTimeout(resolve, wait))
            continue
          }
          const failure = toSlackError(error)
          if (!read && failure instanceof SlackError && unconfirmedWrite(failure, error)) {
            failure.details.unconfirmed = true
          }
          const retryAfter = failure instanceof SlackError ? failure.details.retryAfterSeconds : undefined
          if (retryAfter === undefined) throw failure
          const wait = limits.inlineWait(retryAfter, waited++)
          if (wait === undefined) throw rateLimited(limits.limited(method, retryAfter))
          options.log('slack rate limit: waiting', { method, retryAfter })
          await new Promise((resolve) => setTimeout(resolve, wait))
        }
      }
    },
    download: (url, maxBytes, signal) => downloadPrivate(url, token, options.apiUrl, maxBytes, signal),
  }
}

/**
 * Whether a client's request error says the request never left: its connection was never made
 * (core's `connectionNeverMade`). Anything else may have come after Slack read the request.
 */
export function neverSent(error: unknown): boolean {
  return (
    (error as { code?: unknown } | null)?.code === 'slack_webapi_request_error' && connectionNeverMade(error)
  )
}

/**
 * Whether a failed write may have been applied: the connection broke after the request left, Slack
 * answered a 5xx or something that is not its JSON, or said `internal_error`/`fatal_error` (which
 * Slack documents as possibly partly done). Refusals (`ok: false` with any other code, a 4xx) and
 * rate limits are answers that nothing was done.
 */
export function unconfirmedWrite(failure: SlackError, raw: unknown): boolean {
  switch (failure.error) {
    case 'request_error':
      return !neverSent(raw)
    case 'http_error':
      return failure.details.status === undefined || failure.details.status >= 500
    case 'invalid_response':
    case 'internal_error':
    case 'fatal_error':
    case 'service_unavailable':
      return true
    default:
      return false
  }
}

function rateLimited(state: { retryAfterSeconds: number; retryAt: number }): SlackError {
  return new SlackError('ratelimited', 'Slack rate-limited the call', state)
}

/** Turns the WebClient's errors into {@link SlackError}; never carries the token or the request. */
export function toSlackError(error: unknown): unknown {
  const record = error as {
    code?: string
    data?: SlackRecord
    retryAfter?: number
    statusCode?: number
  }
  switch (record?.code) {
    case 'slack_webapi_platform_error': {
      // Slack's codes are short snake_case words. Anything else (the client fills `error` with the
      // body when it is not JSON) is a broken answer, not a refusal, and is not echoed to the model.
      const raw = record.data?.error
      const code =
        typeof raw === 'string' && /^[a-z0-9_.]{1,64}$/.test(raw)
          ? raw
          : raw === undefined
            ? 'unknown_error'
            : 'invalid_response'
      return new SlackError(code, `Slack refused the call: ${code}`, {
        ...(typeof record.data?.needed === 'string' ? { needed: record.data.needed } : {}),
      })
    }
    case 'slack_webapi_rate_limited_error':
      return new SlackError('ratelimited', 'Slack rate-limited the call', {
        ...(typeof record.retryAfter === 'number' ? { retryAfterSeconds: record.retryAfter } : {}),
      })
    case 'slack_webapi_http_error':
      return new SlackError('http_error', `Slack answered HTTP ${record.statusCode ?? '?'}`, {
        ...(typeof record.statusCode === 'number' ? { status: record.statusCode } : {}),
      })
    case 'slack_webapi_request_error':
      return new SlackError('request_error', 'Slack could not be reached')
    default:
      return error
  }
}

export interface UserEntry {
  id: string
  name: string
  realName?: string
  displayName?: string
  isBot?: boolean
  deleted?: boolean
}

export interface ChannelEntry {
  id: string
  name: string
  isPrivate: boolean
  isDm: boolean
  isArchived: boolean
  isMember?: boolean
  topic?: string
  purpose?: string
  members?: number
}

export function toChannel(raw: SlackRecord): ChannelEntry {
  const isDm = raw.is_im === true || raw.is_mpim === true
  return {
    id: String(raw.id),
    name: String(raw.name ?? raw.user ?? raw.id),
    isPrivate: raw.is_private === true || raw.is_group === true,
    isDm,
    isArchived: raw.is_archived === true,
    ...(typeof raw.is_member === 'boolean' ? { isMember: raw.is_member } : {}),
    ...(raw.topic?.value ? { topic: String(raw.topic.value) } : {}),
    ...(raw.purpose?.value ? { purpose: String(raw.purpose.value) } : {}),
    ...(typeof raw.num_members === 'number' ? { members: raw.num_members } : {}),
  }
}

export function toUser(raw: SlackRecord): UserEntry {
  return {
    id: String(raw.id),
    name: String(raw.name ?? raw.id),
    ...(raw.real_name || raw.profile?.real_name
      ? { realName: String(raw.real_name ?? raw.profile.real_name) }
      : {}),
    ...(raw.profile?.display_name ? { displayName: String(raw.profile.display_name) } : {}),
    ...(raw.is_bot ? { isBot: true } : {}),
    ...(raw.deleted ? { deleted: true } : {}),
  }
}

export interface ChannelPolicyOptions {
  allow?: readonly string[] | undefined
  exclude?: readonly string[] | undefined
  writeAllow?: readonly string[] | undefined
  includePrivate: boolean
  includeDms: boolean
}

const isId = (value: string) => /^[CGD][A-Z0-9]{2,}$/.test(value)
const matches = (list: readonly string[], channel: ChannelEntry) =>
  list.some((entry) =>
    isId(entry) ? entry === channel.id : entry.replace(/^#/, '').toLowerCase() === channel.name.toLowerCase(),
  )

/** Why a channel may not be read (or written); undefined when it may. */
export function channelRefusal(
  channel: ChannelEntry,
  policy: ChannelPolicyOptions,
  access: 'read' | 'write',
): string | undefined {
  const label = channel.isDm ? 'this conversation' : `#${channel.name}`
  if (policy.exclude && matches(policy.exclude, channel))
    return `${label} is excluded by the server's --exclude-channels`
  if (policy.allow && !matches(policy.allow, channel))
    return `${label} is not in the server's --channels allow list`
  if (channel.isDm && !policy.includeDms)
    return 'direct messages are off (the server was started without --include-dms)'
  if (channel.isPrivate && !channel.isDm && !policy.includePrivate)
    return `${label} is private (the server was started without --include-private)`
  if (access === 'write' && policy.writeAllow && !matches(policy.writeAllow, channel))
    return `${label} is not in the server's --write-channels`
  return undefined
}

/** `ts` → ISO time. */
export function timeOf(ts: string | undefined): string | undefined {
  const seconds = Number(ts)
  return Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000).toISOString() : undefined
}

/** `https://x.slack.com/archives/C123/p1700000000123456?thread_ts=…` → channel and ts. */
export function parsePermalink(url: string): { channel: string; ts: string; threadTs?: string } | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  const match = /\/archives\/([CGD][A-Z0-9]+)\/p(\d{10})(\d{6})\/?$/.exec(parsed.pathname)
  if (!match) return undefined
  const threadTs = parsed.searchParams.get('thread_ts') ?? undefined
  return {
    channel: match[1] as string,
    ts: `${match[2]}.${match[3]}`,
    ...(threadTs && /^\d+\.\d+$/.test(threadTs) ? { threadTs } : {}),
  }
}

/**
 * Escapes every Slack special command (`<!…>`): `<!channel>`, `<!here>`, `<!everyone>`, the legacy
 * `<!group>`, `<!subteam^…>` group pings, and any form Slack adds later. Each `<!` is escaped, so
 * no spelling of a special command survives; the text reads the same in Slack.
 */
export function escapeBroadcasts(text: string): string {
  return text.replace(/<!([^<>]*)(>?)/g, (_whole, body: string, close: string) =>
    close ? `&lt;!${body}&gt;` : `&lt;!${body}`,
  )
}
