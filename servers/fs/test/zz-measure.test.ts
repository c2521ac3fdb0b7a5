import { writeFileSync } from 'node:fs'
import { connectInMemory } from '@keel-mcp/core/testing'
import { expect, it } from 'vitest'
import { server } from '../src/server.js'

it('measures', async () => {
  const connection = await connectInMemory(server as never, { argv: ['/tmp', '--toolsets', 'all'], env: {} })
  const { tools } = await connection.client.listTools()
  const per = Object.fromEntries(tools.map((tool) => [tool.name, Math.round(Buffer.byteLength(JSON.stringify(tool)) / 4)]))
  const average = Buffer.byteLength(JSON.stringify({ tools })) / 4 / tools.length
  writeFileSync(`/tmp/budgets/fs-${process.env.LABEL ?? 'before'}.json`, JSON.stringify({ average, per, tools }, null, 1))
  await connection.close()
  expect(tools.length).toBeGreaterThan(0)
})
