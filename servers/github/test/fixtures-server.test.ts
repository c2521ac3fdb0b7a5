import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { connectInMemory } from '@keel-mcp/core/testing'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { RECORDED_TOKEN } from './fake-github.js'
import { dataOf, fastServer } from './helpers.js'

// Recorded real GitHub answers served by @octokit/fixtures-server on loopback, in its own process
// (it intercepts with nock). Each scenario is consumed in order, once, and only for the recorded
// token; a request that does not match the next recorded one (method, path, query, body) is a 404
// naming it. Not here: scenarios of endpoints no tool calls (branch protection, git refs, status,
// lock, collaborators' invitations, markdown, rename), the second page of paginate-issues (GitHub's
// next link is `/repositories/{id}/issues`; list_issues asks for page 2 by owner/name), and
// get-content (recorded with a trailing `/contents/` and a raw README; the tool reads JSON).

const ORG = 'octokit-fixture-org'
const launcher = fileURLToPath(new URL('./fixtures-server.mjs', import.meta.url))

let child: ChildProcess | undefined
let origin = ''
const open: Array<{ close(): Promise<unknown> }> = []

beforeAll(async () => {
  child = spawn(process.execPath, [launcher], { stdio: ['ignore', 'pipe', 'inherit'] })
  const stdout = child.stdout
  if (!stdout) throw new Error('no stdout')
  const exited = once(child, 'exit').catch((error: unknown) => [error])
  for await (const line of createInterface({ input: stdout })) {
    const port = /^port (\d+)$/.exec(String(line))?.[1]
    if (port) {
      origin = `http://127.0.0.1:${port}`
      break
    }
  }
  if (!origin) throw new Error(`@octokit/fixtures-server exited with ${(await exited)[0]}`)
})

afterAll(() => {
  child?.kill()
})

afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
})

/** Loads a scenario and connects the server to its URL. */
async function scenario(name: string) {
  const response = await fetch(`${origin}/fixtures`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ scenario: name }),
  })
  const { url } = (await response.json()) as { url: string }
  const connection = await connectInMemory(fastServer, {
    argv: ['--api-url', url, '--toolsets', 'all'],
    env: { GITHUB_TOKEN: RECORDED_TOKEN },
  })
  open.push(connection)
  return (name: string, args: Record<string, unknown>) =>
    connection.client.callTool({ name, arguments: args })
}

describe('@octokit/fixtures-server scenarios', () => {
  it('get-repository', async () => {
    const call = await scenario('get-repository')
    expect(dataOf(await call('get_repository', { repo: `${ORG}/hello-world` })).repository).toMatchObject({
      fullName: `${ORG}/hello-world`,
      defaultBranch: 'master',
    })
  })

  it('create-file: the write is checked against the blob GitHub recorded', async () => {
    const call = await scenario('create-file')
    const result = await call('create_or_update_file', {
      repo: `${ORG}/create-file`,
      path: 'test.txt',
      content: 'Test content',
      message: 'create test.txt',
    })
    expect(dataOf(result)).toMatchObject({ sha: '3f3f005b29247e51a4f4d6b8ce07b67646cd6074' })
  })

  it('add-labels-to-issue: create an issue, then label it', async () => {
    const call = await scenario('add-labels-to-issue')
    const repo = `${ORG}/add-labels-to-issue`
    expect(dataOf(await call('create_issue', { repo, title: 'Issue without a label' })).number).toBe(1)
    const labels = dataOf(
      await call('add_issue_labels', { repo, issue_number: 1, labels: ['Foo', 'bAr', 'baZ'] }),
    )
    expect(labels.labels).toEqual(['Foo', 'bAr', 'baZ'])
  })

  it('release-assets: a release by tag', async () => {
    const call = await scenario('release-assets')
    const release = dataOf(await call('get_release_by_tag', { repo: `${ORG}/release-assets`, tag: 'v1.0.0' }))
    expect(release.release).toMatchObject({ tag: 'v1.0.0' })
  })

  it('search-issues: the query reaches GitHub as given', async () => {
    const call = await scenario('search-issues')
    const found = dataOf(await call('search_issues', { query: `sesame repo:${ORG}/search-issues` }))
    expect(found.total).toBeGreaterThan(0)
    expect(found.issues[0]).toMatchObject({ number: expect.any(Number) })
  })

  it('paginate-issues: a first page of 3 says more exist', async () => {
    const call = await scenario('paginate-issues')
    const result = await call('list_issues', { repo: `${ORG}/paginate-issues`, per_page: 3 })
    const page = dataOf(result)
    expect(page.issues).toHaveLength(3)
    expect(page.hasMore).toBe(true)
  })

  it('labels: list, create, get, update, delete', async () => {
    const call = await scenario('labels')
    const repo = `${ORG}/labels`
    expect(dataOf(await call('list_labels', { repo })).labels[0]).toMatchObject({ name: 'bug' })
    expect(
      dataOf(await call('create_label', { repo, name: 'test-label', color: '663399' })).label,
    ).toMatchObject({
      name: 'test-label',
    })
    expect(dataOf(await call('get_label', { repo, name: 'test-label' })).label.name).toBe('test-label')
    const updated = await call('update_label', {
      repo,
      name: 'test-label',
      new_name: 'test-label-updated',
      color: 'BADA55',
    })
    expect(dataOf(updated).label).toMatchObject({ name: 'test-label-updated', color: 'BADA55' })
    expect(dataOf(await call('delete_label', { repo, name: 'test-label-updated' })).deleted).toBe(
      'test-label-updated',
    )
  })

  it('get-organization', async () => {
    const call = await scenario('get-organization')
    expect(JSON.stringify(dataOf(await call('get_organization', { org: ORG })))).toContain(ORG)
  })

  it('mark-notifications-as-read', async () => {
    const call = await scenario('mark-notifications-as-read')
    const result = await call('mark_notifications_read', {})
    expect(result.isError).not.toBe(true)
  })
})
