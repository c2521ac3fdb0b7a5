import { z } from '@keel-mcp/core'
import { clean, WITHHELD } from '../lib/index.js'
import {
  cap,
  defineTool,
  entry,
  type GithubDeps,
  github,
  list,
  listed,
  more,
  number,
  page,
  pageInfo,
  perPage,
  read,
  repo,
  result,
  signalOf,
  write,
  written,
} from './shared.js'

const toolset = 'notifications'
const threadId = z
  .union([z.string().regex(/^\d+$/), number])
  .transform(String)
  .describe('Thread id')

interface Thread {
  id: string
  unread: boolean
  reason: string
  updated_at: string
  subject: { title: string; type: string; url: string | null }
  repository: { full_name: string }
}

/**
 * Subject titles are issue and PR titles: user text. Its author is not in the notification, so
 * under lockdown (nothing proves push access) the title is withheld.
 */
function threadOf(deps: GithubDeps, thread: Thread) {
  const number = thread.subject.url?.match(/\/(\d+)$/)?.[1]
  return {
    id: thread.id,
    repository: thread.repository.full_name,
    type: thread.subject.type,
    title: deps.lockdown ? WITHHELD : cap(clean(thread.subject.title), 500),
    ...(number ? { number: Number(number) } : {}),
    reason: thread.reason,
    unread: thread.unread,
    updatedAt: thread.updated_at,
  }
}

export const listNotifications = defineTool({
  name: 'list_notifications',
  title: 'List notifications',
  description: 'Your notification threads, newest first.',
  toolset,
  input: {
    repo: repo.optional().describe('owner/name'),
    all: z.boolean().default(false).describe('Include read'),
    participating: z.boolean().default(false).describe('Participating only'),
    since: z.string().optional().describe('ISO time'),
    page,
    per_page: perPage,
  },
  output: { notifications: list(), ...more },
  annotations: read,
  async run({ repo: where, all, participating, since, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const filters = { all, participating, page, per_page, ...(since ? { since } : {}), ...signalOf(signal) }
    const response = where
      ? await octokit.rest.activity.listRepoNotificationsForAuthenticatedUser({ ...where, ...filters })
      : await octokit.rest.activity.listNotificationsForAuthenticatedUser(filters)
    return listed(
      {
        notifications: response.data.map((thread) => threadOf(deps, thread as Thread)),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})

export const getNotification = defineTool({
  name: 'get_notification',
  title: 'Get notification',
  description: 'One notification thread.',
  toolset,
  input: { thread_id: threadId },
  output: { notification: entry() },
  annotations: read,
  async run({ thread_id }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.activity.getThread({
      thread_id: Number(thread_id),
      ...signalOf(signal),
    })
    return result({ notification: threadOf(deps, data as Thread) }, { untrusted: true })
  },
})

export const markNotificationsRead = defineTool({
  name: 'mark_notifications_read',
  title: 'Mark read',
  description: 'Mark one thread, a repo, or all notifications read (or done).',
  toolset,
  input: {
    thread_id: threadId.optional().describe('Thread id'),
    repo: repo.optional().describe('owner/name'),
    done: z.boolean().default(false).describe('Thread: mark done'),
    last_read_at: z.string().optional().describe('ISO time; default now'),
  },
  output: { marked: z.string() },
  annotations: { ...write, idempotentHint: true },
  async run({ thread_id, repo: where, done, last_read_at }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const at = last_read_at ? { last_read_at } : {}
    if (thread_id) {
      const request = { thread_id: Number(thread_id), ...signalOf(signal) }
      if (done) await octokit.rest.activity.markThreadAsDone(request)
      else await octokit.rest.activity.markThreadAsRead(request)
      return written({ marked: `thread ${thread_id}${done ? ' done' : ''}` })
    }
    if (where) {
      await octokit.rest.activity.markRepoNotificationsAsRead({ ...where, ...at, ...signalOf(signal) })
      return written({ marked: `${where.owner}/${where.repo}` })
    }
    await octokit.rest.activity.markNotificationsAsRead({ ...at, ...signalOf(signal) })
    return written({ marked: 'all' })
  },
})

export const manageNotificationSubscription = defineTool({
  name: 'manage_notification_subscription',
  title: 'Thread subscription',
  description: 'Ignore, watch or unsubscribe a notification thread.',
  toolset,
  input: { thread_id: threadId, action: z.enum(['ignore', 'watch', 'delete']).describe('Action') },
  output: { threadId: z.string(), action: z.string() },
  annotations: { ...write, idempotentHint: true },
  async run({ thread_id, action }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const request = { thread_id: Number(thread_id), ...signalOf(signal) }
    if (action === 'delete') await octokit.rest.activity.deleteThreadSubscription(request)
    else await octokit.rest.activity.setThreadSubscription({ ...request, ignored: action === 'ignore' })
    return written({ threadId: thread_id, action })
  },
})

export const manageRepositorySubscription = defineTool({
  name: 'manage_repository_subscription',
  title: 'Watch repo',
  description: 'Watch, ignore or unwatch a repo.',
  toolset,
  input: { repo, action: z.enum(['watch', 'ignore', 'delete']).describe('Action') },
  output: { repository: z.string(), action: z.string() },
  annotations: { ...write, idempotentHint: true },
  async run({ repo: { owner, repo }, action }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const request = { owner, repo, ...signalOf(signal) }
    if (action === 'delete') await octokit.rest.activity.deleteRepoSubscription(request)
    else
      await octokit.rest.activity.setRepoSubscription({
        ...request,
        subscribed: action === 'watch',
        ignored: action === 'ignore',
      })
    return written({ repository: `${owner}/${repo}`, action })
  },
})
