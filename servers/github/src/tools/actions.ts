import { ToolError, z } from '@keel-mcp/core'
import { clean, type Octokit } from '../lib/index.js'
import {
  defineTool,
  entry,
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
} from './shared.js'

const toolset = 'actions'
const runId = number.describe('Run id')
const FAILED = new Set(['failure', 'timed_out', 'cancelled', 'startup_failure'])
const MAX_JOBS = 200

export const listWorkflowRuns = defineTool({
  name: 'list_workflow_runs',
  title: 'List runs',
  description: 'Actions runs, newest first; failures: get_job_logs.',
  toolset,
  input: {
    repo,
    workflow: z.string().optional().describe('File name or id'),
    branch: z.string().optional().describe('Branch'),
    status: z.string().optional().describe('e.g. failure'),
    event: z.string().optional().describe('e.g. push'),
    page,
    per_page: perPage,
  },
  output: { runs: list(), ...more },
  annotations: read,
  async run(
    { repo: { owner, repo }, workflow, branch, status, event, page, per_page },
    { deps, auth, signal },
  ) {
    const { octokit } = await github(deps, auth)
    const filters = {
      owner,
      repo,
      page,
      per_page,
      ...(branch ? { branch } : {}),
      ...(status ? { status: status as 'failure' } : {}),
      ...(event ? { event } : {}),
      ...signalOf(signal),
    }
    const response = workflow
      ? await octokit.rest.actions.listWorkflowRuns({
          ...filters,
          workflow_id: /^\d+$/.test(workflow) ? Number(workflow) : workflow,
        })
      : await octokit.rest.actions.listWorkflowRunsForRepo(filters)
    return listed(
      {
        runs: response.data.workflow_runs.map((run) => ({
          id: run.id,
          name: run.name ? clean(run.name) : null,
          title: clean(run.display_title),
          status: run.status,
          conclusion: run.conclusion,
          branch: run.head_branch,
          sha: run.head_sha,
          event: run.event,
          createdAt: run.created_at,
          url: run.html_url,
        })),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})

/** The run's jobs, at most MAX_JOBS of them, and how many it has. */
async function jobsOf(octokit: Octokit, owner: string, repo: string, run_id: number, signal: AbortSignal) {
  const jobs = []
  let total = 0
  for await (const response of octokit.paginate.iterator(octokit.rest.actions.listJobsForWorkflowRun, {
    owner,
    repo,
    run_id,
    per_page: 100,
    ...signalOf(signal),
  })) {
    total = Math.max(total, (response.data as { total_count?: number }).total_count ?? 0)
    jobs.push(...response.data)
    if (jobs.length >= MAX_JOBS) break
  }
  return { jobs: jobs.slice(0, MAX_JOBS), total: Math.max(total, jobs.length) }
}

export const getWorkflowRun = defineTool({
  name: 'get_workflow_run',
  title: 'Get run',
  description: 'One Actions run with jobs and failed steps.',
  toolset,
  input: { repo, run_id: runId },
  output: { run: entry(), jobs: list() },
  annotations: read,
  async run({ repo: { owner, repo }, run_id }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.actions.getWorkflowRun({ owner, repo, run_id, ...signalOf(signal) })
    const { jobs, total } = await jobsOf(octokit, owner, repo, run_id, signal)
    return listed(
      {
        run: {
          id: data.id,
          name: data.name ? clean(data.name) : null,
          title: clean(data.display_title),
          status: data.status,
          conclusion: data.conclusion,
          branch: data.head_branch,
          sha: data.head_sha,
          event: data.event,
          attempt: data.run_attempt ?? 1,
          createdAt: data.created_at,
          url: data.html_url,
        },
        jobs: jobs.map((job) => ({
          id: job.id,
          name: clean(job.name),
          status: job.status,
          conclusion: job.conclusion,
          failedSteps: (job.steps ?? [])
            .filter((step) => FAILED.has(step.conclusion ?? ''))
            .map((step) => clean(step.name)),
        })),
      },
      {
        untrusted: true,
        ...(total > jobs.length
          ? { notice: `More available: ${jobs.length} of ${total} jobs shown; get_job_logs takes a job_id.` }
          : {}),
      },
    )
  },
})

const MAX_LOG_JOBS = 5
/** Characters of log one job may return, whatever tail_lines says (minified output has long lines). */
const MAX_TAIL_CHARS = 30_000

function tailOf(text: string): string {
  return text.length > MAX_TAIL_CHARS
    ? `[…${text.length - MAX_TAIL_CHARS} earlier characters cut]\n${text.slice(-MAX_TAIL_CHARS)}`
    : text
}

export const getJobLogs = defineTool({
  name: 'get_job_logs',
  title: 'Get job logs',
  description: "Why CI failed: log tails of a run's failed jobs.",
  toolset,
  input: {
    repo,
    run_id: number.optional().describe('Run id'),
    job_id: number.optional().describe('One job instead'),
    failed_only: z.boolean().default(true).describe('Failed only'),
    tail_lines: z.number().int().min(1).max(5000).default(150).describe('Lines per job'),
  },
  output: { logs: list() },
  annotations: read,
  async run({ repo: { owner, repo }, run_id, job_id, failed_only, tail_lines }, { deps, auth, signal }) {
    if ((run_id === undefined) === (job_id === undefined)) {
      throw new ToolError('invalid_argument', 'Give exactly one of run_id and job_id')
    }
    const { octokit } = await github(deps, auth)
    let targets: Array<{ id: number; name: string; conclusion: string | null }>
    if (job_id !== undefined) {
      const { data } = await octokit.rest.actions.getJobForWorkflowRun({
        owner,
        repo,
        job_id,
        ...signalOf(signal),
      })
      targets = [{ id: data.id, name: data.name, conclusion: data.conclusion }]
    } else {
      const { jobs } = await jobsOf(octokit, owner, repo, run_id as number, signal)
      targets = jobs
        .filter((job) => !failed_only || FAILED.has(job.conclusion ?? ''))
        .map((job) => ({ id: job.id, name: job.name, conclusion: job.conclusion }))
    }
    const skipped = Math.max(0, targets.length - MAX_LOG_JOBS)
    const logs = []
    for (const job of targets.slice(0, MAX_LOG_JOBS)) {
      const { data } = await octokit.rest.actions.downloadJobLogsForWorkflowRun({
        owner,
        repo,
        job_id: job.id,
        ...signalOf(signal),
      })
      const text = typeof data === 'string' ? data : Buffer.from(data as ArrayBuffer).toString('utf8')
      const lines = clean(text).replace(/\r\n/g, '\n').split('\n')
      if (lines.at(-1) === '') lines.pop()
      logs.push({
        job: clean(job.name),
        jobId: job.id,
        conclusion: job.conclusion,
        lines: lines.length,
        tail: tailOf(lines.slice(-tail_lines).join('\n')),
      })
    }
    const notices: string[] = []
    if (!targets.length) notices.push(failed_only ? 'No failed jobs in this run.' : 'This run has no jobs.')
    if (skipped) notices.push(`${skipped} more job(s) not shown: ask for them by job_id.`)
    return listed({ logs }, { untrusted: true, ...(notices.length ? { notice: notices.join(' ') } : {}) })
  },
})
