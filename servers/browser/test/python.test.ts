import { fileURLToPath } from 'node:url'
import { pythonMcp, runPythonClient, spawnHttp } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Fixtures, startFixtures } from './fixtures.js'

// The Python MCP SDK opens a page with the built bin: over stdio in its default 2026-07-28 mode,
// over Streamable HTTP with the `initialize` handshake.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
let fixtures: Fixtures
beforeAll(async () => {
  await pythonMcp()
  fixtures = await startFixtures()
}, 300_000)
afterAll(async () => {
  await fixtures?.close()
})

const navigate = () => [{ op: 'call_tool', name: 'navigate', arguments: { url: `${fixtures.url}/form` } }]

function expectForm(run: Awaited<ReturnType<typeof runPythonClient>>, version: string) {
  expect(run.connectError).toBeUndefined()
  expect(run.protocolVersion).toBe(version)
  const result = run.results[0]
  if (!result || !('ok' in result)) throw new Error(`${JSON.stringify(result)} ${run.stderr.slice(-1500)}`)
  expect(result.ok.isError).toBe(false)
  expect(result.ok.content[0].text).toMatch(/textbox "Name" #e\d+/)
  expect(result.ok.structuredContent).toMatchObject({ url: `${fixtures.url}/form` })
}

describe('the Python MCP SDK', () => {
  it('navigates and reads the page over stdio in auto mode (2026-07-28)', async () => {
    const run = await runPythonClient({
      target: { command: process.execPath, args: [BIN, '--allow-private-network'] },
      mode: 'auto',
      steps: navigate(),
    })
    expectForm(run, '2026-07-28')
  })

  it('navigates and reads the page over Streamable HTTP with the initialize handshake', async () => {
    const server = await spawnHttp(process.execPath, [BIN, '--allow-private-network'])
    try {
      const run = await runPythonClient({ target: { url: server.url }, mode: 'legacy', steps: navigate() })
      expectForm(run, '2025-11-25')
    } finally {
      await server.close()
    }
  })
})
