import { BOT_ID, BOT_USER, type FakeWorkspace, HUMAN_USER } from './fake-workspace.js'

/**
 * The Web API methods of unreads, user groups, files, uploads, scheduled messages and canvases, as
 * Slack documents them (shapes trimmed to the fields the server reads). Files are downloaded from
 * `/files-pri/<id>/<name>` with the token as a bearer, and uploaded to the pre-signed
 * `/upload/<id>` that files.getUploadURLExternal hands out.
 */
export interface FakeFile {
  id: string
  name: string
  title: string
  filetype: string
  mimetype: string
  size: number
  created: number
  user: string
  channels: string[]
  groups: string[]
  ims: string[]
  url_private: string
  permalink: string
  content?: string
}

export interface FeatureState {
  files: FakeFile[]
  uploads: Map<string, { name: string; length: number; bytes?: Buffer; completed?: Record<string, unknown> }>
  scheduled: Array<{ id: string; channel_id: string; post_at: number; text: string }>
  canvases: Map<string, { title: string; markdown: string; channel?: string; edits: unknown[] }>
  marked: Array<{ channel: string; ts: string }>
  usergroups: Array<{ id: string; handle: string; name: string; users: string[] }>
  /** Origin (with a trailing slash) of file and upload URLs: the fake itself. */
  fileBase: string
}

export function featureState(base: string): FeatureState {
  const file = (id: string, name: string, extra: Partial<FakeFile>): FakeFile => ({
    id,
    name,
    title: name,
    filetype: 'text',
    mimetype: 'text/plain',
    size: extra.content?.length ?? 1000,
    created: 1700000100,
    user: 'U00000002',
    channels: [],
    groups: [],
    ims: [],
    url_private: `${base}files-pri/${id}/${name}`,
    permalink: `https://fake.slack.com/files/U00000002/${id}/${name}`,
    ...extra,
  })
  return {
    files: [
      file('F0NOTES', 'notes.txt', { channels: ['C0GENERAL'], content: 'line one\nline two\n' }),
      file('F0IMAGE', 'diagram.png', { channels: ['C0GENERAL'], filetype: 'png', mimetype: 'image/png' }),
      file('F0SECRET', 'plans.txt', { groups: ['G0SECRET'], content: 'the secret plan\n' }),
      file('F0CANVAS', 'Roadmap', {
        channels: ['C0GENERAL'],
        filetype: 'quip',
        mimetype: 'application/vnd.slack-docs',
        content: '<h1>Roadmap</h1><p>Ship it &amp; celebrate</p><ul><li>one</li><li>two</li></ul>',
      }),
    ],
    uploads: new Map(),
    scheduled: [],
    canvases: new Map(),
    marked: [],
    usergroups: [{ id: 'S0DEVS', handle: 'devs', name: 'Developers', users: ['U00000001', 'U00000002'] }],
    fileBase: base,
  }
}

const parse = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value)

function paged<T>(items: T[], args: Record<string, unknown>) {
  const offset = Number(
    Buffer.from(String(args.cursor ?? ''), 'base64')
      .toString()
      .replace('at:', '') || 0,
  )
  const limit = Math.min(Number(args.limit ?? 100) || 100, 1000)
  const next = offset + limit < items.length ? Buffer.from(`at:${offset + limit}`).toString('base64') : ''
  return { slice: items.slice(offset, offset + limit), next }
}

/** Answers the feature methods; undefined for any other method. */
export function handleFeature(
  workspace: FakeWorkspace,
  state: FeatureState,
  method: string,
  args: Record<string, unknown>,
  isUser: boolean,
): Record<string, unknown> | undefined {
  switch (method) {
    case 'users.conversations': {
      const types = String(args.types ?? 'public_channel').split(',')
      const ids = isUser ? [...workspace.lastRead.keys()] : [...workspace.botMemberships]
      const visible = ids
        .map((id) => workspace.channel(id))
        .filter((channel) => channel !== undefined)
        .filter((channel) =>
          channel.is_im
            ? types.includes('im')
            : channel.is_private
              ? types.includes('private_channel')
              : types.includes('public_channel'),
        )
      const { slice, next } = paged(visible, args)
      return { ok: true, channels: slice, response_metadata: { next_cursor: next } }
    }
    case 'conversations.mark': {
      if (!isUser) return { ok: false, error: 'not_allowed_token_type' }
      workspace.lastRead.set(String(args.channel), String(args.ts))
      state.marked.push({ channel: String(args.channel), ts: String(args.ts) })
      return { ok: true }
    }
    case 'usergroups.list':
      return {
        ok: true,
        usergroups: state.usergroups.map((group) => ({
          ...group,
          user_count: group.users.length,
          ...(args.include_users === 'true' || args.include_users === true ? {} : { users: undefined }),
        })),
      }
    case 'files.list': {
      let files = state.files
      if (args.channel)
        files = files.filter((file) =>
          [...file.channels, ...file.groups, ...file.ims].includes(String(args.channel)),
        )
      if (args.user) files = files.filter((file) => file.user === args.user)
      const count = Number(args.count ?? 100)
      const page = Number(args.page ?? 1)
      return {
        ok: true,
        files: files.slice((page - 1) * count, page * count).map(({ content: _, ...file }) => file),
        paging: { count, total: files.length, page, pages: Math.max(1, Math.ceil(files.length / count)) },
      }
    }
    case 'files.info': {
      const file = state.files.find((candidate) => candidate.id === args.file)
      if (!file) return { ok: false, error: 'file_not_found' }
      const { content: _, ...rest } = file
      return { ok: true, file: rest }
    }
    case 'files.getUploadURLExternal': {
      const id = `F0UP${state.uploads.size + 1}`
      state.uploads.set(id, { name: String(args.filename), length: Number(args.length) })
      return { ok: true, upload_url: `${state.fileBase}upload/${id}`, file_id: id }
    }
    case 'files.completeUploadExternal': {
      const files = parse(args.files) as Array<{ id: string; title?: string }>
      for (const entry of files) {
        const upload = state.uploads.get(entry.id)
        if (!upload?.bytes) return { ok: false, error: 'upload_not_found' }
        upload.completed = { title: entry.title, channel: args.channel_id, comment: args.initial_comment }
      }
      return { ok: true, files: files.map((entry) => ({ id: entry.id })) }
    }
    case 'chat.scheduleMessage': {
      if (!workspace.channel(args.channel)) return { ok: false, error: 'channel_not_found' }
      const postAt = Number(args.post_at)
      if (postAt * 1000 < Date.now()) return { ok: false, error: 'time_in_past' }
      const id = `Q0SCHED${state.scheduled.length + 1}`
      state.scheduled.push({ id, channel_id: String(args.channel), post_at: postAt, text: String(args.text) })
      return { ok: true, channel: args.channel, scheduled_message_id: id, post_at: postAt }
    }
    case 'chat.scheduledMessages.list': {
      const list = state.scheduled.filter((message) => !args.channel || message.channel_id === args.channel)
      const { slice, next } = paged(list, args)
      return { ok: true, scheduled_messages: slice, response_metadata: { next_cursor: next } }
    }
    case 'chat.deleteScheduledMessage': {
      const index = state.scheduled.findIndex(
        (message) => message.id === args.scheduled_message_id && message.channel_id === args.channel,
      )
      if (index < 0) return { ok: false, error: 'invalid_scheduled_message_id' }
      state.scheduled.splice(index, 1)
      return { ok: true }
    }
    case 'canvases.create': {
      const id = `F0CANV${state.canvases.size + 1}`
      const content = parse(args.document_content) as { markdown: string }
      state.canvases.set(id, {
        title: String(args.title),
        markdown: content.markdown,
        ...(args.channel_id ? { channel: String(args.channel_id) } : {}),
        edits: [],
      })
      return { ok: true, canvas_id: id }
    }
    case 'canvases.edit': {
      const known =
        state.files.some((file) => file.id === args.canvas_id) || state.canvases.has(String(args.canvas_id))
      if (!known) return { ok: false, error: 'canvas_not_found' }
      const canvas = state.canvases.get(String(args.canvas_id)) ?? { title: '', markdown: '', edits: [] }
      canvas.edits.push(...(parse(args.changes) as unknown[]))
      state.canvases.set(String(args.canvas_id), canvas)
      return { ok: true }
    }
    default:
      return undefined
  }
}

/** Extra fields conversations.info carries for the person behind a user token. */
export function unreadFields(workspace: FakeWorkspace, id: string): Record<string, unknown> {
  const lastRead = workspace.lastRead.get(id)
  if (lastRead === undefined) return {}
  const list = workspace.messagesOf(id)
  const unread = list.filter((message) => Number(message.ts) > Number(lastRead)).length
  return {
    last_read: lastRead,
    unread_count: unread,
    unread_count_display: unread,
    ...(list[0]
      ? { latest: { ts: list[0].ts, user: list[0].user ?? BOT_USER, bot_id: list[0].bot_id ?? BOT_ID } }
      : {}),
  }
}

export { HUMAN_USER }
