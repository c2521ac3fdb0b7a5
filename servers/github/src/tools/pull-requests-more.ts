import { budgetOutput, openBudget, ToolError, z } from '@keel-mcp/core'
import { clean, cleanRendered } from '../lib/index.js'
import { formatIssue } from './issues.js'
import {
  budgetInput,
  cap,
  defineTool,
  github,
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
  written,
} from './shared.js'

const toolset = 'pull_requests'
const pullNumber = number.describe('Pull number')

export const searchPullRequests = defineTool({
  name: 'search_pull_requests',
  title: 'Search PRs',
  description: 'Search pull requests ("repo:o/r is:open author:x").',
  toolset,
  input: { query: query.describe('Query (is:pr added)'), page, per_page: perPage, ...budgetInput },
  output: { total: z.number().int(), pullRequests: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const { query, page, per_page } = args
    const budget = openBudget('search_pull_requests', args)
    const client = await github(deps, auth)
    const q = /(^|\s)(is|type):pr(\s|$)/.test(query) ? query : `${query} is:pr`
    const response = await client.octokit.rest.search.issuesAndPullRequests({
      q,
      page,
      per_page,
      ...signalOf(signal),
    })
    const pullRequests = await Promise.all(
      response.data.items.map(async (item) => {
        const where = repoOfUrl(item.repository_url)
        const { pullRequest: _flag, ...rest } = await formatIssue(deps, client, where, item, signal, false)
        return { repository: `${where.owner}/${where.repo}`, ...rest }
      }),
    )
    return listedWithin(
      budget,
      'pullRequests',
      { total: response.data.total_count, pullRequests, ...pageInfo(response.headers) },
      { untrusted: true, page },
    )
  },
})

export const getPullRequestCheckRuns = defineTool({
  name: 'get_pull_request_check_runs',
  title: 'PR check runs',
  description: 'Check runs of a PR head, with output summaries; page through them.',
  toolset,
  input: {
    repo,
    pull_number: pullNumber,
    status: z.enum(['queued', 'in_progress', 'completed']).optional().describe('Status'),
    page,
    per_page: perPage,
  },
  output: { sha: z.string(), total: z.number().int(), checkRuns: list(), ...more },
  annotations: read,
  async run({ repo: { owner, repo }, pull_number, status, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data: pull } = await octokit.rest.pulls.get({ owner, repo, pull_number, ...signalOf(signal) })
    const response = await octokit.rest.checks.listForRef({
      owner,
      repo,
      ref: pull.head.sha,
      page,
      per_page,
      ...(status ? { status } : {}),
      ...signalOf(signal),
    })
    return listed(
      {
        sha: pull.head.sha,
        total: response.data.total_count,
        checkRuns: response.data.check_runs.map((run) => ({
          id: run.id,
          name: clean(run.name),
          status: run.status,
          conclusion: run.conclusion,
          app: run.app?.slug ?? null,
          title: run.output?.title ? cap(clean(run.output.title), 300) : null,
          summary: run.output?.summary ? cap(cleanRendered(run.output.summary), 2000) : null,
          startedAt: run.started_at,
          completedAt: run.completed_at,
          url: run.html_url,
        })),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})

export const listPullRequestCommits = defineTool({
  name: 'list_pull_request_commits',
  title: 'PR commits',
  description: 'Commits of a PR, oldest first.',
  toolset,
  input: { repo, pull_number: pullNumber, page, per_page: perPage, ...budgetInput },
  output: { commits: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const {
      repo: { owner, repo },
      pull_number,
      page,
      per_page,
    } = args
    const budget = openBudget('list_pull_request_commits', args)
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.pulls.listCommits({
      owner,
      repo,
      pull_number,
      page,
      per_page,
      ...signalOf(signal),
    })
    return listedWithin(
      budget,
      'commits',
      {
        commits: response.data.map((entry) => ({
          sha: entry.sha,
          message: cap(clean(entry.commit.message), 2000),
          author: login(entry.author) ?? entry.commit.author?.name ?? null,
          date: entry.commit.author?.date ?? null,
        })),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})

export const updatePullRequest = defineTool({
  name: 'update_pull_request',
  title: 'Update PR',
  description: 'Edit a PR: title, body, base, state, draft; given fields replace.',
  toolset,
  input: {
    repo,
    pull_number: pullNumber,
    title: z.string().optional().describe('Title'),
    body: z.string().optional().describe('Markdown body'),
    base: z.string().optional().describe('New base branch'),
    state: z.enum(['open', 'closed']).optional().describe('State'),
    draft: z.boolean().optional().describe('true: to draft; false: ready'),
  },
  output: { number: z.number().int(), state: z.string(), draft: z.boolean(), url },
  annotations: overwrite,
  async run({ repo: { owner, repo }, pull_number, draft, ...changes }, { deps, auth, signal }) {
    const fields = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined))
    if (!Object.keys(fields).length && draft === undefined) {
      throw new ToolError('invalid_argument', 'Nothing to change: give title, body, base, state or draft')
    }
    const client = await github(deps, auth)
    const { octokit } = client
    let { data } = Object.keys(fields).length
      ? await octokit.rest.pulls.update({ owner, repo, pull_number, ...fields, ...signalOf(signal) })
      : await octokit.rest.pulls.get({ owner, repo, pull_number, ...signalOf(signal) })
    // REST cannot change the draft state: GraphQL's two mutations do.
    if (draft !== undefined && (data.draft ?? false) !== draft) {
      const mutation = draft ? 'convertPullRequestToDraft' : 'markPullRequestReadyForReview'
      await octokit.graphql(
        `mutation($id:ID!){${mutation}(input:{pullRequestId:$id}){pullRequest{isDraft}}}`,
        {
          id: data.node_id,
          request: { signal },
        },
      )
      data = { ...data, draft }
    }
    return written({ number: data.number, state: data.state, draft: data.draft ?? false, url: data.html_url })
  },
})
