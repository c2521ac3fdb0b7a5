/**
 * The data of the loopback Slack fake. Users and channels past the fixed ones are generated from
 * their index when asked for, never built up front: a workspace of 250,000 users and 50,000
 * channels costs nothing until a page of it is requested.
 */
export const BOT_USER = 'UBOT0001'
export const BOT_ID = 'BBOT0001'
/** The person the user token belongs to. */
export const HUMAN_USER = 'U00000001'

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

export interface FakeUser {
  id: string
  name: string
  real_name: string
  profile: { display_name: string; real_name: string; title: string }
  tz: string
}

const pad = (index: number) => String(index).padStart(8, '0')

export class FakeWorkspace {
  readonly fixedChannels: FakeChannel[] = [
    { id: 'C0GENERAL', name: 'general', topic: { value: 'Company-wide' }, num_members: 30 },
    { id: 'C0RANDOM', name: 'random', num_members: 12 },
    { id: 'G0SECRET', name: 'secret-plans', is_private: true, num_members: 3 },
    { id: 'D0DIRECT', name: 'U00000001', is_im: true },
    { id: 'C0ARCHIVE', name: 'old-stuff', is_archived: true },
  ]
  readonly messages = new Map<string, FakeMessage[]>()
  /** Channels the bot is a member of (users.conversations with the bot token). */
  readonly botMemberships: Set<string>
  /** Channels the person behind the user token is in, with their read marker. */
  readonly lastRead = new Map<string, string>([
    ['C0GENERAL', '1700000095.000100'],
    ['C0RANDOM', '1700000050.000100'],
    ['G0SECRET', '1700000000.000000'],
    ['D0DIRECT', '1700000000.000000'],
  ])

  constructor(
    readonly userCount: number,
    readonly channelCount: number,
    memberOf: string[] = [],
  ) {
    this.botMemberships = new Set(['C0GENERAL', 'C0RANDOM', 'G0SECRET', ...memberOf])
  }

  /** Users in list order: the generated ones, then the bot. */
  get userTotal(): number {
    return this.userCount + 1
  }

  userAt(offset: number): FakeUser {
    if (offset === this.userCount) {
      return {
        id: BOT_USER,
        name: 'keelbot',
        real_name: 'Keel Bot',
        profile: { display_name: 'Keel Bot', real_name: 'Keel Bot', title: '' },
        tz: 'UTC',
      }
    }
    const number = offset + 1
    return {
      id: `U${pad(number)}`,
      name: `user${number}`,
      real_name: `User Number ${number}`,
      profile: { display_name: `disp${number}`, real_name: `User Number ${number}`, title: 'Engineer' },
      tz: 'Europe/Berlin',
    }
  }

  user(id: unknown): FakeUser | undefined {
    if (id === BOT_USER) return this.userAt(this.userCount)
    const match = /^U(\d{8})$/.exec(String(id))
    const number = match ? Number(match[1]) : 0
    return number >= 1 && number <= this.userCount ? this.userAt(number - 1) : undefined
  }

  get channelTotal(): number {
    return Math.max(this.channelCount, this.fixedChannels.length)
  }

  channelAt(index: number): FakeChannel {
    return this.fixedChannels[index] ?? { id: `C${pad(index)}`, name: `channel-${index}`, num_members: 2 }
  }

  channel(id: unknown): FakeChannel | undefined {
    const fixed = this.fixedChannels.find((channel) => channel.id === id)
    if (fixed) return fixed
    const match = /^C(\d{8})$/.exec(String(id))
    const index = match ? Number(match[1]) : -1
    return index >= this.fixedChannels.length && index < this.channelTotal ? this.channelAt(index) : undefined
  }

  /** A channel's messages, newest first; a generated channel has one, made when first read. */
  messagesOf(id: string): FakeMessage[] {
    let list = this.messages.get(id)
    if (!list) {
      const channel = this.channel(id)
      list = channel ? [{ ts: '1700000000.000100', user: 'U00000002', text: `hello in ${channel.name}` }] : []
      this.messages.set(id, list)
    }
    return list
  }
}
