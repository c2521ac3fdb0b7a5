import { fileURLToPath } from 'node:url'
import { connectStdio, type ModuleLoadRecorder, recordModuleLoads } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedPostgres } from './harness/index.js'

// What the built bin loads: pg and the SQL parser once it has been initialized (the warm-up) or
// called, and never Node's fetch implementation (undici), which pg 8 pulls in on Node 20 when it
// probes for Cloudflare Workers. A preload records every file Node loads, and the built-ins at exit.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const shared = sharedPostgres()
let recorder: ModuleLoadRecorder

beforeAll(async () => {
  recorder = await recordModuleLoads()
})

afterAll(async () => {
  await recorder?.dispose()
})

describe('the built bin', () => {
  it('loads pg and the parser for its first call without loading undici', async () => {
    const connection = await connectStdio({
      command: process.execPath,
      args: [...recorder.args, BIN],
      env: { DATABASE_URL: shared.url, ...recorder.env },
    })
    try {
      const result = await connection.client.callTool({
        name: 'query',
        arguments: { sql: 'SELECT 1 AS one' },
      })
      expect(result.isError).toBeFalsy()
      expect(result.structuredContent.rows).toEqual([[1]])
    } finally {
      await connection.close()
    }
    const loaded = await recorder.loaded()
    expect(loaded.some((file) => /[\\/]pg[\\/]lib[\\/]index\.js$/.test(file))).toBe(true)
    expect(loaded.some((file) => /libpg-query/.test(file))).toBe(true)
    // Recorded at exit: the process ended normally once stdin closed.
    expect(loaded.some((file) => file.startsWith('node:'))).toBe(true)
    expect(loaded.filter((file) => /undici/.test(file))).toEqual([])
  })
})
