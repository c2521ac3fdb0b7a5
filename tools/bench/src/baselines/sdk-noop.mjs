// The SDK's plain server (v2, the generation core builds on) with the same no-op tool as
// keel-noop.mjs: the baseline core's per-call cost is measured against. No Keel code.
//   node sdk-noop.mjs                       stdio
//   node sdk-noop.mjs --http <port>         stateless Streamable HTTP on 127.0.0.1 (both eras per request)
//   node sdk-noop.mjs --http-sessions <port>  2025-era sessions, the SDK's stateful transport per session
// The HTTP parts load only for --http, as a stdio server would not load them (every Keel bin loads
// node:http lazily too): bundled, this file is the cold-start floor of a stdio server (floor.mjs).
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import { registerNoop } from './sdk-noop-tool.mjs'

function factory() {
  const server = new McpServer({ name: 'sdk-noop', version: '0.0.0' })
  registerNoop(server)
  return server
}

const httpAt = process.argv.indexOf('--http')
const sessionsAt = process.argv.indexOf('--http-sessions')
if (httpAt !== -1) {
  void serveHttp(Number(process.argv[httpAt + 1] ?? 0))
} else if (sessionsAt !== -1) {
  void serveHttp(Number(process.argv[sessionsAt + 1] ?? 0), true)
} else {
  serveStdio(factory)
}

/** 2025-era sessions as the SDK's docs serve them: a server and a stateful transport per session. */
async function sessionHandler() {
  const { randomUUID } = await import('node:crypto')
  const { NodeStreamableHTTPServerTransport } = await import('@modelcontextprotocol/node')
  const sessions = new Map()
  return async (req, res) => {
    const id = req.headers['mcp-session-id']
    const known = typeof id === 'string' ? sessions.get(id) : undefined
    if (known) return known.handleRequest(req, res)
    if (id !== undefined || req.method !== 'POST') {
      res.writeHead(404).end()
      return
    }
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (session) => sessions.set(session, transport),
    })
    await factory().connect(transport)
    await transport.handleRequest(req, res)
  }
}

async function serveHttp(port, withSessions = false) {
  const { createServer } = await import('node:http')
  const { localhostHostValidation, toNodeHandler } = await import('@modelcontextprotocol/node')
  const handler = withSessions
    ? await sessionHandler()
    : toNodeHandler(createMcpHandler(factory, { legacy: 'stateless' }))
  const validHost = localhostHostValidation()
  const server = createServer((req, res) => {
    if (!validHost(req, res)) return
    void handler(req, res)
  })
  server.listen(port, '127.0.0.1', () => {
    process.stderr.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`)
  })
  process.stdin.on('end', () => server.close(() => process.exit(0)))
  process.stdin.resume()
}
