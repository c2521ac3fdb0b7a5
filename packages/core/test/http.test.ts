import { request as httpRequest } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RunningServer, run } from '../src/run.js'
import { type Connection, connectHttp } from '../src/testing/index.js'
import { type FixtureDeps, type FixtureOptions, fixture } from './fixture.js'

const TOKEN = 'test-token-0123456789abcdef'

async function start(extra: string[] = []) {
  const server = await run(fixture, {
    argv: ['--transport', 'http', '--port', '0', ...extra],
    env: { LOG_LEVEL: 'silent' },
    manageProcess: false,
  })
  if (!server?.http) throw new Error('no http endpoint')
  return server as RunningServer<FixtureDeps, FixtureOptions> & {
    http: NonNullable<RunningServer<FixtureDeps, FixtureOptions>['http']>
  }
}

interface RawResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** node:http, because fetch cannot set a foreign Host header. */
function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: options.method ?? 'POST', headers: options.headers },
      (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        )
      },
    )
    request.on('error', reject)
    request.end(options.body)
  })
}

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
})

describe('Streamable HTTP (sessions)', () => {
  let server: Awaited<ReturnType<typeof start>>
  beforeAll(async () => {
    server = await start()
  })
  afterAll(async () => {
    await server.close()
  })

  it.each([
    ['v2 client, 2025 era', { generation: 'v2' as const }],
    ['v2 client, 2026-07-28 era', { generation: 'v2' as const, era: 'modern' as const }],
    ['v1 client', { generation: 'v1' as const }],
  ])('serves the %s', async (_label, options) => {
    const connection: Connection = await connectHttp(server.http.url, options)
    try {
      const { tools } = await connection.client.listTools()
      expect(tools.map((tool) => tool.name)).toContain('echo')
      const result = await connection.client.callTool({ name: 'echo', arguments: { message: 'over http' } })
      expect(result.structuredContent).toEqual({ echoed: 'over http' })
    } finally {
      await connection.close()
    }
  })

  it('streams progress to a 2025-era client', async () => {
    const connection = await connectHttp(server.http.url)
    try {
      const updates: unknown[] = []
      await connection.client.callTool(
        { name: 'slow', arguments: { steps: 2, step_ms: 5 } },
        { onprogress: (update) => updates.push(update) },
      )
      expect(updates).toHaveLength(2)
    } finally {
      await connection.close()
    }
  })

  it('answers the health check', async () => {
    const response = await fetch(server.http.url.replace('/mcp', '/healthz'))
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ status: 'ok', name: 'fixture', version: '9.9.9' })
  })

  it('answers malformed JSON with 400 and -32700', async () => {
    const response = await raw(server.http.url, { headers: JSON_HEADERS, body: '{"jsonrpc":' })
    expect(response.status).toBe(400)
    expect(JSON.parse(response.body)).toMatchObject({ id: null, error: { code: -32700 } })
  })

  it('answers a request without jsonrpc with 400 and -32600', async () => {
    const response = await raw(server.http.url, {
      headers: JSON_HEADERS,
      body: '{"id":1,"method":"initialize"}',
    })
    expect(response.status).toBe(400)
    expect(JSON.parse(response.body)).toMatchObject({ id: 1, error: { code: -32600 } })
  })

  it('refuses an oversized body with 413 before reading it all', async () => {
    const response = await raw(server.http.url, {
      headers: JSON_HEADERS,
      body: Buffer.alloc(5 * 1024 * 1024, 0x20),
    })
    expect(response.status).toBe(413)
  })

  it('refuses a foreign Host header (DNS rebinding) with 403', async () => {
    const response = await raw(server.http.url, {
      headers: { ...JSON_HEADERS, host: 'evil.example:80' },
      body: INITIALIZE,
    })
    expect(response.status).toBe(403)
    expect(response.body).toContain('Host not allowed')
  })

  it('refuses a foreign Origin with 403 and accepts a local one', async () => {
    const foreign = await raw(server.http.url, {
      headers: { ...JSON_HEADERS, origin: 'https://evil.example' },
      body: INITIALIZE,
    })
    expect(foreign.status).toBe(403)
    const local = await raw(server.http.url, {
      headers: { ...JSON_HEADERS, origin: 'http://localhost:5173' },
      body: INITIALIZE,
    })
    expect(local.status).toBe(200)
  })

  it('answers unsupported methods with 405 and an Allow header', async () => {
    const response = await raw(server.http.url, { method: 'PUT', headers: JSON_HEADERS, body: '{}' })
    expect(response.status).toBe(405)
    expect(response.headers.allow).toBe('POST, GET, DELETE')
  })

  it('answers an unknown session with 404', async () => {
    const response = await raw(server.http.url, {
      headers: { ...JSON_HEADERS, 'mcp-session-id': 'no-such-session' },
      body: '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
    })
    expect(response.status).toBe(404)
  })

  it('answers other paths with 404', async () => {
    expect((await raw(server.http.url.replace('/mcp', '/other'), { method: 'GET' })).status).toBe(404)
  })

  it('keeps serving after bad requests', async () => {
    const connection = await connectHttp(server.http.url)
    try {
      expect(
        (await connection.client.callTool({ name: 'echo', arguments: { message: 'ok' } })).isError,
      ).toBeFalsy()
    } finally {
      await connection.close()
    }
  })
})

describe('Streamable HTTP with a bearer token', () => {
  let server: Awaited<ReturnType<typeof start>>
  beforeAll(async () => {
    server = await run(fixture, {
      argv: ['--transport', 'http', '--port', '0'],
      env: { LOG_LEVEL: 'silent', MCP_AUTH_TOKEN: TOKEN },
      manageProcess: false,
    }).then((started) => started as Awaited<ReturnType<typeof start>>)
  })
  afterAll(async () => {
    await server.close()
  })

  it('answers a missing token with 401 and a Bearer challenge', async () => {
    const response = await raw(server.http.url, { headers: JSON_HEADERS, body: INITIALIZE })
    expect(response.status).toBe(401)
    expect(response.headers['www-authenticate']).toBe('Bearer realm="mcp"')
  })

  it('answers a wrong token with 401 and error="invalid_token"', async () => {
    const response = await raw(server.http.url, {
      headers: { ...JSON_HEADERS, authorization: 'Bearer wrong-token' },
      body: INITIALIZE,
    })
    expect(response.status).toBe(401)
    expect(response.headers['www-authenticate']).toContain('error="invalid_token"')
  })

  it('serves a client with the right token', async () => {
    const connection = await connectHttp(server.http.url, { token: TOKEN })
    try {
      expect((await connection.client.listTools()).tools.length).toBeGreaterThan(0)
    } finally {
      await connection.close()
    }
  })

  it('keeps the health check open', async () => {
    expect((await fetch(server.http.url.replace('/mcp', '/healthz'))).status).toBe(200)
  })
})

describe('Streamable HTTP, stateless', () => {
  let server: Awaited<ReturnType<typeof start>>
  beforeAll(async () => {
    server = await start(['--stateless'])
  })
  afterAll(async () => {
    await server.close()
  })

  it.each([
    ['v2 client, 2025 era', { generation: 'v2' as const }],
    ['v2 client, 2026-07-28 era', { generation: 'v2' as const, era: 'modern' as const }],
    ['v1 client', { generation: 'v1' as const }],
  ])('serves the %s without sessions', async (_label, options) => {
    const connection = await connectHttp(server.http.url, options)
    try {
      const result = await connection.client.callTool({ name: 'echo', arguments: { message: 'stateless' } })
      expect(result.structuredContent).toEqual({ echoed: 'stateless' })
    } finally {
      await connection.close()
    }
  })

  it('answers GET with 405', async () => {
    const response = await raw(server.http.url, { method: 'GET', headers: { accept: 'text/event-stream' } })
    expect(response.status).toBe(405)
  })

  it('gives no session id to a 2025-era initialize', async () => {
    const response = await raw(server.http.url, { headers: JSON_HEADERS, body: INITIALIZE })
    expect(response.status).toBe(200)
    expect(response.headers['mcp-session-id']).toBeUndefined()
  })
})

describe('start-up failures', () => {
  it('rejects a port that is already in use', async () => {
    const first = await start()
    try {
      await expect(
        run(fixture, {
          argv: ['--transport', 'http', '--port', String(first.http.port)],
          env: { LOG_LEVEL: 'silent' },
          manageProcess: false,
        }),
      ).rejects.toThrow(/EADDRINUSE/)
    } finally {
      await first.close()
    }
  })
})
