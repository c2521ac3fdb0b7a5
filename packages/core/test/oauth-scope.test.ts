import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { importJWK, SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type HttpEndpoint, serveHttp } from '../src/http.js'
import { defineServer, toolFactory, z } from '../src/index.js'
import { prepare } from '../src/run.js'
import { startIssuer, type TestIssuer } from './oauth-issuer.js'

// The shape of the scope claim, decided once for JWTs and introspection alike: `scope` is the
// space-separated string of RFC 9068 / RFC 7662, and nothing else; `scp` (sent by some issuers
// instead) is read only without `scope`, as that string or as an array of scope tokens.

const defineTool = toolFactory<object>()
const whoami = defineTool({
  name: 'whoami',
  title: 'Who am I',
  description: 'The verified scopes.',
  input: {},
  output: { scopes: z.array(z.string()) },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: (_input, { auth }) => ({ data: { scopes: [...(auth?.scopes ?? [])] } }),
})
const write = defineTool({
  name: 'write_note',
  title: 'Write',
  description: 'Writes.',
  input: {},
  annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
  run: () => ({ text: 'written' }),
})
const spec = defineServer<object>({
  name: 'oauth-scope-fixture',
  version: '1.0.0',
  description: 'OAuth scope claim test server',
  tools: [whoami, write],
  createDeps: () => ({}),
})

/** An RFC 7662 endpoint answering what the test says about each opaque token. */
async function introspectionEndpoint(answers: Map<string, Record<string, unknown>>) {
  const server: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const token = new URLSearchParams(Buffer.concat(chunks).toString()).get('token') ?? ''
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end(JSON.stringify(answers.get(token) ?? { active: false }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/introspect`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
}

async function post(endpoint: HttpEndpoint, token: string, body: unknown, session?: string) {
  const response = await fetch(endpoint.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      ...(session ? { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } : {}),
    },
    body: JSON.stringify(body),
  })
  return { status: response.status, headers: response.headers, text: await response.text() }
}

/** Opens a session with `token` and calls the writing tool: the HTTP status of that call. */
async function writeWith(endpoint: HttpEndpoint, token: string): Promise<number> {
  const opened = await post(endpoint, token, INITIALIZE)
  if (opened.status !== 200) return opened.status
  const session = opened.headers.get('mcp-session-id') ?? ''
  await post(endpoint, token, { jsonrpc: '2.0', method: 'notifications/initialized' }, session)
  const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'write_note', arguments: {} } }
  return (await post(endpoint, token, call, session)).status
}

describe('the scope claim of an access token', () => {
  let issuer: TestIssuer
  let endpoint: HttpEndpoint
  let introspection: Awaited<ReturnType<typeof introspectionEndpoint>>
  const answers = new Map<string, Record<string, unknown>>()

  beforeAll(async () => {
    issuer = await startIssuer()
    introspection = await introspectionEndpoint(answers)
    const runtime = await prepare(spec, {
      argv: [
        '--transport',
        'http',
        '--port',
        '0',
        '--auth-issuer',
        issuer.url,
        '--auth-scopes',
        'mcp:read',
        '--auth-introspection-url',
        introspection.url,
      ],
      env: {
        LOG_LEVEL: 'silent',
        MCP_AUTH_CLIENT_ID: 'resource-server',
        MCP_AUTH_CLIENT_SECRET: 'rs-secret-x',
      },
    })
    endpoint = await serveHttp(runtime, { jwksCooldownMs: 0 })
    issuer.resource = endpoint.url
  })
  afterAll(async () => {
    await endpoint?.close()
    await introspection?.close()
    await issuer?.close()
  })

  /** A JWT the issuer's own key signs, with these claims over valid defaults. */
  async function signed(claims: Record<string, unknown>): Promise<string> {
    const now = Math.floor(Date.now() / 1000)
    return new SignJWT({
      iss: issuer.url,
      aud: issuer.resource,
      sub: 'caller',
      client_id: 'caller',
      iat: now,
      exp: now + 300,
      ...claims,
    })
      .setProtectedHeader({ alg: 'RS256', kid: issuer.signingKey.kid as string, typ: 'at+jwt' })
      .sign(await importJWK(issuer.signingKey, 'RS256'))
  }

  /** An opaque token whose introspection answer carries these claims over valid defaults. */
  function opaque(claims: Record<string, unknown>): string {
    const token = `opaque-${answers.size}-token`
    answers.set(token, {
      active: true,
      iss: issuer.url,
      aud: endpoint.url,
      sub: 'caller',
      client_id: 'caller',
      exp: Math.floor(Date.now() / 1000) + 300,
      ...claims,
    })
    return token
  }

  const mint = { jwt: signed, introspection: async (claims: Record<string, unknown>) => opaque(claims) }

  describe.each(['jwt', 'introspection'] as const)('verified by %s', (how) => {
    it.each([
      ['an array in scope', { scope: ['mcp:read', 'mcp:write'] }],
      ['a number in scope', { scope: 42 }],
      ['an object in scope', { scope: { 'mcp:write': true } }],
      ['an array in scope beside a string scp', { scope: ['mcp:read', 'mcp:write'], scp: 'mcp:read' }],
      ['an scp array with a non-string', { scp: ['mcp:read', 7] }],
      ['an scp array with a spaced item', { scp: ['mcp:read mcp:write'] }],
      ['an scp object', { scp: { 'mcp:write': true } }],
    ])('refuses a token with %s: 401 invalid_token, nothing granted', async (_label, claims) => {
      const response = await post(endpoint, await mint[how](claims), INITIALIZE)
      expect(response.status).toBe(401)
      expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"')
    })

    it('grants the write scope from a space-separated scope string', async () => {
      expect(await writeWith(endpoint, await mint[how]({ scope: 'mcp:read mcp:write' }))).toBe(200)
      expect(await writeWith(endpoint, await mint[how]({ scope: 'mcp:read' }))).toBe(403)
    })

    it('reads scp only without scope: a string, or an array of scope tokens', async () => {
      expect(await writeWith(endpoint, await mint[how]({ scp: 'mcp:read mcp:write' }))).toBe(200)
      expect(await writeWith(endpoint, await mint[how]({ scp: ['mcp:read', 'mcp:write'] }))).toBe(200)
      expect(await writeWith(endpoint, await mint[how]({ scp: ['mcp:read'] }))).toBe(403)
      // With scope present, scp grants nothing more.
      expect(
        await writeWith(endpoint, await mint[how]({ scope: 'mcp:read', scp: ['mcp:read', 'mcp:write'] })),
      ).toBe(403)
    })
  })
})
