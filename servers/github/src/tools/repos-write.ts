import { ToolError, z } from '@keel-mcp/core'
import { defineTool, github, overwrite, repo, signalOf, url, write, written } from './shared.js'
import { verifyStored } from './verify-write.js'

const toolset = 'repos'
const branchName = z.string().min(1)
const message = z.string().min(1).describe('Commit message')

export const createBranch = defineTool({
  name: 'create_branch',
  title: 'Create branch',
  description: 'Create a branch from another (default: default branch).',
  toolset,
  input: {
    repo,
    branch: branchName.describe('New branch'),
    from_branch: branchName.optional().describe('Source branch'),
  },
  output: { branch: z.string(), sha: z.string() },
  annotations: write,
  async run({ repo: { owner, repo }, branch, from_branch }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const source =
      from_branch ?? (await octokit.rest.repos.get({ owner, repo, ...signalOf(signal) })).data.default_branch
    const { data: ref } = await octokit.rest.git.getRef({
      owner,
      repo,
      ref: `heads/${source}`,
      ...signalOf(signal),
    })
    await octokit.rest.git.createRef({
      owner,
      repo,
      ref: `refs/heads/${branch}`,
      sha: ref.object.sha,
      ...signalOf(signal),
    })
    return written({ branch, sha: ref.object.sha })
  },
})

export const createOrUpdateFile = defineTool({
  name: 'create_or_update_file',
  title: 'Write file',
  description: 'Write one file as a commit (sha from get_file_contents to update).',
  toolset,
  input: {
    repo,
    path: z.string().min(1).describe('File path'),
    content: z.string().describe('Content'),
    message,
    branch: branchName.optional().describe('Branch'),
    sha: z.string().optional().describe('Blob sha when updating'),
  },
  output: { commit: z.string(), sha: z.string(), url: z.string().nullable() },
  annotations: overwrite,
  async run({ repo: { owner, repo }, path, content, message, branch, sha }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const bytes = Buffer.from(content, 'utf8')
    const file = path.replace(/^\/+/, '')
    const { data } = await octokit.rest.repos.createOrUpdateFileContents({
      owner,
      repo,
      path: file,
      message,
      content: bytes.toString('base64'),
      ...(branch ? { branch } : {}),
      ...(sha ? { sha } : {}),
      ...signalOf(signal),
    })
    await verifyStored(octokit, { owner, repo }, file, bytes, data.content?.sha, {
      ...(data.commit.sha ? { commit: data.commit.sha } : {}),
      signal,
    })
    return written({
      commit: data.commit.sha ?? '',
      sha: data.content?.sha ?? '',
      url: data.content?.html_url ?? null,
    })
  },
})

export const pushFiles = defineTool({
  name: 'push_files',
  title: 'Push files',
  description: 'Commit files to a branch in one commit; never forces.',
  toolset,
  input: {
    repo,
    branch: branchName.describe('Existing branch'),
    files: z
      .array(
        z.object({
          path: z.string().min(1),
          content: z.string().describe('UTF-8 content'),
        }),
      )
      .min(1)
      .max(100)
      .describe('Files'),
    message,
  },
  output: { commit: z.string(), branch: z.string(), files: z.number().int() },
  annotations: overwrite,
  async run({ repo: { owner, repo }, branch, files, message }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const paths = new Set<string>()
    for (const file of files) {
      const path = file.path.replace(/^\/+/, '')
      if (path.split('/').some((part) => part === '' || part === '.' || part === '..')) {
        throw new ToolError('invalid_argument', `files: "${file.path}" is not a clean relative path`)
      }
      if (paths.has(path)) throw new ToolError('invalid_argument', `files: "${path}" is given twice`)
      paths.add(path)
    }
    const ref = `heads/${branch}`
    const { data: head } = await octokit.rest.git.getRef({ owner, repo, ref, ...signalOf(signal) })
    const parent = head.object.sha
    const { data: parentCommit } = await octokit.rest.git.getCommit({
      owner,
      repo,
      commit_sha: parent,
      ...signalOf(signal),
    })
    const tree = []
    for (const file of files) {
      const bytes = Buffer.from(file.content, 'utf8')
      const { data: blob } = await octokit.rest.git.createBlob({
        owner,
        repo,
        content: bytes.toString('base64'),
        encoding: 'base64',
        ...signalOf(signal),
      })
      // Checked before the commit: a blob GitHub stored differently never reaches the branch.
      await verifyStored(octokit, { owner, repo }, file.path, bytes, blob.sha, { signal })
      tree.push({
        path: file.path.replace(/^\/+/, ''),
        mode: '100644' as const,
        type: 'blob' as const,
        sha: blob.sha,
      })
    }
    const { data: newTree } = await octokit.rest.git.createTree({
      owner,
      repo,
      base_tree: parentCommit.tree.sha,
      tree,
      ...signalOf(signal),
    })
    const { data: commit } = await octokit.rest.git.createCommit({
      owner,
      repo,
      message,
      tree: newTree.sha,
      parents: [parent],
      ...signalOf(signal),
    })
    try {
      // force: false — GitHub refuses anything but a fast-forward from the head we built on.
      await octokit.rest.git.updateRef({
        owner,
        repo,
        ref,
        sha: commit.sha,
        force: false,
        ...signalOf(signal),
      })
    } catch (error) {
      const status = (error as { status?: number }).status
      if (status === 422 || status === 409) {
        throw new ToolError(
          'conflict',
          `Branch ${branch} moved since ${parent.slice(0, 7)}; nothing was pushed`,
          {
            hint: 'Read the branch again (list_commits), then push on top of its new head.',
            cause: error,
          },
        )
      }
      throw error
    }
    return written({ commit: commit.sha, branch, files: files.length })
  },
})

export const createRepository = defineTool({
  name: 'create_repository',
  title: 'Create repo',
  description: 'Create a repo (private by default).',
  toolset,
  input: {
    name: z.string().describe('Name'),
    organization: z.string().optional().describe('Org'),
    description: z.string().optional().describe('Description'),
    private: z.boolean().default(true).describe('Private'),
    auto_init: z.boolean().default(false).describe('Add README'),
  },
  output: { fullName: z.string(), url, private: z.boolean(), defaultBranch: z.string() },
  annotations: write,
  async run({ name, organization, description, private: isPrivate, auto_init }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const body = {
      name,
      private: isPrivate,
      auto_init,
      ...(description ? { description } : {}),
      ...signalOf(signal),
    }
    const { data } = organization
      ? await octokit.rest.repos.createInOrg({ org: organization, ...body })
      : await octokit.rest.repos.createForAuthenticatedUser(body)
    return written({
      fullName: data.full_name,
      url: data.html_url,
      private: data.private,
      defaultBranch: data.default_branch,
    })
  },
})

export const forkRepository = defineTool({
  name: 'fork_repository',
  title: 'Fork repo',
  description: 'Fork a repo.',
  toolset,
  input: { repo, organization: z.string().optional().describe('Org') },
  output: { fullName: z.string(), url },
  annotations: write,
  async run({ repo: { owner, repo }, organization }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.repos.createFork({
      owner,
      repo,
      ...(organization ? { organization } : {}),
      ...signalOf(signal),
    })
    return written({ fullName: data.full_name, url: data.html_url })
  },
})
