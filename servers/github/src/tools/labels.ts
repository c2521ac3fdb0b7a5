import { z } from '@keel-mcp/core'
import { clean } from '../lib/index.js'
import {
  defineTool,
  entry,
  github,
  list,
  listed,
  more,
  page,
  pageInfo,
  perPage,
  read,
  remove,
  repo,
  result,
  signalOf,
  write,
  written,
} from './shared.js'

const toolset = 'labels'
const name = z.string().min(1).max(100).describe('Label name')
const color = z
  .string()
  .regex(/^#?[0-9a-fA-F]{6}$/, 'must be 6 hex digits')
  // Sent as given (GitHub keeps the case it is sent in), without the `#`.
  .transform((value) => value.replace(/^#/, ''))
  .describe('Hex colour')

const labelOf = (label: { name: string; color: string; description?: string | null; default?: boolean }) => ({
  name: clean(label.name),
  color: label.color,
  description: clean(label.description),
})

export const listLabels = defineTool({
  name: 'list_labels',
  title: 'List labels',
  description: "A repo's labels.",
  toolset,
  input: { repo, page, per_page: perPage },
  output: { labels: list(), ...more },
  annotations: read,
  async run({ repo: { owner, repo }, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.issues.listLabelsForRepo({
      owner,
      repo,
      page,
      per_page,
      ...signalOf(signal),
    })
    return listed({ labels: response.data.map(labelOf), ...pageInfo(response.headers) }, { page })
  },
})

export const getLabel = defineTool({
  name: 'get_label',
  title: 'Get label',
  description: 'One label.',
  toolset,
  input: { repo, name },
  output: { label: entry() },
  annotations: read,
  async run({ repo: { owner, repo }, name }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.issues.getLabel({ owner, repo, name, ...signalOf(signal) })
    return result({ label: labelOf(data) })
  },
})

export const createLabel = defineTool({
  name: 'create_label',
  title: 'Create label',
  description: 'Create a repo label.',
  toolset,
  input: { repo, name, color, description: z.string().max(100).optional().describe('Description') },
  output: { label: entry() },
  annotations: write,
  async run({ repo: { owner, repo }, name, color, description }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.issues.createLabel({
      owner,
      repo,
      name,
      color,
      ...(description === undefined ? {} : { description }),
      ...signalOf(signal),
    })
    return written({ label: labelOf(data) })
  },
})

export const updateLabel = defineTool({
  name: 'update_label',
  title: 'Update label',
  description: 'Rename or recolour a label; given fields replace.',
  toolset,
  input: {
    repo,
    name,
    new_name: z.string().min(1).max(100).optional().describe('New name'),
    color: color.optional().describe('Hex colour'),
    description: z.string().max(100).optional().describe('Description'),
  },
  output: { label: entry() },
  annotations: { ...write, destructiveHint: true, idempotentHint: true },
  async run({ repo: { owner, repo }, name, new_name, color, description }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.issues.updateLabel({
      owner,
      repo,
      name,
      ...(new_name ? { new_name } : {}),
      ...(color ? { color } : {}),
      ...(description === undefined ? {} : { description }),
      ...signalOf(signal),
    })
    return written({ label: labelOf(data) })
  },
})

export const deleteLabel = defineTool({
  name: 'delete_label',
  title: 'Delete label',
  description: 'Delete a label from the repo and all its issues.',
  toolset,
  input: { repo, name },
  output: { deleted: z.string() },
  annotations: remove,
  async run({ repo: { owner, repo }, name }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    await octokit.rest.issues.deleteLabel({ owner, repo, name, ...signalOf(signal) })
    return written({ deleted: name })
  },
})
