import { budgetOutput, openBudget, z } from '@keel-mcp/core'
import { cursorPageWithin } from './discussions.js'
import {
  budgetInput,
  cap,
  defineTool,
  github,
  graphql,
  list,
  number,
  read,
  remove,
  repo,
  signalOf,
  url,
  userText,
  write,
  written,
} from './shared.js'

// Review threads (resolution state only exists in GraphQL) and pending reviews: create one,
// add line comments to it over several calls, then submit or delete it.

const toolset = 'pull_requests'
const pullNumber = number.describe('Pull number')
const reviewId = number.describe('Review id (create_pending_review)')

const THREADS = `query($owner:String!,$name:String!,$number:Int!,$first:Int!,$after:String){repository(owner:$owner,name:$name){
pullRequest(number:$number){reviewThreads(first:$first,after:$after){nodes{id isResolved isOutdated path line
comments(first:30){totalCount nodes{databaseId author{login} body createdAt}}} pageInfo{hasNextPage endCursor}}}}}`

interface Thread {
  id: string
  isResolved: boolean
  isOutdated: boolean
  path: string
  line: number | null
  comments: {
    totalCount: number
    nodes: Array<{ databaseId: number; author: { login: string } | null; body: string; createdAt: string }>
  }
}

export const getPullRequestReviewThreads = defineTool({
  name: 'get_pull_request_review_threads',
  title: 'PR review threads',
  description: 'Review threads of a PR: resolved or not, with their comments.',
  toolset,
  input: {
    repo,
    pull_number: pullNumber,
    unresolved_only: z.boolean().default(false).describe('Unresolved only'),
    first: z.number().int().min(1).max(100).default(30).describe('Per page'),
    after: z.string().optional().describe('From nextCursor'),
    ...budgetInput,
  },
  output: { threads: list(), nextCursor: z.string().optional(), ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const {
      repo: { owner, repo },
      pull_number,
      unresolved_only,
      first,
      after,
    } = args
    const budget = openBudget('get_pull_request_review_threads', args)
    const client = await github(deps, auth)
    const data = await graphql<{
      repository: {
        pullRequest: {
          reviewThreads: { nodes: Thread[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } }
        }
      }
    }>(client.octokit, THREADS, { owner, name: repo, number: pull_number, first, after }, signal)
    const { nodes, pageInfo } = data.repository.pullRequest.reviewThreads
    const threads = await Promise.all(
      nodes
        .filter((thread) => !unresolved_only || !thread.isResolved)
        .map(async (thread) => ({
          id: thread.id,
          resolved: thread.isResolved,
          outdated: thread.isOutdated,
          path: thread.path,
          line: thread.line,
          comments: await Promise.all(
            thread.comments.nodes.map(async (comment) => ({
              id: comment.databaseId,
              author: comment.author?.login ?? null,
              body: cap(
                await userText(
                  deps,
                  client,
                  { owner, repo },
                  comment.author?.login ?? null,
                  comment.body,
                  signal,
                ),
                5000,
              ),
            })),
          ),
          ...(thread.comments.totalCount > thread.comments.nodes.length
            ? { moreComments: thread.comments.totalCount - thread.comments.nodes.length }
            : {}),
        })),
    )
    return cursorPageWithin(budget, 'threads', { threads }, pageInfo)
  },
})

export const replyToReviewComment = defineTool({
  name: 'reply_to_review_comment',
  title: 'Reply to review comment',
  description: 'Reply in the thread of a PR review comment.',
  toolset,
  input: {
    repo,
    pull_number: pullNumber,
    comment_id: number.describe('Review comment id'),
    body: z.string().min(1).describe('Markdown reply'),
  },
  output: { id: z.number().int(), url },
  annotations: write,
  async run({ repo: { owner, repo }, pull_number, comment_id, body }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.pulls.createReplyForReviewComment({
      owner,
      repo,
      pull_number,
      comment_id,
      body,
      ...signalOf(signal),
    })
    return written({ id: data.id, url: data.html_url })
  },
})

export const createPendingReview = defineTool({
  name: 'create_pending_review',
  title: 'Start review',
  description: 'Start a pending review; add_pending_review_comment, then submit_pending_review.',
  toolset,
  input: { repo, pull_number: pullNumber, commit_id: z.string().optional().describe('Reviewed SHA') },
  output: { reviewId: z.number().int(), state: z.string() },
  annotations: write,
  async run({ repo: { owner, repo }, pull_number, commit_id }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    // No `event`: GitHub keeps the review pending, visible only to its author until submitted.
    const { data } = await octokit.rest.pulls.createReview({
      owner,
      repo,
      pull_number,
      ...(commit_id ? { commit_id } : {}),
      ...signalOf(signal),
    })
    return written({ reviewId: data.id, state: data.state })
  },
})

export const addPendingReviewComment = defineTool({
  name: 'add_pending_review_comment',
  title: 'Add review comment',
  description: 'Add a line (or range) comment to your pending review.',
  toolset,
  input: {
    repo,
    pull_number: pullNumber,
    review_id: reviewId,
    path: z.string().min(1).describe('File path'),
    line: z.number().int().min(1).describe('Line'),
    start_line: z.number().int().min(1).optional().describe('Range start'),
    side: z.enum(['RIGHT', 'LEFT']).default('RIGHT').describe('RIGHT: new, LEFT: old'),
    body: z.string().min(1).describe('Markdown'),
  },
  output: { threadId: z.string() },
  annotations: write,
  async run(
    { repo: { owner, repo }, pull_number, review_id, path, line, start_line, side, body },
    { deps, auth, signal },
  ) {
    const { octokit } = await github(deps, auth)
    const { data: review } = await octokit.rest.pulls.getReview({
      owner,
      repo,
      pull_number,
      review_id,
      ...signalOf(signal),
    })
    const data = await graphql<{ addPullRequestReviewThread: { thread: { id: string } } }>(
      octokit,
      `mutation($review:ID!,$path:String!,$body:String!,$line:Int!,$side:DiffSide!,$start:Int){
addPullRequestReviewThread(input:{pullRequestReviewId:$review,path:$path,body:$body,line:$line,side:$side,startLine:$start,startSide:$side}){thread{id}}}`,
      { review: review.node_id, path, body, line, side, start: start_line ?? null },
      signal,
    )
    return written({ threadId: data.addPullRequestReviewThread.thread.id })
  },
})

export const submitPendingReview = defineTool({
  name: 'submit_pending_review',
  title: 'Submit review',
  description: 'Submit your pending review with a verdict.',
  toolset,
  input: {
    repo,
    pull_number: pullNumber,
    review_id: reviewId,
    event: z.enum(['APPROVE', 'REQUEST_CHANGES', 'COMMENT']).describe('Verdict'),
    body: z.string().optional().describe('Summary'),
  },
  output: { reviewId: z.number().int(), state: z.string(), url },
  annotations: write,
  async run({ repo: { owner, repo }, pull_number, review_id, event, body }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.pulls.submitReview({
      owner,
      repo,
      pull_number,
      review_id,
      event,
      ...(body ? { body } : {}),
      ...signalOf(signal),
    })
    return written({ reviewId: data.id, state: data.state, url: data.html_url })
  },
})

export const deletePendingReview = defineTool({
  name: 'delete_pending_review',
  title: 'Discard review',
  description: 'Delete your pending review and its comments.',
  toolset,
  input: { repo, pull_number: pullNumber, review_id: reviewId },
  output: { reviewId: z.number().int() },
  annotations: remove,
  async run({ repo: { owner, repo }, pull_number, review_id }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    await octokit.rest.pulls.deletePendingReview({ owner, repo, pull_number, review_id, ...signalOf(signal) })
    return written({ reviewId: review_id })
  },
})
