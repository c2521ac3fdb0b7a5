import { budgetOutput, openBudget, z } from '@keel-mcp/core'
import { clean, type RepositoryRef, WITHHELD } from '../lib/index.js'
import {
  budgetInput,
  cap,
  defineTool,
  entry,
  type GithubDeps,
  github,
  judgedWhere,
  list,
  listed,
  listedWithin,
  login,
  more,
  number,
  overwrite,
  page,
  pageInfo,
  perPage,
  query,
  read,
  repo,
  repoOfUrl,
  signalOf,
  url,
  userText,
  write,
  written,
} from './shared.js'

const toolset = 'issues'
const issueNumber = number.describe('Issue number')
const labels = z.array(z.string()).max(100)
const assignees = z.array(z.string()).max(10)

interface IssueLike {
  number: number
  title: string
  state: string
  body?: string | null
  user: { login?: string } | null
  labels: Array<string | { name?: string }>
  assignees?: Array<{ login?: string }> | null
  comments: number
  created_at: string
  updated_at: string
  html_url: string
  pull_request?: unknown
  repository_url?: string
}

type Client = Awaited<ReturnType<GithubDeps['client']>>

/** An issue as the model reads it; lockdown withholds title and body of outsiders. */
export async function formatIssue(
  deps: GithubDeps,
  client: Client,
  where: RepositoryRef,
  issue: IssueLike,
  signal: AbortSignal,
  withBody: boolean,
) {
  const author = login(issue.user)
  where = judgedWhere(deps, issue, where)
  const title = await userText(deps, client, where, author, issue.title, signal)
  return {
    number: issue.number,
    title: cap(title, 500),
    state: issue.state,
    author,
    ...(issue.pull_request ? { pullRequest: true } : {}),
    labels: issue.labels.map((label) => clean(typeof label === 'string' ? label : label.name)),
    assignees: (issue.assignees ?? []).map(login),
    comments: issue.comments,
    createdAt: issue.created_at,
    updatedAt: issue.updated_at,
    url: issue.html_url,
    ...(withBody
      ? {
          body:
            title === WITHHELD
              ? WITHHELD
              : cap(await userText(deps, client, where, author, issue.body, signal), 20_000),
        }
      : {}),
  }
}

export const listIssues = defineTool({
  name: 'list_issues',
  title: 'List issues',
  description: 'Issues of a repo (PRs marked), no bodies.',
  toolset,
  input: {
    repo,
    state: z.enum(['open', 'closed', 'all']).default('open').describe('State'),
    labels: labels.optional().describe('Labels (all)'),
    sort: z.enum(['created', 'updated', 'comments']).default('created').describe('Newest first by'),
    since: z.string().optional().describe('ISO 8601'),
    page,
    per_page: perPage,
    ...budgetInput,
  },
  output: { issues: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const {
      repo: { owner, repo },
      state,
      labels,
      sort,
      since,
      page,
      per_page,
    } = args
    const budget = openBudget('list_issues', args)
    const client = await github(deps, auth)
    const response = await client.octokit.rest.issues.listForRepo({
      owner,
      repo,
      // GitHub's defaults (open, newest created first) are not sent: the request is the plain one.
      ...(state === 'open' ? {} : { state }),
      ...(sort === 'created' ? {} : { sort }),
      page,
      per_page,
      ...(labels?.length ? { labels: labels.join(',') } : {}),
      ...(since ? { since } : {}),
      ...signalOf(signal),
    })
    const issues = await Promise.all(
      response.data.map((issue) => formatIssue(deps, client, { owner, repo }, issue, signal, false)),
    )
    return listedWithin(
      budget,
      'issues',
      { issues, ...pageInfo(response.headers) },
      { untrusted: true, page },
    )
  },
})

export const getIssue = defineTool({
  name: 'get_issue',
  title: 'Get issue',
  description: 'One issue or PR with its body.',
  toolset,
  input: { repo, issue_number: issueNumber },
  output: { issue: entry() },
  annotations: read,
  async run({ repo: { owner, repo }, issue_number }, { deps, auth, signal }) {
    const client = await github(deps, auth)
    const { data } = await client.octokit.rest.issues.get({ owner, repo, issue_number, ...signalOf(signal) })
    return listed(
      { issue: await formatIssue(deps, client, { owner, repo }, data, signal, true) },
      { untrusted: true },
    )
  },
})

export const searchIssues = defineTool({
  name: 'search_issues',
  title: 'Search issues',
  description: 'Search issues and PRs ("repo:o/r is:open crash").',
  toolset,
  input: { query: query.describe('Query'), page, per_page: perPage, ...budgetInput },
  output: {
    total: z.number().int(),
    issues: list(),
    ...more,
    ...budgetOutput,
  },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const { query, page, per_page } = args
    const budget = openBudget('search_issues', args)
    const client = await github(deps, auth)
    const response = await client.octokit.rest.search.issuesAndPullRequests({
      q: query,
      page,
      per_page,
      ...signalOf(signal),
    })
    const issues = await Promise.all(
      response.data.items.map(async (issue) => {
        const where = repoOfUrl(issue.repository_url)
        return {
          repository: `${where.owner}/${where.repo}`,
          ...(await formatIssue(deps, client, where, issue, signal, false)),
        }
      }),
    )
    return listedWithin(
      budget,
      'issues',
      { total: response.data.total_count, issues, ...pageInfo(response.headers) },
      { untrusted: true, page },
    )
  },
})

export const createIssue = defineTool({
  name: 'create_issue',
  title: 'Create issue',
  description: 'Open an issue.',
  toolset,
  input: {
    repo,
    title: z.string().describe('Title'),
    body: z.string().optional().describe('Markdown body'),
    labels: labels.optional().describe('Labels'),
    assignees: assignees.optional().describe('Logins'),
    milestone: z.number().int().min(1).optional().describe('Milestone'),
  },
  output: { number: z.number().int(), url },
  annotations: write,
  async run({ repo: { owner, repo }, title, body, labels, assignees, milestone }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.issues.create({
      owner,
      repo,
      title,
      ...(body === undefined ? {} : { body }),
      ...(labels ? { labels } : {}),
      ...(assignees ? { assignees } : {}),
      ...(milestone ? { milestone } : {}),
      ...signalOf(signal),
    })
    return written({ number: data.number, url: data.html_url })
  },
})

export const updateIssue = defineTool({
  name: 'update_issue',
  title: 'Update issue',
  description: 'Edit an issue; given fields replace.',
  toolset,
  input: {
    repo,
    issue_number: issueNumber,
    title: z.string().optional().describe('Title'),
    body: z.string().optional().describe('Markdown body'),
    state: z.enum(['open', 'closed']).optional().describe('State'),
    state_reason: z.enum(['completed', 'not_planned', 'reopened']).optional().describe('Reason'),
    labels: labels.optional().describe('Labels'),
    assignees: assignees.optional().describe('Logins'),
    milestone: z.number().int().min(1).optional().describe('Milestone'),
    type: z.string().optional().describe('Issue type (list_issue_types)'),
  },
  output: { number: z.number().int(), state: z.string(), url },
  annotations: overwrite,
  async run({ repo: { owner, repo }, issue_number, ...changes }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const fields = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined))
    const { data } = await octokit.rest.issues.update({
      owner,
      repo,
      issue_number,
      ...fields,
      ...signalOf(signal),
    })
    return written({ number: data.number, state: data.state, url: data.html_url })
  },
})

export const addIssueComment = defineTool({
  name: 'add_issue_comment',
  title: 'Add comment',
  description: 'Comment on an issue or PR.',
  toolset,
  input: { repo, issue_number: issueNumber, body: z.string().describe('Markdown') },
  output: { id: z.number().int(), url },
  annotations: write,
  async run({ repo: { owner, repo }, issue_number, body }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.issues.createComment({
      owner,
      repo,
      issue_number,
      body,
      ...signalOf(signal),
    })
    return written({ id: data.id, url: data.html_url })
  },
})

export const listIssueComments = defineTool({
  name: 'list_issue_comments',
  title: 'List comments',
  description: 'Comments of an issue or PR, oldest first.',
  toolset,
  input: { repo, issue_number: issueNumber, page, per_page: perPage, ...budgetInput },
  output: { comments: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const {
      repo: { owner, repo },
      issue_number,
      page,
      per_page,
    } = args
    const budget = openBudget('list_issue_comments', args)
    const client = await github(deps, auth)
    const response = await client.octokit.rest.issues.listComments({
      owner,
      repo,
      issue_number,
      page,
      per_page,
      ...signalOf(signal),
    })
    const comments = await Promise.all(
      response.data.map(async (comment) => ({
        id: comment.id,
        author: login(comment.user),
        createdAt: comment.created_at,
        body: cap(
          await userText(
            deps,
            client,
            judgedWhere(deps, comment, { owner, repo }),
            login(comment.user),
            comment.body,
            signal,
          ),
          10_000,
        ),
      })),
    )
    return listedWithin(
      budget,
      'comments',
      { comments, ...pageInfo(response.headers) },
      { untrusted: true, page },
    )
  },
})
