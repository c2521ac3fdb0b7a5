import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { connectStdio } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BOT_TOKEN, startFakeSlack } from './fake-slack.js'

// Start-up cost: the built bin answers initialize and tools/list without loading the Slack client
// (@slack/web-api, axios, p-queue, …) or any of the bundle's dist/vendor files (ajv, zod's
// translations, ioredis, jose); its first Slack call loads the client. A preload records every file
// Node loads, CommonJS and ESM, as it loads it.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const PRELOAD = `
const { appendFileSync } = require('node:fs')
const Module = require('node:module')
const log = process.env.KEEL_LOAD_LOG
const load = Module.prototype.load
Module.prototype.load = function (filename) {
  appendFileSync(log, filename + '\\n')
  return load.call(this, filename)
}
Module.register(${JSON.stringify('HOOK')})
`
const HOOK = `
import { appendFileSync } from 'node:fs'
export async function load(url, context, next) {
  appendFileSync(process.env.KEEL_LOAD_LOG, url + '\\n')
  return next(url, context)
}
`
let work: string

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'keel-slack-startup-'))
  await writeFile(join(work, 'hook.mjs'), HOOK)
  await writeFile(
    join(work, 'preload.cjs'),
    PRELOAD.replace('"HOOK"', JSON.stringify(pathToFileURL(join(work, 'hook.mjs')).href)),
  )
})

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true })
})

describe('the built bin at start-up', () => {
  it('serves initialize and tools/list with no Slack client and no vendor file loaded; the first call loads the client', async () => {
    const fake = await startFakeSlack()
    const log = join(work, 'loaded.txt')
    await writeFile(log, '')
    const connection = await connectStdio({
      command: process.execPath,
      args: ['--require', join(work, 'preload.cjs'), BIN],
      env: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_API_URL: fake.url, KEEL_LOAD_LOG: log },
    })
    try {
      const tools = await connection.client.listTools()
      expect(tools.tools.map((tool) => tool.name)).toContain('get_channel_history')
      const atStart = (await readFile(log, 'utf8')).split('\n').filter(Boolean)
      // The preload sees the bin itself load, so it sees what else would.
      expect(atStart).toContain(BIN)
      expect(atStart.filter((file) => /[\\/]dist[\\/]vendor[\\/]|@slack|axios/.test(file))).toEqual([])

      const history = await connection.client.callTool({
        name: 'get_channel_history',
        arguments: { channel: '#general', limit: 3 },
      })
      expect(history.isError).toBeFalsy()
      const afterCall = (await readFile(log, 'utf8')).split('\n').filter(Boolean)
      expect(afterCall.some((file) => /@slack[\\/+]web-api/.test(file))).toBe(true)
      expect(afterCall.filter((file) => /[\\/]dist[\\/]vendor[\\/]/.test(file))).toEqual([])
    } finally {
      await connection.close()
      await fake.close()
    }
  })
})
