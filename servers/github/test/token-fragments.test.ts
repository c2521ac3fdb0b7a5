import { fileURLToPath } from 'node:url'
import { connectStdio } from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { FakeGitHub } from './fake-github.js'

/** The built bin (`pnpm run build` first): core's redactor inlined as users run it. */
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const TOKEN = 'ghp_F7k2Lq9ZrT4mW8xN1vB6cJ3hD5sG0yP2aE7u'
const CLEAN = { GITHUB_TOKEN: '', GITHUB_PERSONAL_ACCESS_TOKEN: '', GITHUB_API_URL: '', MCP_AUTH_TOKEN: '' }

const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
})

/** Every run of 10 characters of the token: none may appear anywhere. */
const fragments = Array.from({ length: TOKEN.length - 9 }, (_, start) => TOKEN.slice(start, start + 10))

describe('the built bin never shows a fragment of its token', () => {
  it('redacts an upstream error that quotes 30 of the token’s 41 characters, in results and debug logs', async () => {
    const fake = await FakeGitHub.start()
    open.push(fake)
    const quoted = TOKEN.slice(6, 36)
    fake.on('GET', '/user', { status: 422, body: { message: `Validation failed for credential ${quoted}` } })
    fake.on('GET', '/repos/octo/demo', { status: 500, body: { message: `internal error near ${quoted}` } })
    let stderr = ''
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN, '--log-level', 'debug', '--toolsets', 'all'],
      env: { ...CLEAN, GITHUB_TOKEN: TOKEN, GITHUB_API_URL: fake.url },
      onStderr: (chunk) => {
        stderr += chunk
      },
    })
    open.unshift(connection)
    const refused = await connection.client.callTool({ name: 'get_me', arguments: {} })
    const failed = await connection.client.callTool({
      name: 'get_repository',
      arguments: { repo: 'octo/demo' },
    })
    const texts = JSON.stringify([refused, failed])
    expect(refused.isError).toBe(true)
    expect(texts).toContain('Validation failed for credential [redacted]')
    await connection.close()
    open.shift()
    expect(stderr).toContain('[redacted]')
    for (const fragment of fragments) {
      expect(texts).not.toContain(fragment)
      expect(stderr).not.toContain(fragment)
    }
  })
})
