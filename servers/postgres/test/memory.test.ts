import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { connectStdio } from '@keel-mcp/core/testing'
import { afterAll, expect, it } from 'vitest'
import { sharedPostgres } from './harness/index.js'
import { errorKind, textOf } from './helpers.js'

/**
 * The built bin's peak memory stays bounded whatever a query returns: each oversized result ends
 * as a clean tool error, and the process's high-water mark (VmHWM, kept by the kernel, so this is
 * not a timing test) stays within 256 MiB of its resident size once warm.
 */
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const shared = sharedPostgres()
const MiB = 1024 * 1024
const open: Array<{ close(): Promise<unknown> }> = []
afterAll(async () => {
  await Promise.all(open.map((item) => item.close()))
})

function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024
  return { rss: kib('VmRSS'), peak: kib('VmHWM') }
}

it.each([
  ['a superuser', () => shared.superuserUrl],
  ['a plain role', () => shared.url],
])(
  'keeps the peak memory of the server within 256 MiB of idle against oversized results, connected as %s',
  async (_who, url) => {
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN, '--max-rows', '100000'],
      env: { DATABASE_URL: url() },
    })
    open.push(connection)
    const { client, pid } = connection
    expect(pid).toBeTypeOf('number')
    // Warm: pg, pg-cursor and the parser loaded, a pool connection open.
    const warm = await client.callTool({
      name: 'query',
      arguments: { sql: 'SELECT count(*) FROM shop.orders' },
    })
    expect(warm.isError).toBeFalsy()
    const idle = memoryOf(pid as number)
    for (const [sql, maxRows] of [
      ["SELECT repeat('x', 600000000)", 200],
      ["SELECT repeat('x', 300000000) FROM generate_series(1, 20)", 200],
      ["SELECT repeat('x', 20000) FROM generate_series(1, 100000)", 100_000],
    ] as const) {
      const result = await client.callTool(
        { name: 'query', arguments: { sql, max_rows: maxRows } },
        { timeout: 120_000 },
      )
      expect(errorKind(result), textOf(result)).toBe('invalid_argument')
      expect(textOf(result)).toContain('MiB')
    }
    const after = memoryOf(pid as number)
    expect((after.peak - idle.rss) / MiB).toBeLessThan(256)
    const still = await client.callTool({ name: 'query', arguments: { sql: 'SELECT 1 AS one' } })
    expect(still.structuredContent.rows).toEqual([[1]])
  },
  180_000,
)
