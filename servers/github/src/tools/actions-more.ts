import { ToolError, z } from '@keel-mcp/core'
import { clean } from '../lib/index.js'
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
  repo,
  signalOf,
  write,
  written,
} from './shared.js'

const toolset = 'actions'
const runId = number.describe('Run id')

export const listWorkflows = defineTool({
  name: 'list_workflows',
  title: 'List workflows',
  description: 'Workflows of a repo (ids and files for run_workflow).',
  toolset,
  input: { repo, page, per_page: perPage },
  output: { workflows: list(), ...more },
  annotations: read,
  async run({ repo: { owner, repo }, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.actions.listRepoWorkflows({
      owner,
      repo,
      page,
      per_page,
      ...signalOf(signal),
    })
    return listed(
      {
        workflows: response.data.workflows.map((workflow) => ({
          id: workflow.id,
          name: clean(workflow.name),
          path: workflow.path,
          state: workflow.state,
        })),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})

export const runWorkflow = defineTool({
  name: 'run_workflow',
  title: 'Run workflow',
  description: 'Trigger a workflow_dispatch workflow on a ref.',
  toolset,
  input: {
    repo,
    workflow: z.string().min(1).describe('File name or id'),
    ref: z.string().min(1).describe('Branch or tag'),
    inputs: z.record(z.string(), z.string()).optional().describe('Workflow inputs'),
  },
  output: { workflow: z.string(), ref: z.string() },
  annotations: write,
  async run({ repo: { owner, repo }, workflow, ref, inputs }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    await octokit.rest.actions.createWorkflowDispatch({
      owner,
      repo,
      workflow_id: /^\d+$/.test(workflow) ? Number(workflow) : workflow,
      ref,
      ...(inputs ? { inputs } : {}),
      ...signalOf(signal),
    })
    return written({ workflow, ref })
  },
})

export const rerunWorkflowRun = defineTool({
  name: 'rerun_workflow_run',
  title: 'Re-run',
  description: 'Re-run a workflow run, or only its failed jobs.',
  toolset,
  input: { repo, run_id: runId, failed_only: z.boolean().default(false).describe('Failed jobs only') },
  output: { runId: z.number().int(), failedOnly: z.boolean() },
  annotations: write,
  async run({ repo: { owner, repo }, run_id, failed_only }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const request = { owner, repo, run_id, ...signalOf(signal) }
    if (failed_only) await octokit.rest.actions.reRunWorkflowFailedJobs(request)
    else await octokit.rest.actions.reRunWorkflow(request)
    return written({ runId: run_id, failedOnly: failed_only })
  },
})

export const cancelWorkflowRun = defineTool({
  name: 'cancel_workflow_run',
  title: 'Cancel run',
  description: 'Cancel a queued or running workflow run.',
  toolset,
  input: { repo, run_id: runId },
  output: { runId: z.number().int() },
  annotations: { ...write, destructiveHint: true, idempotentHint: true },
  async run({ repo: { owner, repo }, run_id }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    await octokit.rest.actions.cancelWorkflowRun({ owner, repo, run_id, ...signalOf(signal) })
    return written({ runId: run_id })
  },
})

export const listWorkflowRunArtifacts = defineTool({
  name: 'list_workflow_run_artifacts',
  title: 'List artifacts',
  description: 'Artifacts of a run (ids for download_workflow_run_artifact).',
  toolset,
  input: { repo, run_id: runId, page, per_page: perPage },
  output: { artifacts: list(), ...more },
  annotations: read,
  async run({ repo: { owner, repo }, run_id, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.actions.listWorkflowRunArtifacts({
      owner,
      repo,
      run_id,
      page,
      per_page,
      ...signalOf(signal),
    })
    return listed(
      {
        artifacts: response.data.artifacts.map((artifact) => ({
          id: artifact.id,
          name: clean(artifact.name),
          size: artifact.size_in_bytes,
          expired: artifact.expired,
          expiresAt: artifact.expires_at ?? null,
        })),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})

export const downloadWorkflowRunArtifact = defineTool({
  name: 'download_workflow_run_artifact',
  title: 'Artifact URL',
  description: 'A short-lived download URL (zip) of an artifact.',
  toolset,
  input: { repo, artifact_id: number.describe('Artifact id') },
  output: { url: z.string() },
  annotations: read,
  async run({ repo: { owner, repo }, artifact_id }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    // GitHub answers with a redirect to signed storage: the URL is what the caller needs, not the zip.
    const response = await octokit.rest.actions.downloadArtifact({
      owner,
      repo,
      artifact_id,
      archive_format: 'zip',
      request: { signal, redirect: 'manual' },
    })
    const location = response.headers.location
    if (!location) throw new ToolError('unavailable', 'GitHub gave no download location for the artifact')
    return written({ url: String(location) })
  },
})
