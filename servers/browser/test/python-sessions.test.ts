import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { pythonMcp, runPythonScript, type SpawnedHttpServer, spawnHttp } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Fixtures, startFixtures } from './fixtures.js'

// A client no one here wrote: the Python MCP SDK (2.3.0) drives the built bin over Streamable
// HTTP through a multi-step browser flow, in its default mode (2026-07-28: no session, the
// session handle carried from call to call) and in its initialize mode (the connection's session).

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const FLOW = fileURLToPath(new URL('./python/browser_flow.py', import.meta.url))

let fixtures: Fixtures
let server: SpawnedHttpServer
let script: string
beforeAll(async () => {
  ;[fixtures, server, script] = await Promise.all([
    startFixtures(),
    spawnHttp(process.execPath, [BIN, '--allow-private-network']),
    // The venv is made once (core's Python harness) while the rest starts.
    pythonMcp().then(() => readFile(FLOW, 'utf8')),
  ])
}, 360_000)
afterAll(async () => {
  await server?.close()
  await fixtures?.close()
})

async function flow(mode: 'auto' | 'legacy') {
  const { stdout } = await runPythonScript(script, {
    args: [server.url, fixtures.url, mode],
    timeoutMs: 90_000,
  })
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}')
}

describe('the Python MCP SDK drives a browser flow over Streamable HTTP', () => {
  it('in its default mode (2026-07-28, no session), carrying the session handle', async () => {
    const report = await flow('auto')
    expect(report.protocol).toBe('2026-07-28')
    expect(report.session).toMatch(/^session\./)
    expect(report.sessionInText).toBe(true)
    expect(report.clicked).toContain('name=Ada')
    expect(report.tabs).toHaveLength(2)
    expect(report.back).toMatchObject({ tab: 't1', url: `${fixtures.url}/form`, session: report.session })
    expect(report.afterClose).toMatchObject({ isError: true })
    expect(report.afterClose.text).toMatch(/^not_found: The session handle has ended/)
  })

  it('in its initialize mode, on the connection’s own session without a handle', async () => {
    const report = await flow('legacy')
    expect(report.protocol).toMatch(/^2025-/)
    expect(report.session).toBeNull()
    expect(report.clicked).toContain('name=Ada')
    expect(report.tabs).toHaveLength(2)
    expect(report.back).toMatchObject({ tab: 't1', url: `${fixtures.url}/form` })
  })
})
