import { ToolError, z } from '@keel-mcp/core'
import { clean } from '../lib/index.js'
import { confirmDestructive } from './confirm.js'
import { defineTool, github, number, overwrite, repo, signalOf, url, write, written } from './shared.js'

const toolset = 'pull_requests'
const pullNumber = number.describe('Pull number')

export const createPullRequest = defineTool({
  name: 'create_pull_request',
  title: 'Create PR',
  description: 'Open a PR from head into base.',
  toolset,
  input: {
    repo,
    title: z.string().describe('Title'),
    head: z.string().describe('From branch (user:branch for forks)'),
    base: z.string().describe('Target branch'),
    body: z.string().optional().describe('Markdown body'),
    draft: z.boolean().default(false).describe('Draft'),
  },
  output: { number: z.number().int(), url },
  annotations: write,
  async run({ repo: { owner, repo }, title, head, base, body, draft }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.pulls.create({
      owner,
      repo,
      title,
      head,
      base,
      draft,
      ...(body === undefined ? {} : { body }),
      ...signalOf(signal),
    })
    return written({ number: data.number, url: data.html_url })
  },
})

export const createPullRequestReview = defineTool({
  name: 'create_pull_request_review',
  title: 'Review PR',
  description: 'Approve, request changes or comment, with line comments.',
  toolset,
  input: {
    repo,
    pull_number: pullNumber,
    event: z.enum(['APPROVE', 'REQUEST_CHANGES', 'COMMENT']).describe('Verdict'),
    body: z.string().optional().describe('Summary'),
    commit_id: z.string().optional().describe('Reviewed SHA'),
    comments: z
      .array(
        z.object({
          path: z.string(),
          line: z.number().int().min(1).describe('Line'),
          start_line: z.number().int().min(1).optional().describe('Range start'),
          body: z.string(),
        }),
      )
      .max(100)
      .optional()
      .describe('Line comments'),
  },
  output: { id: z.number().int(), state: z.string(), url },
  annotations: write,
  async run(
    { repo: { owner, repo }, pull_number, event, body, commit_id, comments },
    { deps, auth, signal },
  ) {
    if (event === 'REQUEST_CHANGES' && !body && !comments?.length) {
      throw new ToolError(
        'invalid_argument',
        'REQUEST_CHANGES needs a body or line comments saying what to change',
      )
    }
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.pulls.createReview({
      owner,
      repo,
      pull_number,
      event,
      ...(body === undefined ? {} : { body }),
      ...(commit_id ? { commit_id } : {}),
      ...(comments?.length ? { comments } : {}),
      ...signalOf(signal),
    })
    return written({ id: data.id, state: data.state, url: data.html_url })
  },
})

export const mergePullRequest = defineTool({
  name: 'merge_pull_request',
  title: 'Merge PR',
  description: 'Merge a PR; sha: only if head is still that.',
  toolset,
  input: {
    repo,
    pull_number: pullNumber,
    merge_method: z.enum(['merge', 'squash', 'rebase']).describe('Method'),
    commit_title: z.string().optional().describe('Title'),
    commit_message: z.string().optional().describe('Message'),
    sha: z.string().optional().describe('Expected head SHA'),
  },
  output: { merged: z.boolean(), sha: z.string(), message: z.string() },
  annotations: overwrite,
  async run(
    { repo: { owner, repo }, pull_number, merge_method, commit_title, commit_message, sha },
    { deps, auth, signal, client },
  ) {
    const { octokit } = await github(deps, auth)
    await confirmDestructive(client, `Merge PR #${pull_number} of ${owner}/${repo} (${merge_method})?`)
    const { data } = await octokit.rest.pulls.merge({
      owner,
      repo,
      pull_number,
      merge_method,
      ...(commit_title ? { commit_title } : {}),
      ...(commit_message ? { commit_message } : {}),
      ...(sha ? { sha } : {}),
      ...signalOf(signal),
    })
    return written({ merged: data.merged, sha: data.sha, message: clean(data.message) })
  },
})

export const updatePullRequestBranch = defineTool({
  name: 'update_pull_request_branch',
  title: 'Update PR branch',
  description: 'Merge base into the PR branch.',
  toolset,
  input: {
    repo,
    pull_number: pullNumber,
    expected_head_sha: z.string().optional().describe('Expected head SHA'),
  },
  output: { message: z.string() },
  annotations: write,
  async run({ repo: { owner, repo }, pull_number, expected_head_sha }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.pulls.updateBranch({
      owner,
      repo,
      pull_number,
      ...(expected_head_sha ? { expected_head_sha } : {}),
      ...signalOf(signal),
    })
    return written({ message: clean(data.message) })
  },
})
