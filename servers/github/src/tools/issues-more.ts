import { z } from '@keel-mcp/core'
import { clean } from '../lib/index.js'
import { formatIssue } from './issues.js'
import {
  defineTool,
  github,
  list,
  listed,
  more,
  number,
  page,
  pageInfo,
  perPage,
  read,
  remove,
  repo,
  signalOf,
  write,
  written,
} from './shared.js'

const toolset = 'issues'
const issueNumber = number.describe('Issue number')
const subIssueId = number.describe('Sub-issue id (not number)')

export const listSubIssues = defineTool({
  name: 'list_sub_issues',
  title: 'List sub-issues',
  description: 'Sub-issues of an issue, in order.',
  toolset,
  input: { repo, issue_number: issueNumber, page, per_page: perPage },
  output: { subIssues: list(), ...more },
  annotations: read,
  async run({ repo: { owner, repo }, issue_number, page, per_page }, { deps, auth, signal }) {
    const client = await github(deps, auth)
    const response = await client.octokit.rest.issues.listSubIssues({
      owner,
      repo,
      issue_number,
      page,
      per_page,
      ...signalOf(signal),
    })
    const subIssues = await Promise.all(
      response.data.map(async (issue) => ({
        id: issue.id,
        ...(await formatIssue(deps, client, { owner, repo }, issue, signal, false)),
      })),
    )
    return listed({ subIssues, ...pageInfo(response.headers) }, { untrusted: true, page })
  },
})

const subIssue = {
  repo,
  issue_number: issueNumber.describe('Parent issue number'),
  sub_issue_id: subIssueId,
}

export const addSubIssue = defineTool({
  name: 'add_sub_issue',
  title: 'Add sub-issue',
  description: 'Make an issue a sub-issue of another (id from get_issue).',
  toolset,
  input: { ...subIssue, replace_parent: z.boolean().default(false).describe('Move from its current parent') },
  output: { parent: z.number().int(), subIssueId: z.number().int() },
  annotations: { ...write, idempotentHint: true },
  async run({ repo: { owner, repo }, issue_number, sub_issue_id, replace_parent }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    await octokit.rest.issues.addSubIssue({
      owner,
      repo,
      issue_number,
      sub_issue_id,
      replace_parent,
      ...signalOf(signal),
    })
    return written({ parent: issue_number, subIssueId: sub_issue_id })
  },
})

export const removeSubIssue = defineTool({
  name: 'remove_sub_issue',
  title: 'Remove sub-issue',
  description: 'Detach a sub-issue from its parent.',
  toolset,
  input: subIssue,
  output: { parent: z.number().int(), subIssueId: z.number().int() },
  annotations: remove,
  async run({ repo: { owner, repo }, issue_number, sub_issue_id }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    await octokit.rest.issues.removeSubIssue({ owner, repo, issue_number, sub_issue_id, ...signalOf(signal) })
    return written({ parent: issue_number, subIssueId: sub_issue_id })
  },
})

export const reprioritizeSubIssue = defineTool({
  name: 'reprioritize_sub_issue',
  title: 'Reorder sub-issue',
  description: 'Move a sub-issue before or after another.',
  toolset,
  input: {
    ...subIssue,
    after_id: number.optional().describe('Place after this sub-issue id'),
    before_id: number.optional().describe('Place before this sub-issue id'),
  },
  output: { parent: z.number().int(), subIssueId: z.number().int() },
  annotations: { ...write, idempotentHint: true },
  async run(
    { repo: { owner, repo }, issue_number, sub_issue_id, after_id, before_id },
    { deps, auth, signal },
  ) {
    const { octokit } = await github(deps, auth)
    await octokit.rest.issues.reprioritizeSubIssue({
      owner,
      repo,
      issue_number,
      sub_issue_id,
      ...(after_id ? { after_id } : {}),
      ...(before_id ? { before_id } : {}),
      ...signalOf(signal),
    })
    return written({ parent: issue_number, subIssueId: sub_issue_id })
  },
})

export const listIssueTypes = defineTool({
  name: 'list_issue_types',
  title: 'List issue types',
  description: "An organisation's issue types, for update_issue's type.",
  toolset,
  input: { org: z.string().min(1).describe('Organisation') },
  output: { types: list() },
  annotations: read,
  async run({ org }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.orgs.listIssueTypes({ org, ...signalOf(signal) })
    return listed({
      types: (data ?? []).flatMap((type) =>
        type
          ? [
              {
                id: type.id,
                name: clean(type.name),
                description: clean(type.description),
              },
            ]
          : [],
      ),
    })
  },
})

const labelNames = z.array(z.string().min(1)).min(1).max(100)

export const addIssueLabels = defineTool({
  name: 'add_issue_labels',
  title: 'Add labels',
  description: 'Add labels to an issue or PR, keeping its others.',
  toolset,
  input: { repo, issue_number: issueNumber, labels: labelNames.describe('Label names') },
  output: { labels: z.array(z.string()) },
  annotations: { ...write, idempotentHint: true },
  async run({ repo: { owner, repo }, issue_number, labels }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.issues.addLabels({
      owner,
      repo,
      issue_number,
      labels,
      ...signalOf(signal),
    })
    return written({ labels: data.map((label) => clean(label.name)) })
  },
})

export const removeIssueLabel = defineTool({
  name: 'remove_issue_label',
  title: 'Remove label',
  description: 'Remove one label from an issue or PR.',
  toolset,
  input: { repo, issue_number: issueNumber, label: z.string().min(1).describe('Label name') },
  output: { labels: z.array(z.string()) },
  annotations: remove,
  async run({ repo: { owner, repo }, issue_number, label }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.issues.removeLabel({
      owner,
      repo,
      issue_number,
      name: label,
      ...signalOf(signal),
    })
    return written({ labels: data.map((entry) => clean(entry.name)) })
  },
})
