import { type ChildProcess, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { connectInMemory } from '@keel-mcp/core/testing'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { RECORDED_TOKEN } from './fake-github.js'
import { dataOf, fastServer } from './helpers.js'

// Recorded real GitHub answers served by @octokit/fixtures-server on loopback, in its own process
// (it intercepts with nock). Each scenario is consumed in order, once, and only for the recorded
// token; a request that does not match the next recorded one is a 404 naming it.

const ORG = 'octokit-fixture-org'
const bin = createRequire(import.meta.url)
  .resolve('@octokit/fixtures-server/package.json')
  .replace(/package\.json$/, 'bin/server.js')

let child: ChildProcess | undefined
let origin = ''
const open: Array<{ close(): Promise<unknown> }> = []

async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as { port: number }
  await new Promise((resolve) => probe.close(resolve))
  return port
}

beforeAll(async () => {
  const port = await freePort()
  origin = `http://127.0.0.1:${port}`
  child = spawn(
    process.execPath,
    [bin, '--port', String(port), '--fixtures-url', origin, '--log-level', 'error'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  )
  // Bounded: 100 tries, 100 ms apart.
  for (let attempt = 0; attempt < 100; attempt++) {
    const up = await fetch(`${origin}/ping`).then(
      (response) => response.ok,
      () => false,
    )
    if (up) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error('@octokit/fixtures-server did not start')
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
})
