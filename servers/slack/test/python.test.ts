import { fileURLToPath } from 'node:url'
import {
  type PythonRun,
  type PythonTarget,
  pythonMcp,
  runPythonClient,
  spawnHttp,
} from '@keel-mcp/core/testing'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { BOT_TOKEN, type FakeSlack, startFakeSlack, USER_TOKEN } from './fake-slack.js'

// The Python MCP SDK drives the built bin, whose real @slack/web-api client talks to a loopback
// Slack fake, over stdio and Streamable HTTP, in its 2026-07-28 mode and with `initialize`.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const ARGS = ['--allow-writes', '--write-channels', '#random']

const open: Array<{ close(): Promise<unknown> }> = []
beforeAll(async () => {
  await pythonMcp()
}, 300_000)
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close()
})

const envFor = (fake: FakeSlack) => ({
  SLACK_BOT_TOKEN: BOT_TOKEN,
  SLACK_USER_TOKEN: USER_TOKEN,
  SLACK_API_URL: fake.url,
})

const targets: Array<[string, (env: Record<string, string>) => Promise<PythonTarget>]> = [
  ['stdio', async (env) => ({ command: process.execPath, args: [BIN, ...ARGS], env })],
  [
    'Streamable HTTP',
    async (env) => {
      const server = await spawnHttp(process.execPath, [BIN, ...ARGS], { env })
      open.push(server)
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

const text = (result: any): string =>
  result.content.map((block: { text?: string }) => block.text ?? '').join('\n')

describe.each(targets)('the Python MCP SDK over %s', (_transport, target) => {
  it.each([
    ['auto', '2026-07-28'],
    ['legacy', '2025-11-25'],
  ] as const)(
    'in %s mode finds a channel, reads its history and posts where allowed (%s)',
    async (mode, version) => {
      const fake = await startFakeSlack()
      open.push(fake)
      const run = await runPythonClient({
        target: await target(envFor(fake)),
        mode,
        steps: [
          { op: 'call_tool', name: 'list_channels', arguments: {} },
          { op: 'call_tool', name: 'get_channel_history', arguments: { channel: '#general', limit: 3 } },
          { op: 'call_tool', name: 'post_message', arguments: { channel: '#random', text: 'from Python' } },
          { op: 'call_tool', name: 'post_message', arguments: { channel: '#general', text: 'not here' } },
          {
            op: 'call_tool',
            name: 'get_channel_history',
            arguments: { channel: '#general', limit: 'three' },
          },
        ],
      })
      expect(run.connectError).toBeUndefined()
      expect(run.protocolVersion).toBe(version)
      expect(text(ok(run, 0))).toContain('general')
      expect(text(ok(run, 1))).toContain('a thread starter')
      expect(ok(run, 2).isError).toBe(false)
      expect(fake.calls.find((entry) => entry.method === 'chat.postMessage')?.args).toMatchObject({
        channel: 'C0RANDOM',
        text: 'from Python',
      })
      expect(text(ok(run, 3))).toMatch(/^permission_denied: #general is not in the server's --write-channels/)
      expect(ok(run, 4).isError).toBe(true)
      expect(text(ok(run, 4))).toMatch(
        /^invalid_argument: Invalid arguments for tool get_channel_history: limit: /,
      )
    },
  )
})

// A bin answers the handshake and the tool list of a start like an earlier one from that start's
// record (core's replay.ts): the Python client, in either mode, sees what the server itself gave.
describe('the Python MCP SDK against a start answered from a record', () => {
  it.each([
    ['auto', '2026-07-28'],
    ['legacy', '2025-11-25'],
  ] as const)(
    'in %s mode gets the same handshake and tools, then the server serves its call (%s)',
    async (mode, version) => {
      const { mkdtemp, rm } = await import('node:fs/promises')
      const { tmpdir } = await import('node:os')
      const { join } = await import('node:path')
      const directory = await mkdtemp(join(tmpdir(), 'keel-slack-replay-'))
      const fake = await startFakeSlack()
      open.push(fake)
      try {
        const start = () =>
          runPythonClient({
            target: {
              command: process.execPath,
              args: [BIN, ...ARGS],
              env: { ...envFor(fake), KEEL_COMPILE_CACHE_DIR: directory, KEEL_COMPILE_CACHE_DEBUG: '1' },
            },
            mode,
            steps: [
              { op: 'info' },
              { op: 'list_tools' },
              { op: 'call_tool', name: 'get_channel_history', arguments: { channel: '#general', limit: 3 } },
            ],
          })
        const first = await start()
        const second = await start()
        expect(first.stderr).not.toMatch(/keel handshake replay: answered [1-9]/)
        expect(second.stderr).toMatch(/keel handshake replay: answered [1-9]/)
        for (const run of [first, second]) {
          expect(run.connectError).toBeUndefined()
          expect(run.protocolVersion).toBe(version)
          expect(text(ok(run, 2))).toContain('a thread starter')
        }
        expect(ok(second, 0)).toEqual(ok(first, 0))
        expect(ok(second, 1)).toEqual(ok(first, 1))
        expect(second.notifications.filter((note) => note.method.endsWith('list_changed'))).toEqual([])
      } finally {
        await rm(directory, { recursive: true, force: true })
      }
    },
  )
})
