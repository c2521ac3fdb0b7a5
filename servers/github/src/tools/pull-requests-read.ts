import { budgetOutput, openBudget, z } from '@keel-mcp/core'
import { clean, WITHHELD } from '../lib/index.js'
import {
  budgetInput,
  cap,
  defineTool,
  entry,
  github,
  judgedWhere,
  list,
  listed,
  listedWithin,
  login,
  more,
  number,
  page,
  pageInfo,
  perPage,
  read,
  repo,
  result,
  signalOf,
  userText,
} from './shared.js'

const toolset = 'pull_requests'
const pullNumber = number.describe('Pull number')

export const listPullRequests = defineTool({
  name: 'list_pull_requests',
  title: 'List PRs',
  description: 'PRs of a repo, no bodies.',
  toolset,
  input: {
    repo,
    state: z.enum(['open', 'closed', 'all']).default('open').describe('State'),
    head: z.string().optional().describe('user:branch'),
    base: z.string().optional().describe('Base branch'),
    page,
    per_page: perPage,
    ...budgetInput,
  },
  output: { pullRequests: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const {
      repo: { owner, repo },
      state,
      head,
      base,
      page,
      per_page,
    } = args
    const budget = openBudget('list_pull_requests', args)
    const client = await github(deps, auth)
    const response = await client.octokit.rest.pulls.list({
      owner,
      repo,
      state,
      page,
      per_page,
      ...(head ? { head } : {}),
      ...(base ? { base } : {}),
      ...signalOf(signal),
    })
    const pullRequests = await Promise.all(
      response.data.map(async (pull) => ({
        number: pull.number,
        title: cap(
          await userText(
            deps,
            client,
            judgedWhere(deps, pull, { owner, repo }),
            login(pull.user),
            pull.title,
            signal,
          ),
          500,
        ),
        state: pull.state,
        draft: pull.draft ?? false,
        author: login(pull.user),
        head: pull.head.ref,
        base: pull.base.ref,
        updatedAt: pull.updated_at,
        url: pull.html_url,
      })),
    )
    return listedWithin(
      budget,
      'pullRequests',
      { pullRequests, ...pageInfo(response.headers) },
      { untrusted: true, page },
    )
  },
})

export const getPullRequest = defineTool({
  name: 'get_pull_request',
  title: 'Get PR',
  description: 'One PR: body, branches, head SHA, mergeable. Diff: get_pull_request_diff.',
  toolset,
  input: { repo, pull_number: pullNumber },
  output: { pullRequest: entry() },
  annotations: read,
  async run({ repo: { owner, repo }, pull_number }, { deps, auth, signal }) {
    const client = await github(deps, auth)
    const { data } = await client.octokit.rest.pulls.get({ owner, repo, pull_number, ...signalOf(signal) })
    const author = login(data.user)
    const where = judgedWhere(deps, data, { owner, repo })
    const title = await userText(deps, client, where, author, data.title, signal)
    return listed(
      {
        pullRequest: {
          number: data.number,
          title: cap(title, 500),
          state: data.state,
          draft: data.draft ?? false,
          merged: data.merged,
          mergeable: data.mergeable ?? null,
          mergeableState: data.mergeable_state,
          author,
          head: { ref: data.head.ref, sha: data.head.sha, repository: data.head.repo?.full_name ?? null },
          base: { ref: data.base.ref, sha: data.base.sha },
          commits: data.commits,
          additions: data.additions,
          deletions: data.deletions,
          changedFiles: data.changed_files,
          labels: data.labels.map((label) => clean(label.name)),
          url: data.html_url,
          body:
            title === WITHHELD
              ? WITHHELD
              : cap(await userText(deps, client, where, author, data.body, signal), 20_000),
        },
      },
      { untrusted: true },
    )
  },
})

export const getPullRequestFiles = defineTool({
  name: 'get_pull_request_files',
  title: 'Get PR files',
  description: 'Changed files of a PR with capped patches.',
  toolset,
  input: {
    repo,
    pull_number: pullNumber,
    include_patch: z.boolean().default(true).describe('Include patches'),
    page,
    per_page: perPage,
    ...budgetInput,
  },
  output: { files: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const {
      repo: { owner, repo },
      pull_number,
      include_patch,
      page,
      per_page,
    } = args
    const budget = openBudget('get_pull_request_files', args)
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.pulls.listFiles({
      owner,
      repo,
      pull_number,
      page,
      per_page,
      ...signalOf(signal),
    })
    return listedWithin(
      budget,
      'files',
      {
        files: response.data.map((file) => ({
          path: file.filename,
          status: file.status,
          additions: file.additions,
          deletions: file.deletions,
          ...(file.previous_filename ? { previousPath: file.previous_filename } : {}),
          ...(include_patch && file.patch ? { patch: cap(clean(file.patch), 8_000) } : {}),
        })),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})

const MAX_CHECKS = 300

export const getPullRequestStatus = defineTool({
  name: 'get_pull_request_status',
  title: 'Get PR checks',
  description: 'CI checks and statuses of a PR head. Failures: get_job_logs.',
  toolset,
  input: { repo, pull_number: pullNumber },
  output: { sha: z.string(), state: z.string(), checks: list(), statuses: list() },
  annotations: read,
  async run({ repo: { owner, repo }, pull_number }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data: pull } = await octokit.rest.pulls.get({ owner, repo, pull_number, ...signalOf(signal) })
    const ref = pull.head.sha
    const checks: Array<Record<string, unknown>> = []
    let totalChecks = 0
    for await (const response of octokit.paginate.iterator(octokit.rest.checks.listForRef, {
      owner,
      repo,
      ref,
      per_page: 100,
      ...signalOf(signal),
    })) {
      totalChecks = Math.max(totalChecks, (response.data as { total_count?: number }).total_count ?? 0)
      for (const run of response.data) {
        checks.push({
          // Job and check names come from a repository's workflow files: text its users wrote.
          name: clean(run.name),
          status: run.status,
          conclusion: run.conclusion,
          url: run.html_url,
          ...(run.details_url?.includes('/actions/runs/') ? { detailsUrl: run.details_url } : {}),
        })
      }
      if (checks.length >= MAX_CHECKS) break
    }
    const { data: combined } = await octokit.rest.repos.getCombinedStatusForRef({
      owner,
      repo,
      ref,
      per_page: 100,
      ...signalOf(signal),
    })
    const statuses = combined.statuses.map((status) => ({
      context: clean(status.context),
      state: status.state,
      description: cap(clean(status.description), 300),
      url: status.target_url,
    }))
    const failed =
      checks.some((check) =>
        ['failure', 'timed_out', 'cancelled', 'action_required'].includes(String(check.conclusion)),
      ) || statuses.some((status) => status.state === 'failure' || status.state === 'error')
    const pending =
      checks.some((check) => check.status !== 'completed') ||
      statuses.some((status) => status.state === 'pending')
    const state = failed
      ? 'failure'
      : pending
        ? 'pending'
        : checks.length || statuses.length
          ? 'success'
          : 'none'
    // Both lists are capped: say so rather than let a partial list pass for the whole.
    const notices: string[] = []
    const shownChecks = Math.min(checks.length, MAX_CHECKS)
    if (Math.max(totalChecks, checks.length) > shownChecks)
      notices.push(
        `More available: ${shownChecks} of ${Math.max(totalChecks, checks.length)} check runs shown.`,
      )
    if (combined.total_count > statuses.length)
      notices.push(`More available: ${statuses.length} of ${combined.total_count} statuses shown.`)
    return result(
      { sha: ref, state, checks: checks.slice(0, MAX_CHECKS), statuses },
      { untrusted: true, ...(notices.length ? { notice: notices.join(' ') } : {}) },
    )
  },
})

export const getPullRequestComments = defineTool({
  name: 'get_pull_request_comments',
  title: 'Get PR comments',
  description: 'Line review comments of a PR.',
  toolset,
  input: { repo, pull_number: pullNumber, page, per_page: perPage, ...budgetInput },
  output: { comments: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const {
      repo: { owner, repo },
      pull_number,
      page,
      per_page,
    } = args
    const budget = openBudget('get_pull_request_comments', args)
    const client = await github(deps, auth)
    const response = await client.octokit.rest.pulls.listReviewComments({
      owner,
      repo,
      pull_number,
      page,
      per_page,
      ...signalOf(signal),
    })
    const comments = await Promise.all(
      response.data.map(async (comment) => ({
        id: comment.id,
        author: login(comment.user),
        path: comment.path,
        line: comment.line ?? comment.original_line ?? null,
        ...(comment.in_reply_to_id ? { inReplyTo: comment.in_reply_to_id } : {}),
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

export const getPullRequestReviews = defineTool({
  name: 'get_pull_request_reviews',
  title: 'Get PR reviews',
  description: 'Reviews of a PR (verdict, summary).',
  toolset,
  input: { repo, pull_number: pullNumber, page, per_page: perPage, ...budgetInput },
  output: { reviews: list(), ...more, ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const {
      repo: { owner, repo },
      pull_number,
      page,
      per_page,
    } = args
    const budget = openBudget('get_pull_request_reviews', args)
    const client = await github(deps, auth)
    const response = await client.octokit.rest.pulls.listReviews({
      owner,
      repo,
      pull_number,
      page,
      per_page,
      ...signalOf(signal),
    })
    const reviews = await Promise.all(
      response.data.map(async (review) => ({
        id: review.id,
        author: login(review.user),
        state: review.state,
        submittedAt: review.submitted_at ?? null,
        body: cap(
          await userText(
            deps,
            client,
            judgedWhere(deps, review, { owner, repo }),
            login(review.user),
            review.body,
            signal,
          ),
          10_000,
        ),
      })),
    )
    return listedWithin(
      budget,
      'reviews',
      { reviews, ...pageInfo(response.headers) },
      { untrusted: true, page },
    )
  },
})
