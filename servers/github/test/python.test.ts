import { fileURLToPath } from 'node:url'
import {
  type PythonRun,
  type PythonTarget,
  pythonMcp,
  runPythonClient,
  spawnHttp,
} from '@keel-mcp/core/testing'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { FakeGitHub } from './fake-github.js'
import { comment, issue, user } from './fixtures.js'
import { json } from './helpers.js'

// The Python MCP SDK drives the built bin, whose real Octokit talks to a loopback GitHub fake,
// over stdio and Streamable HTTP, in its 2026-07-28 mode and with the `initialize` handshake.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const TOKEN = 'ghp_py00000000000000000000000000000000000'
const ARGS = ['--toolsets', 'context,issues']
const CLEAN = { GITHUB_TOKEN: '', GITHUB_PERSONAL_ACCESS_TOKEN: '', GITHUB_API_URL: '', MCP_AUTH_TOKEN: '' }

const open: Array<{ close(): Promise<unknown> }> = []
beforeAll(async () => {
  await pythonMcp()
}, 300_000)
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
})

async function fakeGitHub() {
  const fake = await FakeGitHub.start()
  open.push(fake)
  fake.on('GET', '/user', json({ ...user('server-user'), name: null }))
  fake.on('GET', '/repos/octo/demo/issues/7', json(issue(7, { body: 'Steps to reproduce' })))
  fake.on('GET', '/repos/octo/demo/issues/7/comments', json([comment(1, 'mona', 'Same here')]))
  fake.on('POST', '/repos/octo/demo/issues/7/comments', json(comment(9, 'server-user', 'On it'), 201))
  return fake
}

const targets: Array<[string, (env: Record<string, string>) => Promise<PythonTarget>]> = [
  ['stdio', async (env) => ({ command: process.execPath, args: [BIN, ...ARGS], env })],
  [
    'Streamable HTTP',
    async (env) => {
      const server = await spawnHttp(process.execPath, [BIN, ...ARGS], { env })
      open.unshift(server)
      return { url: server.url }
    },
  ],
]

function ok(run: PythonRun, index: number): any {
  const result = run.results[index]
  if (!result || !('ok' in result))
    throw new Error(
      `step ${index}: ${JSON.stringify(result)}; ${run.connectError ?? ''} ${run.stderr.slice(-1500)}`,
    )
  return result.ok
}

describe.each(targets)('the Python MCP SDK over %s', (_transport, target) => {
  it.each([
    ['auto', '2026-07-28'],
    ['legacy', '2025-11-25'],
  ] as const)('in %s mode reads an issue and its comments and answers it (%s)', async (mode, version) => {
    const fake = await fakeGitHub()
    const run = await runPythonClient({
      target: await target({ ...CLEAN, GITHUB_TOKEN: TOKEN, GITHUB_API_URL: fake.url }),
      mode,
      steps: [
        { op: 'call_tool', name: 'get_me', arguments: {} },
        { op: 'call_tool', name: 'get_issue', arguments: { repo: 'octo/demo', issue_number: 7 } },
        { op: 'call_tool', name: 'list_issue_comments', arguments: { repo: 'octo/demo', issue_number: 7 } },
        {
          op: 'call_tool',
          name: 'add_issue_comment',
          arguments: { repo: 'octo/demo', issue_number: 7, body: 'On it' },
        },
        { op: 'call_tool', name: 'get_issue', arguments: { repo: 'demo', issue_number: 7 } },
      ],
    })
    expect(run.connectError).toBeUndefined()
    expect(run.protocolVersion).toBe(version)
    expect(ok(run, 0).structuredContent.login).toBe('server-user')
    expect(ok(run, 1).structuredContent.issue).toMatchObject({ number: 7, body: 'Steps to reproduce' })
    expect(ok(run, 2).structuredContent.comments).toEqual([
      { id: 1, author: 'mona', createdAt: '2026-01-03T00:00:00Z', body: 'Same here' },
    ])
    expect(ok(run, 3).isError).toBe(false)
    expect(fake.calls('POST', '/repos/octo/demo/issues/7/comments')[0]?.body).toEqual({ body: 'On it' })
    expect(ok(run, 4).isError).toBe(true)
    expect(ok(run, 4).content[0].text).toMatch(/^invalid_argument: .*repo: must be owner\/name/)
    expect(fake.requests.every((request) => request.authorization === `token ${TOKEN}`)).toBe(true)
  })
})
