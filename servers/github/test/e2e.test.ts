import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  connectHttp,
  connectStdio,
  readAuditLines,
  runProcess,
  selfSignedCertificate,
  spawnHttp,
  spawnRaw,
} from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { DEFAULT_TOOLS } from '../src/server.js'
import { FakeGitHub } from './fake-github.js'
import { comment, issue, user } from './fixtures.js'
import { json } from './helpers.js'

/** The built bin (`pnpm run build` first): core, SDK and zod inlined; Octokit external and lazy. */
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const TOKEN = 'ghp_e2e0000000000000000000000000000000000'
// Nothing from the machine's environment may reach the bin.
const CLEAN = { GITHUB_TOKEN: '', GITHUB_PERSONAL_ACCESS_TOKEN: '', GITHUB_API_URL: '', MCP_AUTH_TOKEN: '' }

const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
})

async function fakeWithUser() {
  const fake = await FakeGitHub.start()
  open.push(fake)
  fake.on('GET', '/user', (request) => ({
    body: { ...user(request.authorization === `token ${TOKEN}` ? 'server-user' : 'caller'), name: null },
  }))
  return fake
}

describe.each(['v2', 'v1'] as const)('the built bin over stdio with the %s client', (generation) => {
  it('lists the default tools and calls GitHub with GITHUB_TOKEN, never logging it', async () => {
    const fake = await fakeWithUser()
    let stderr = ''
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN, '--log-level', 'debug'],
      env: { ...CLEAN, GITHUB_TOKEN: TOKEN, GITHUB_API_URL: fake.url },
      generation,
      onStderr: (chunk) => {
        stderr += chunk
      },
    })
    open.unshift(connection)
    const names = (await connection.client.listTools()).tools.map((tool: Record<string, any>) =>
      String(tool.name),
    )
    expect(names.sort()).toEqual([...DEFAULT_TOOLS].sort())
    const result = await connection.client.callTool({ name: 'get_me', arguments: {} })
    expect(result.structuredContent.login).toBe('server-user')
    expect(fake.requests.map((request) => request.authorization)).toEqual([`token ${TOKEN}`])
    expect(stderr).not.toContain(TOKEN)
  })
})

describe.each(['v2', 'v1'] as const)(
  'the built bin over HTTP with --token-from-request and the %s client',
  (generation) => {
    it('uses the bearer of the request as the GitHub token', async () => {
      const fake = await fakeWithUser()
      const server = await spawnHttp(
        process.execPath,
        [BIN, '--token-from-request', '--log-level', 'debug'],
        {
          env: { ...CLEAN, GITHUB_API_URL: fake.url },
        },
      )
      open.push(server)
      const caller = 'ghp_caller00000000000000000000000000000000'
      const connection = await connectHttp(server.url, { generation, token: caller })
      open.unshift(connection)
      const result = await connection.client.callTool({ name: 'get_me', arguments: {} })
      expect(result.structuredContent.login).toBe('caller')
      expect(fake.requests.map((request) => request.authorization)).toEqual([`token ${caller}`])
      expect(server.stdout() + server.stderr()).not.toContain(caller)
    })
  },
)

describe('the built bin against GitHub Enterprise Server over https', () => {
  it('reaches https://HOST/api/v3 with the token, trusting the CA given in NODE_EXTRA_CA_CERTS', async () => {
    const tls = await selfSignedCertificate()
    open.push(tls)
    const seen: Array<[string | undefined, string | undefined]> = []
    const server = createHttpsServer({ key: tls.key, cert: tls.cert }, (request, response) => {
      seen.push([request.url, request.headers.authorization])
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
      response.end(JSON.stringify({ ...user('enterprise-user'), name: null }))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    open.push({ close: () => new Promise((resolve) => server.close(resolve)) })
    const port = (server.address() as AddressInfo).port
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN],
      env: {
        ...CLEAN,
        GITHUB_TOKEN: TOKEN,
        GITHUB_API_URL: `https://127.0.0.1:${port}/api/v3`,
        NODE_EXTRA_CA_CERTS: tls.certFile,
      },
    })
    open.unshift(connection)
    const result = await connection.client.callTool({ name: 'get_me', arguments: {} })
    expect(result.structuredContent.login).toBe('enterprise-user')
    expect(seen).toEqual([['/api/v3/user', `token ${TOKEN}`]])
  })
})

describe('the audit log', () => {
  it('records the repository and numbers a call touched, never a comment or a token', async () => {
    const fake = await fakeWithUser()
    fake.on('GET', '/repos/octo/demo/issues/3', json(issue(3)))
    fake.on('POST', '/repos/octo/demo/issues/3/comments', json(comment(9, 'octocat', 'Thanks'), 201))
    const dir = await mkdtemp(join(tmpdir(), 'keel-github-audit-'))
    const file = join(dir, 'audit.jsonl')
    try {
      const connection = await connectStdio({
        command: process.execPath,
        args: [BIN, '--audit-log', file],
        env: { ...CLEAN, GITHUB_TOKEN: TOKEN, GITHUB_API_URL: fake.url },
      })
      await connection.client.callTool({
        name: 'get_issue',
        arguments: { repo: 'octo/demo', issue_number: 3 },
      })
      await connection.client.callTool({
        name: 'add_issue_comment',
        arguments: { repo: 'octo/demo', issue_number: 3, body: 'the fix ships on the 12th' },
      })
      // Lines still gathered are written when the process exits.
      await connection.close()
      const lines = await readAuditLines(file, 2)
      const text = await readFile(file, 'utf8')
      expect(lines.map((line) => [line.tool, line.outcome, line.arguments])).toEqual([
        ['get_issue', 'ok', { repo: 'octo/demo', issue_number: 3 }],
        ['add_issue_comment', 'ok', { repo: 'octo/demo', issue_number: 3 }],
      ])
      expect(text).not.toContain('12th')
      expect(text).not.toContain(TOKEN)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('the command line', () => {
  const runBin = (args: string[], env: Record<string, string> = {}) =>
    runProcess(process.execPath, [BIN, ...args], { env: { ...CLEAN, ...env } })

  it('prints help with the GitHub options and toolsets', async () => {
    const { code, stdout } = await runBin(['--help'])
    expect(code).toBe(0)
    for (const text of [
      '--api-url',
      '--token-from-request',
      '--lockdown',
      '--github-token',
      'pull_requests',
      'GITHUB_TOKEN',
    ]) {
      expect(stdout).toContain(text)
    }
  })

  it('refuses --token-from-request on stdio in one line, exit 1', async () => {
    const { code, stdout, stderr } = await runBin(['--token-from-request'])
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr).toContain('--token-from-request needs --transport http')
  })

  it('refuses a plain-http API URL off loopback without echoing the token', async () => {
    const { code, stderr } = await runBin(['--api-url', 'http://ghes.example.com'], { GITHUB_TOKEN: TOKEN })
    expect(code).toBe(1)
    expect(stderr).toContain('must use https://')
    expect(stderr).not.toContain(TOKEN)
  })

  it.each([
    [
      '--toolsets',
      'wikis',
      /^mcp-server-github: Invalid --toolsets: unknown toolset "wikis"; known: all, default, context, repos/,
    ],
    [
      '--tools',
      'get_repo',
      /^mcp-server-github: Invalid --tools: unknown tool "get_repo"; known: .*get_repository/,
    ],
    [
      '--exclude-tools',
      'merge',
      /^mcp-server-github: Invalid --exclude-tools: unknown tool "merge"; known: .*merge_pull_request/,
    ],
  ])('refuses %s %s at start with exit 2, naming what exists', async (flag, value, message) => {
    const { code, stdout, stderr } = await runBin([flag, value], { GITHUB_TOKEN: TOKEN })
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toMatch(message)
  })
})

describe('start-up cost', () => {
  it('loads Octokit on the first call, not to list tools', async () => {
    const fake = await fakeWithUser()
    const dir = await mkdtemp(join(tmpdir(), 'keel-github-load-'))
    open.push({ close: () => rm(dir, { recursive: true, force: true }) })
    const log = join(dir, 'load.log')
    await writeFile(log, '')
    await writeFile(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs'
export async function resolve(specifier, context, next) {
  if (/octokit/.test(specifier)) appendFileSync(${JSON.stringify(log)}, specifier + '\\n')
  return next(specifier, context)
}`,
    )
    await writeFile(
      join(dir, 'register.mjs'),
      `import { register } from 'node:module'\nregister('./hooks.mjs', import.meta.url)\n`,
    )
    const raw = spawnRaw(process.execPath, ['--import', join(dir, 'register.mjs'), BIN], {
      env: { ...CLEAN, GITHUB_TOKEN: TOKEN, GITHUB_API_URL: fake.url, KEEL_COMPILE_CACHE: '0' },
    })
    open.unshift({ close: () => raw.end() })
    await raw.initialize()
    await raw.request('tools/list', {})
    expect(await readFile(log, 'utf8')).toBe('')
    const call = await raw.request('tools/call', { name: 'get_me', arguments: {} })
    expect(call.result.structuredContent.login).toBe('server-user')
    // The bin carries Octokit in a file of its own, loaded now (no @octokit package is installed).
    expect((await readFile(log, 'utf8')).split('\n')).toContainEqual(
      expect.stringMatching(/vendor\/octokit\.vendor\.js$/),
    )
  })
})
