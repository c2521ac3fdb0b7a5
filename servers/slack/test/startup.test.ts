import { fileURLToPath } from 'node:url'
import { connectStdio, type ModuleLoadRecorder, recordModuleLoads } from '@keel-mcp/core/testing'
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
})
