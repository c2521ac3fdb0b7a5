import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { connectStdio, type ModuleLoadRecorder, recordModuleLoads, spawnRaw } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BOT_TOKEN, startFakeSlack } from './fake-slack.js'

// Start-up cost: the built bin answers initialize and tools/list without loading the Slack client
// (@slack/web-api, axios, p-queue, …) or any of the bundle's dist/vendor files (ajv, zod's
// translations, ioredis, jose); its first Slack call loads the client. A preload records every file
// Node loads, CommonJS and ESM, as it loads it.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
let recorder: ModuleLoadRecorder

beforeAll(async () => {
  recorder = await recordModuleLoads()
})

afterAll(async () => {
  await recorder?.dispose()
})

describe('the built bin at start-up', () => {
  it('serves initialize and tools/list with no Slack client and no vendor file loaded; the first call loads the client', async () => {
    const fake = await startFakeSlack()
    const connection = await connectStdio({
      command: process.execPath,
      args: [...recorder.args, BIN],
      env: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_API_URL: fake.url, ...recorder.env },
    })
    try {
      const tools = await connection.client.listTools()
      expect(tools.tools.map((tool) => tool.name)).toContain('get_channel_history')
      const atStart = await recorder.loaded()
      // The preload sees the bin itself load, so it sees what else would.
      expect(atStart).toContain(BIN)
      expect(atStart.filter((file) => /[\\/]dist[\\/]vendor[\\/]|@slack|axios/.test(file))).toEqual([])

      const history = await connection.client.callTool({
        name: 'get_channel_history',
        arguments: { channel: '#general', limit: 3 },
      })
      expect(history.isError).toBeFalsy()
      const afterCall = await recorder.loaded()
      expect(afterCall.some((file) => /@slack[\\/+]web-api/.test(file))).toBe(true)
      expect(afterCall.filter((file) => /[\\/]dist[\\/]vendor[\\/]/.test(file))).toEqual([])
    } finally {
      await connection.close()
      await fake.close()
    }
  })

  // Built-ins are recorded when the process exits: this start lists its tools and ends.
  it('loads neither node:fs/promises (nor the readline modules behind it) nor node:crypto to list its tools, name cache on', async () => {
    const builtins = await recordModuleLoads()
    const fake = await startFakeSlack()
    const cache = await mkdtemp(path.join(tmpdir(), 'keel-slack-start-'))
    try {
      // The name cache names its file by a hash of the token; uploads read through node:fs/promises.
      const raw = spawnRaw(process.execPath, [...builtins.args, BIN, '--name-cache'], {
        env: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_API_URL: fake.url, XDG_CACHE_HOME: cache, ...builtins.env },
      })
      await raw.initialize()
      const listed = await raw.request('tools/list')
      expect(listed.result.tools.map((tool: { name: string }) => tool.name)).toContain('list_files')
      expect((await raw.end()).code).toBe(0)
      const loaded = await builtins.loaded()
      expect(loaded).toContain('node:net')
      expect(
        loaded.filter((file) => /^node:(fs\/promises|internal\/readline|(internal\/)?crypto)/.test(file)),
      ).toEqual([])
    } finally {
      await fake.close()
      await rm(cache, { recursive: true, force: true })
      await builtins.dispose()
    }
  })
})
