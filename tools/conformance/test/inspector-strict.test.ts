import { spawnSync } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// The MCP Inspector's `--strict` check of tool schemas (what clients that translate schemas into
// other dialects trip over), run by the Inspector itself, unmodified from npm (it needs Node 22,
// which npx brings), against every server's built bin with every tool it can offer listed.
const repoDir = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')

const SERVERS: Array<{ slug: string; args: (dir: string) => string[]; env?: Record<string, string> }> = [
  { slug: 'fs', args: (dir) => [dir, '--toolsets', 'all'] },
  { slug: 'postgres', args: () => [], env: { DATABASE_URL: 'postgres://reader@127.0.0.1:9/none' } },
  { slug: 'github', args: () => ['--toolsets', 'all'], env: { GITHUB_TOKEN: 'ghp_strictcheck' } },
  {
    slug: 'slack',
    args: () => ['--allow-writes', '--toolsets', 'all'],
    env: { SLACK_BOT_TOKEN: 'xoxb-strict', SLACK_USER_TOKEN: 'xoxp-strict' },
  },
  {
    slug: 'browser',
    args: (dir) => ['--caps', 'evaluate,pdf,downloads', '--download-dir', dir, '--upload-dir', dir],
  },
]

let work = ''
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'keel-strict-'))
})
afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true })
})

describe('MCP Inspector --strict (schema portability)', () => {
  it.each(SERVERS)(
    'lists $slug tools with no portability warning or error',
    ({ slug, args, env }) => {
      const result = spawnSync(
        process.platform === 'win32' ? 'npx.cmd' : 'npx',
        [
          '-y',
          '-p',
          'node@22',
          '-p',
          '@modelcontextprotocol/inspector@2',
          '--',
          'mcp-inspector',
          '--cli',
          process.execPath,
          join(repoDir, 'servers', slug, 'dist/index.js'),
          ...args(work),
          '--method',
          'tools/list',
          '--strict',
        ],
        {
          encoding: 'utf8',
          cwd: work,
          env: { ...process.env, NO_COLOR: '1' },
          timeout: 240_000,
        },
      )
      const report = `${result.stderr}`
        .split('\n')
        .filter((line) => !/EBADENGINE|^npm warn/.test(line))
        .join('\n')
      expect(result.status, report.slice(-4000)).toBe(0)
      // The listing really came back (a server that failed to start would list nothing).
      expect(JSON.parse(result.stdout).tools.length).toBeGreaterThan(0)
      expect(report).not.toMatch(/^(Warning|Error): tool/m)
    },
    300_000,
  )
})
