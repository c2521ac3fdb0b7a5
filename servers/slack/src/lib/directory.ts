import {
  type ChannelEntry,
  type SlackApi,
  type SlackRecord,
  toChannel,
  toUser,
  type UserEntry,
} from './slack.js'

/**
 * A map with a size cap and an age limit: the least recently used entry goes when it is full, an
 * entry older than `ttlMs` counts as absent (names change; a stale id is looked up again).
 */
export class BoundedCache<V> {
  readonly #entries = new Map<string, { value: V; at: number }>()

  constructor(
    readonly maxEntries: number,
    readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string): V | undefined {
    const entry = this.#entries.get(key)
    if (!entry) return undefined
    if (this.now() - entry.at > this.ttlMs) {
      this.#entries.delete(key)
      return undefined
    }
    // Re-inserted: Map order is the eviction order, oldest use first.
    this.#entries.delete(key)
    this.#entries.set(key, entry)
    return entry.value
  }

  set(key: string, value: V, at = this.now()): void {
    this.#entries.delete(key)
    this.#entries.set(key, { value, at })
    while (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!)
  }

  get size(): number {
    return this.#entries.size
  }

  /** Fresh entries with the time each was learnt (for persisting). */
  *entries(): Generator<[string, V, number]> {
    const now = this.now()
    for (const [key, entry] of this.#entries)
      if (now - entry.at <= this.ttlMs) yield [key, entry.value, entry.at]
  }
}

/** Where learnt names survive a restart (a JSON file under the user's cache directory). */
export interface NameStore {
  load(): Promise<PersistedNames | undefined>
  save(names: PersistedNames): Promise<void>
}

export interface PersistedNames {
  users: Array<[UserEntry, number]>
  channels: Array<[ChannelEntry, number]>
}

export interface DirectoryOptions {
  /** Entries kept of each kind (users, channels); default 50,000. */
  maxEntries?: number
  /** How long a learnt name stays trusted, ms; default one hour. */
  ttlMs?: number
  store?: NameStore | undefined
  now?: () => number
}

/** Pages one scan may fetch before it answers "not found yet" (1,000 entries a page). */
export const PAGES_PER_LOOKUP = 50
const PAGE = 1000

/**
 * Names and ids of users and channels, resolved lazily and never by loading a whole directory:
 * an id is looked up by itself (`conversations.info`, `users.info`); a name first in the cache, then
 * by an exact lookup where Slack has one (`users.lookupByEmail`; for `#name`, the bot's own
 * conversations, which are the ones it can read and usually few), and only then by paging the
 * workspace's list, a bounded number of pages a call, resuming where the last scan stopped.
 * Start-up fetches nothing, whatever the workspace's size; answers carry ids where no name is
 * known yet.
 */
export class Directory {
  readonly #users: BoundedCache<UserEntry>
  readonly #userByName: BoundedCache<string>
  readonly #channels: BoundedCache<ChannelEntry>
  readonly #channelByName: BoundedCache<string>
  readonly #store: NameStore | undefined
  #loaded: Promise<void> | undefined
  #userCursor: string | null | undefined
  #channelCursor: string | null | undefined
  #memberCursor: string | null | undefined
  #groups: { at: number; handles: Map<string, string> } | undefined
  readonly #now: () => number
  /** Web API pages fetched by name scans (tests and benches read it). */
  pagesFetched = 0

  constructor(
    private readonly api: SlackApi,
    private readonly channelTypes: string,
    options: DirectoryOptions = {},
  ) {
    const max = options.maxEntries ?? 50_000
    const ttl = options.ttlMs ?? 3_600_000
    this.#now = options.now ?? Date.now
    this.#users = new BoundedCache(max, ttl, this.#now)
    this.#userByName = new BoundedCache(max * 2, ttl, this.#now)
    this.#channels = new BoundedCache(max, ttl, this.#now)
    this.#channelByName = new BoundedCache(max, ttl, this.#now)
    this.#store = options.store
  }

  rememberUser(user: UserEntry, at?: number): void {
    this.#users.set(user.id, user, at)
    this.#userByName.set(user.name.toLowerCase(), user.id, at)
    if (user.displayName) this.#userByName.set(user.displayName.toLowerCase(), user.id, at)
  }

  rememberChannel(channel: ChannelEntry, at?: number): void {
    this.#channels.set(channel.id, channel, at)
    if (!channel.isDm) this.#channelByName.set(channel.name.toLowerCase(), channel.id, at)
  }

  /** A user by `@handle`, display name or e-mail address. */
  async findUser(name: string, signal?: AbortSignal): Promise<UserEntry | undefined> {
    await this.#load()
    const key = name.replace(/^@/, '').toLowerCase()
    const cached = this.#userNamed(key)
    if (cached) return cached
    if (/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(key)) {
      const response = await this.api.apiCall('users.lookupByEmail', { email: key }).catch(() => undefined)
      if (!response?.user) return undefined
      const user = toUser(response.user)
      this.rememberUser(user)
      return user
    }
    const pages = this.pagesFetched
    const found = await this.#scan(
      () => this.#userNamed(key),
      () => this.#userCursor,
      (cursor) => {
        this.#userCursor = cursor
      },
      (cursor) => this.api.apiCall('users.list', { limit: PAGE, ...(cursor ? { cursor } : {}) }),
      (response) => {
        for (const raw of response.members ?? []) this.rememberUser(toUser(raw))
      },
      signal,
    )
    if (this.pagesFetched !== pages) await this.#save()
    return found
  }

  /** A channel by `#name`: the bot's own conversations first, then the workspace's list. */
  async findChannel(name: string, signal?: AbortSignal): Promise<ChannelEntry | undefined> {
    await this.#load()
    const key = name.replace(/^#/, '').toLowerCase()
    const lookup = () => {
      const id = this.#channelByName.get(key)
      return id ? this.#channels.get(id) : undefined
    }
    const learn = (response: SlackRecord) => {
      for (const raw of response.channels ?? []) this.rememberChannel(toChannel(raw))
    }
    const args = { limit: PAGE, types: this.channelTypes, exclude_archived: false }
    const pages = this.pagesFetched
    const found =
      lookup() ??
      (await this.#scan(
        lookup,
        () => this.#memberCursor,
        (cursor) => {
          this.#memberCursor = cursor
        },
        (cursor) => this.api.apiCall('users.conversations', { ...args, ...(cursor ? { cursor } : {}) }),
        learn,
        signal,
      )) ??
      (await this.#scan(
        lookup,
        () => this.#channelCursor,
        (cursor) => {
          this.#channelCursor = cursor
        },
        (cursor) => this.api.apiCall('conversations.list', { ...args, ...(cursor ? { cursor } : {}) }),
        learn,
        signal,
      ))
    if (this.pagesFetched !== pages) await this.#save()
    return found
  }

  /** A channel by id: cached, else conversations.info. */
  async channel(id: string): Promise<ChannelEntry> {
    const known = this.#channels.get(id)
    if (known) return known
    const response = await this.api.apiCall('conversations.info', { channel: id })
    const channel = toChannel(response.channel ?? {})
    this.rememberChannel(channel)
    return channel
  }

  /** Display names for user ids (users.info for the ones not seen yet, at most 50 a call). */
  async userNames(ids: Iterable<string>): Promise<Map<string, string>> {
    const names = new Map<string, string>()
    let lookups = 0
    for (const id of new Set(ids)) {
      let user = this.#users.get(id)
      if (!user && lookups < 50 && /^[UW][A-Z0-9]+$/.test(id)) {
        lookups++
        const response = await this.api.apiCall('users.info', { user: id }).catch(() => undefined)
        if (response?.user) {
          user = toUser(response.user)
          this.rememberUser(user)
        }
      }
      if (user) names.set(id, user.displayName || user.realName || user.name)
    }
    return names
  }

  /**
   * `@handle` of user groups by id (one `usergroups.list`, kept for the cache's age limit). Empty
   * when the token may not list groups: mentions then keep their ids.
   */
  async groupHandles(): Promise<Map<string, string>> {
    if (this.#groups && this.#now() - this.#groups.at <= this.#users.ttlMs) return this.#groups.handles
    const response = await this.api.apiCall('usergroups.list', {}).catch(() => undefined)
    const handles = new Map<string, string>()
    for (const group of response?.usergroups ?? []) handles.set(String(group.id), String(group.handle))
    this.#groups = { at: this.#now(), handles }
    return handles
  }

  /**
   * Whether the last scans reached the end of the workspace's lists: when not, a name not found
   * may still be further on, and the next lookup resumes where this one stopped.
   */
  get scanned(): { users: boolean; channels: boolean } {
    return { users: this.#userCursor === null, channels: this.#channelCursor === null }
  }

  get sizes(): { users: number; channels: number } {
    return { users: this.#users.size, channels: this.#channels.size }
  }

  #userNamed(key: string): UserEntry | undefined {
    const id = this.#userByName.get(key)
    return id ? this.#users.get(id) : undefined
  }

  /** Pages a list from where the last scan stopped until `lookup` finds it, the list ends or the bound. */
  async #scan<T>(
    lookup: () => T | undefined,
    cursor: () => string | null | undefined,
    setCursor: (cursor: string | null) => void,
    fetch: (cursor: string | undefined) => Promise<SlackRecord>,
    learn: (response: SlackRecord) => void,
    signal: AbortSignal | undefined,
  ): Promise<T | undefined> {
    for (let page = 0; page < PAGES_PER_LOOKUP; page++) {
      const found = lookup()
      if (found) return found
      if (cursor() === null) return undefined
      signal?.throwIfAborted()
      const response = await fetch(cursor() ?? undefined)
      this.pagesFetched++
      learn(response)
      setCursor(response.response_metadata?.next_cursor || null)
    }
    return lookup()
  }

  #load(): Promise<void> {
    this.#loaded ??= (async () => {
      const names = await this.#store?.load().catch(() => undefined)
      if (!names) return
      for (const [user, at] of names.users) this.rememberUser(user, at)
      for (const [channel, at] of names.channels) this.rememberChannel(channel, at)
    })()
    return this.#loaded
  }

  async #save(): Promise<void> {
    if (!this.#store) return
    await this.#store
      .save({
        users: [...this.#users.entries()].map(([, user, at]) => [user, at]),
        channels: [...this.#channels.entries()].map(([, channel, at]) => [channel, at]),
      })
      .catch(() => {})
  }
}
