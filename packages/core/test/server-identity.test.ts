import { afterEach, describe, expect, it } from 'vitest'
import { defineServer, svgIcon, toolFactory, z } from '../src/index.js'
import { type RunningServer, run } from '../src/run.js'
import { type Connection, connectInMemory } from '../src/testing/index.js'

// What identifies the server on each 2026-07-28 result (`_meta["io.modelcontextprotocol/serverInfo"]`,
// stamped by the SDK): its name, version and title; the icons come once, with server/discover.

const SERVER_INFO = 'io.modelcontextprotocol/serverInfo'
const ICON = svgIcon(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3"/></svg>',
)
const defineTool = toolFactory<Record<string, never>>()

const spec = defineServer<Record<string, never>, Record<string, never>>({
  name: 'identity-fixture',
  version: '2.3.4',
  title: 'Identity fixture',
  description: 'identity fixture',
  icons: [ICON],
  tools: [
    defineTool({
      name: 'echo',
      title: 'Echo',
      description: 'Echoes.',
      input: { message: z.string().describe('Text') },
      annotations: { readOnlyHint: true, openWorldHint: false },
      run: ({ message }) => ({ text: message }),
    }),
  ],
  createDeps: () => ({}),
})

const open: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => {})
})

async function httpServer(): Promise<RunningServer<Record<string, never>, Record<string, never>>> {
  const server = await run(spec, {
    argv: ['--transport', 'http', '--port', '0'],
    env: { LOG_LEVEL: 'silent' },
    manageProcess: false,
  })
  if (!server?.http) throw new Error('no http endpoint')
  open.push(server)
  return server
}

const identity = { name: 'identity-fixture', version: '2.3.4', title: 'Identity fixture' }

describe('the server identity on each result', () => {
  it('is name, version and title on a 2026-07-28 call (in memory); discovery still carries the icons', async () => {
    const connection: Connection = await connectInMemory(spec, { era: 'modern' })
    open.push(connection)
    const result = await connection.client.callTool({ name: 'echo', arguments: { message: 'hi' } })
    expect(result.content).toEqual([{ type: 'text', text: 'hi' }])
    expect(result._meta?.[SERVER_INFO]).toEqual(identity)
    expect(connection.client.getServerVersion()).toMatchObject({ ...identity, icons: [ICON] })
  })

  it('is the same over Streamable HTTP, read off the wire; discovery there carries the icons', async () => {
    const server = await httpServer()
    const post = async (method: string, params: Record<string, unknown>, name?: string) => {
      const response = await fetch(server.http?.url as string, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': method,
          ...(name ? { 'mcp-name': name } : {}),
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method,
          params: {
            ...params,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      })
      const text = await response.text()
      expect(response.status, text).toBe(200)
      return {
        text,
        body: JSON.parse(text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? '{}')),
      }
    }
    const called = await post('tools/call', { name: 'echo', arguments: { message: 'hi' } }, 'echo')
    expect(called.body.result._meta[SERVER_INFO]).toEqual(identity)
    expect(called.text).not.toContain('data:image/svg+xml')
    const discovered = await post('server/discover', {})
    expect(discovered.body.result._meta[SERVER_INFO]).toEqual({ ...identity, icons: [ICON] })
  })

  it('is not stamped on a 2025-era result, where initialize carries the icons', async () => {
    const connection: Connection = await connectInMemory(spec)
    open.push(connection)
    const result = await connection.client.callTool({ name: 'echo', arguments: { message: 'hi' } })
    expect(result._meta?.[SERVER_INFO]).toBeUndefined()
    expect(connection.client.getServerVersion()).toMatchObject({ ...identity, icons: [ICON] })
  })
})
