import {
  Client,
  ClientCredentialsProvider,
  type OAuthClientProvider,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client'
import { ClientCredentialsProvider as V1ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as V1StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { importJWK, SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type HttpEndpoint, serveHttp } from '../src/http.js'
import { defineServer, handleArgument, toolFactory, z } from '../src/index.js'
import { prepare } from '../src/run.js'
import {
  BROWSER_CLIENT,
  CLIENTS,
  type ClientName,
  startIssuer,
  type TestIssuer,
  USER,
} from './oauth-issuer.js'

// OAuth 2.1 resource server end to end: a real authorization server (oidc-provider) on loopback,
// the MCP server in front of it, the SDK v2 client's own OAuth support, and raw requests for the
// tokens a well-behaved client never sends.

interface Deps {
  notes: string[]
}

const defineTool = toolFactory<Deps>()

const whoami = defineTool({
  name: 'whoami',
  title: 'Who am I',
  description: 'The verified caller.',
  input: {},
  output: {
    subject: z.string().optional(),
    clientId: z.string().optional(),
    scopes: z.array(z.string()),
    tokenVisible: z.boolean(),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: (_input, { auth }) => ({
    data: {
      ...(auth?.subject ? { subject: auth.subject } : {}),
      ...(auth?.clientId ? { clientId: auth.clientId } : {}),
      scopes: [...(auth?.scopes ?? [])],
      tokenVisible: auth?.token !== undefined,
    },
  }),
})

const addNote = defineTool({
  name: 'add_note',
  title: 'Add note',
  description: 'Store a note.',
  input: { text: z.string() },
  annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
  run: ({ text }, { deps, auth }) => {
    deps.notes.push(`${auth?.subject}: ${text}`)
    return { text: `stored ${deps.notes.length}` }
  },
})

// A state handle is bound to the subject that opened it.
const openNotebook = defineTool({
  name: 'open_notebook',
  title: 'Open notebook',
  description: 'Opens a notebook; returns its handle.',
  input: {},
  output: { notebook: z.string().optional() },
  annotations: { readOnlyHint: true, openWorldHint: false },
  handle: { kind: 'notebook', opens: 'always' },
  run: () => ({ data: {} }),
})

const readNotebook = defineTool({
  name: 'read_notebook',
  title: 'Read notebook',
  description: 'Reads a notebook.',
  input: { notebook: handleArgument('Notebook handle') },
  output: { key: z.string(), notebook: z.string().optional() },
  annotations: { readOnlyHint: true, openWorldHint: false },
  handle: { kind: 'notebook' },
  run: (_input, { handle }) => ({ data: { key: handle?.key ?? '' } }),
})

const spec = defineServer<Deps>({
  name: 'oauth-fixture',
  version: '1.0.0',
  description: 'OAuth test server',
  tools: [whoami, addNote, openNotebook, readNotebook],
  handles: { notebook: { opener: 'open_notebook', close: () => {} } },
  createDeps: () => ({ notes: [] }),
})

const INTROSPECTION_ENV = {
  MCP_AUTH_CLIENT_ID: 'resource-server',
  MCP_AUTH_CLIENT_SECRET: CLIENTS['resource-server'].secret,
}

async function startServer(issuer: TestIssuer, extra: string[] = [], env: Record<string, string> = {}) {
  const runtime = await prepare(spec, {
    argv: ['--transport', 'http', '--port', '0', '--auth-issuer', issuer.url, ...extra],
    env: { LOG_LEVEL: 'silent', ...env },
  })
  // No cooldown between key-set refetches, so the rotation test needs no wait.
  const endpoint = await serveHttp(runtime, { jwksCooldownMs: 0 })
  return { runtime, endpoint }
}

function sdkClient(endpoint: HttpEndpoint, issuer: TestIssuer, client: ClientName, era?: 'modern') {
  const provider = new ClientCredentialsProvider({
    clientId: client,
    clientSecret: CLIENTS[client].secret,
    scope: CLIENTS[client].scope,
    expectedIssuer: issuer.url,
  })
  const transport = new StreamableHTTPClientTransport(new URL(endpoint.url), { authProvider: provider })
  const mcp = new Client(
    { name: 'oauth-test', version: '1.0.0' },
    era === 'modern' ? ({ versionNegotiation: { mode: { pin: '2026-07-28' } } } as never) : {},
  )
  return { mcp, transport, provider }
}

/** The v1 SDK client (`@modelcontextprotocol/sdk` 1.x) with its own client-credentials provider. */
function v1SdkClient(endpoint: HttpEndpoint, issuer: TestIssuer, client: ClientName) {
  const provider = new V1ClientCredentialsProvider({
    clientId: client,
    clientSecret: CLIENTS[client].secret,
    scope: CLIENTS[client].scope,
    expectedIssuer: issuer.url,
  })
  const transport = new V1StreamableHTTPClientTransport(new URL(endpoint.url), { authProvider: provider })
  const mcp = new V1Client({ name: 'oauth-test-v1', version: '1.0.0' })
  return { mcp, transport }
}

/** An in-memory OAuthClientProvider for a public client: what a desktop or web app keeps. */
function browserAppProvider() {
  const stored: { tokens?: unknown; verifier?: string; authorizationUrl?: URL } = {}
  const provider: OAuthClientProvider = {
    get redirectUrl() {
      return BROWSER_CLIENT.redirectUri
    },
    get clientMetadata() {
      return {
        client_name: 'Browser app',
        redirect_uris: [BROWSER_CLIENT.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }
    },
    clientInformation: () => ({ client_id: BROWSER_CLIENT.id }),
    tokens: () => stored.tokens as never,
    saveTokens: (tokens) => {
      stored.tokens = tokens
    },
    redirectToAuthorization: (url) => {
      stored.authorizationUrl = url
    },
    saveCodeVerifier: (verifier) => {
      stored.verifier = verifier
    },
    codeVerifier: () => stored.verifier ?? '',
  }
  return { provider, stored }
}

/**
 * The user agent's part: follows the issuer's redirects (with its cookies) from the authorization
 * URL through sign-in and consent to the client's redirect URI, and returns the callback's query.
 */
async function userAgent(authorizationUrl: URL): Promise<URLSearchParams> {
  const cookies = new Map<string, string>()
  let next = authorizationUrl.href
  for (let hop = 0; hop < 20; hop++) {
    if (next.startsWith(BROWSER_CLIENT.redirectUri)) return new URL(next).searchParams
    const response = await fetch(next, {
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
    })
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const at = (pair ?? '').indexOf('=')
      if (at > 0) cookies.set((pair as string).slice(0, at), (pair as string).slice(at + 1))
    }
    const location = response.headers.get('location')
    if (!location)
      throw new Error(`the issuer stopped at ${next} with ${response.status}: ${await response.text()}`)
    await response.body?.cancel()
    next = new URL(location, next).href
  }
  throw new Error('too many redirects')
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
}

async function post(endpoint: HttpEndpoint, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(endpoint.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, text }
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** A 2025-era session for `token`, and a raw tools/call on it. */
async function openSession(endpoint: HttpEndpoint, token: string): Promise<string> {
  const opened = await post(endpoint, INITIALIZE, bearer(token))
  expect(opened.status).toBe(200)
  const session = opened.headers.get('mcp-session-id')
  if (!session) throw new Error('no session id')
  await post(
    endpoint,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    {
      ...bearer(token),
      'mcp-session-id': session,
      'mcp-protocol-version': '2025-11-25',
    },
  )
  return session
}

function callOn(endpoint: HttpEndpoint, token: string, session: string, name: string, args: object = {}) {
  return post(
    endpoint,
    { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args } },
    { ...bearer(token), 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
  )
}

/** Signs claims with the issuer's own current key: valid signatures on tokens the issuer would not issue. */
async function forge(
  issuer: TestIssuer,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
) {
  const key = await importJWK(issuer.signingKey, 'RS256')
  const now = Math.floor(Date.now() / 1000)
  return new SignJWT({
    iss: issuer.url,
    aud: issuer.resource,
    sub: 'writer',
    iat: now,
    exp: now + 300,
    scope: 'mcp:read mcp:write',
    client_id: 'writer',
    ...claims,
  })
    .setProtectedHeader({ alg: 'RS256', kid: issuer.signingKey.kid as string, typ: 'at+jwt', ...header })
    .sign(key)
}

function challengeOf(headers: Headers): string {
  return headers.get('www-authenticate') ?? ''
}

describe('OAuth 2.1 resource server', () => {
  let issuer: TestIssuer
  let endpoint: HttpEndpoint
  let deps: Deps
  const metadataUrl = () => `${new URL(endpoint.url).origin}/.well-known/oauth-protected-resource/mcp`

  beforeAll(async () => {
    issuer = await startIssuer()
    const started = await startServer(
      issuer,
      ['--auth-scopes', 'mcp:read', '--auth-introspection-url', `${issuer.url}/token/introspection`],
      INTROSPECTION_ENV,
    )
    endpoint = started.endpoint
    deps = started.runtime.deps
    issuer.resource = endpoint.url
  })
  afterAll(async () => {
    await endpoint?.close()
    await issuer?.close()
  })

  it('serves Protected Resource Metadata at the path-suffixed and the bare well-known URL', async () => {
    for (const path of [
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-protected-resource',
    ]) {
      const response = await fetch(new URL(path, endpoint.url))
      expect(response.status).toBe(200)
      expect(response.headers.get('access-control-allow-origin')).toBe('*')
      expect(await response.json()).toEqual({
        resource: endpoint.url,
        authorization_servers: [issuer.url],
        scopes_supported: ['mcp:read', 'mcp:write'],
      })
    }
    const other = await fetch(new URL('/.well-known/oauth-protected-resource/elsewhere', endpoint.url))
    expect(other.status).toBe(404)
    const wrongMethod = await fetch(new URL('/.well-known/oauth-protected-resource/mcp', endpoint.url), {
      method: 'POST',
    })
    expect(wrongMethod.status).toBe(405)
  })

  it('answers a request without a token 401 with a challenge naming the metadata and the scope', async () => {
    const response = await post(endpoint, INITIALIZE)
    expect(response.status).toBe(401)
    const challenge = challengeOf(response.headers)
    expect(challenge).toMatch(/^Bearer /)
    expect(challenge).toContain(`resource_metadata="${metadataUrl()}"`)
    expect(challenge).toContain('scope="mcp:read"')
  })

  it('lets the SDK v2 client discover the issuer, obtain a token and call tools as its subject', async () => {
    const { mcp, transport } = sdkClient(endpoint, issuer, 'writer')
    await mcp.connect(transport)
    try {
      const { tools } = await mcp.listTools()
      expect(tools.map((tool) => tool.name).sort()).toEqual([
        'add_note',
        'open_notebook',
        'read_notebook',
        'whoami',
      ])
      // The client asks for what the 401 challenge named: the scope every call needs, no more.
      const me = await mcp.callTool({ name: 'whoami', arguments: {} })
      // The access token is for this server alone: tools never see it, so none can pass it on.
      expect(me.structuredContent).toEqual({
        subject: 'writer',
        clientId: 'writer',
        scopes: ['mcp:read'],
        tokenVisible: false,
      })
      // A tool that writes gets a 403 naming the write scope; the client steps up and retries.
      const stored = await mcp.callTool({ name: 'add_note', arguments: { text: 'hello' } })
      expect(stored.isError).toBeFalsy()
      expect(deps.notes).toContain('writer: hello')
      const after = await mcp.callTool({ name: 'whoami', arguments: {} })
      expect(after.structuredContent).toMatchObject({ scopes: ['mcp:read', 'mcp:write'] })
    } finally {
      await mcp.close()
    }
    expect(issuer.hits.get('/token')).toBeGreaterThan(1)
  })

  it('lets a user sign in with the authorization-code flow (PKCE) and act as themselves', async () => {
    const { provider, stored } = browserAppProvider()
    const mcp = new Client({ name: 'browser-app', version: '1.0.0' })
    const first = new StreamableHTTPClientTransport(new URL(endpoint.url), { authProvider: provider })
    // No token yet: the client discovers the issuer and sends the user to sign in.
    await expect(mcp.connect(first)).rejects.toBeInstanceOf(UnauthorizedError)
    const authorizationUrl = stored.authorizationUrl as URL
    expect(authorizationUrl.origin).toBe(issuer.url)
    expect(authorizationUrl.searchParams.get('resource')).toBe(endpoint.url)
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256')
    const callback = await userAgent(authorizationUrl)
    await first.finishAuth(callback)
    const transport = new StreamableHTTPClientTransport(new URL(endpoint.url), { authProvider: provider })
    await mcp.connect(transport)
    try {
      const me = await mcp.callTool({ name: 'whoami', arguments: {} })
      expect(me.structuredContent).toMatchObject({
        subject: USER,
        clientId: BROWSER_CLIENT.id,
        scopes: ['mcp:read'],
      })
      // Writing needs mcp:write: the 403 sends the user back to consent to it (step-up).
      await expect(
        mcp.callTool({ name: 'add_note', arguments: { text: 'signed in' } }),
      ).rejects.toBeInstanceOf(UnauthorizedError)
      const stepUp = stored.authorizationUrl as URL
      expect(stepUp.searchParams.get('scope')?.split(' ').sort()).toEqual(['mcp:read', 'mcp:write'])
      await transport.finishAuth(await userAgent(stepUp))
      const written = await mcp.callTool({ name: 'add_note', arguments: { text: 'signed in' } })
      expect(written.isError).toBeFalsy()
      expect(deps.notes).toContain(`${USER}: signed in`)
    } finally {
      await mcp.close()
    }
  })

  it('serves the SDK v2 client in the 2026-07-28 era (per request, no session) the same way', async () => {
    const { mcp, transport } = sdkClient(endpoint, issuer, 'writer', 'modern')
    await mcp.connect(transport)
    try {
      expect(transport.sessionId).toBeUndefined()
      const me = await mcp.callTool({ name: 'whoami', arguments: {} })
      expect(me.structuredContent).toMatchObject({ subject: 'writer', scopes: ['mcp:read'] })
      const stored = await mcp.callTool({ name: 'add_note', arguments: { text: 'modern' } })
      expect(stored.isError).toBeFalsy()
      expect(deps.notes).toContain('writer: modern')
    } finally {
      await mcp.close()
    }
  })

  it("binds a state handle to its subject: another subject's call with it is refused", async () => {
    const writer = sdkClient(endpoint, issuer, 'writer', 'modern')
    const reader = sdkClient(endpoint, issuer, 'reader', 'modern')
    await writer.mcp.connect(writer.transport)
    await reader.mcp.connect(reader.transport)
    try {
      const opened = await writer.mcp.callTool({ name: 'open_notebook', arguments: {} })
      const notebook = (opened.structuredContent as { notebook: string }).notebook
      const own = await writer.mcp.callTool({ name: 'read_notebook', arguments: { notebook } })
      expect(own.isError).toBeFalsy()
      const stolen = await reader.mcp.callTool({ name: 'read_notebook', arguments: { notebook } })
      expect(stolen.isError).toBe(true)
      expect((stolen.content as Array<{ text: string }>)[0]?.text).toMatch(
        /^permission_denied: The notebook handle belongs to another caller[\s\S]*open_notebook/,
      )
    } finally {
      await writer.mcp.close()
      await reader.mcp.close()
    }
  })

  it('serves the v1 SDK client (its own OAuth support) the same way', async () => {
    const { mcp, transport } = v1SdkClient(endpoint, issuer, 'writer')
    await mcp.connect(transport as never)
    try {
      const me = await mcp.callTool({ name: 'whoami', arguments: {} })
      expect(me.structuredContent).toMatchObject({ subject: 'writer' })
      const stored = await mcp.callTool({ name: 'add_note', arguments: { text: 'v1' } })
      expect(stored.isError).toBeFalsy()
      expect(deps.notes).toContain('writer: v1')
    } finally {
      await mcp.close()
    }
  })

  it('lets a read-only token read, and refuses a tool that writes with 403 insufficient_scope', async () => {
    const token = await issuer.token('reader')
    const session = await openSession(endpoint, token)
    const read = await callOn(endpoint, token, session, 'whoami')
    expect(read.status).toBe(200)
    expect(read.text).toContain('"subject":"reader"')
    const before = deps.notes.length
    const write = await callOn(endpoint, token, session, 'add_note', { text: 'nope' })
    expect(write.status).toBe(403)
    const challenge = challengeOf(write.headers)
    expect(challenge).toContain('error="insufficient_scope"')
    expect(challenge).toContain('scope="mcp:read mcp:write"')
    expect(challenge).toContain(`resource_metadata="${metadataUrl()}"`)
    expect(JSON.parse(write.text)).toMatchObject({ error: 'insufficient_scope' })
    expect(deps.notes.length).toBe(before)
  })

  it('refuses the write through the SDK client too when the client may not get the write scope', async () => {
    const { mcp, transport } = sdkClient(endpoint, issuer, 'reader')
    await mcp.connect(transport)
    const before = deps.notes.length
    try {
      const me = await mcp.callTool({ name: 'whoami', arguments: {} })
      expect(me.structuredContent).toMatchObject({ subject: 'reader', scopes: ['mcp:read'] })
      await expect(mcp.callTool({ name: 'add_note', arguments: { text: 'nope' } })).rejects.toThrow()
    } finally {
      await mcp.close()
    }
    expect(deps.notes.length).toBe(before)
  })

  it('refuses a token without the required scope with 403 insufficient_scope', async () => {
    const token = await issuer.token('outsider')
    const response = await post(endpoint, INITIALIZE, bearer(token))
    expect(response.status).toBe(403)
    expect(challengeOf(response.headers)).toContain('error="insufficient_scope"')
    expect(challengeOf(response.headers)).toContain('scope="mcp:read"')
  })

  it.each([
    ['expired', async () => forge(issuer, { exp: Math.floor(Date.now() / 1000) - 600 })],
    [
      'wrong audience (issued by the issuer for another resource)',
      async () => issuer.token('writer', { resource: 'http://127.0.0.1:1/other' }),
    ],
    ['wrong issuer', async () => forge(issuer, { iss: 'http://127.0.0.1:1' })],
    ['not yet valid', async () => forge(issuer, { nbf: Math.floor(Date.now() / 1000) + 600 })],
    [
      'tampered (scope widened after signing)',
      async () => {
        const [header, payload, signature] = (await issuer.token('reader')).split('.') as [
          string,
          string,
          string,
        ]
        const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
        claims.scope = 'mcp:read mcp:write'
        return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`
      },
    ],
    [
      'alg none',
      async () => {
        const real = JSON.parse(
          Buffer.from((await forge(issuer, {})).split('.')[1] as string, 'base64url').toString(),
        )
        const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')
        return `${header}.${Buffer.from(JSON.stringify(real)).toString('base64url')}.`
      },
    ],
    [
      'HS256 keyed with the public key (algorithm confusion)',
      async () => {
        const now = Math.floor(Date.now() / 1000)
        return new SignJWT({ scope: 'mcp:read mcp:write' })
          .setProtectedHeader({ alg: 'HS256', kid: issuer.signingKey.kid as string })
          .setSubject('writer')
          .setIssuer(issuer.url)
          .setAudience(issuer.resource)
          .setIssuedAt(now)
          .setExpirationTime(now + 300)
          .sign(new TextEncoder().encode(issuer.signingKey.n as string))
      },
    ],
    [
      'signed by a key the issuer does not publish',
      async () => {
        const { generateKeyPair } = await import('jose')
        const { privateKey } = await generateKeyPair('RS256')
        const now = Math.floor(Date.now() / 1000)
        return new SignJWT({ scope: 'mcp:read mcp:write' })
          .setProtectedHeader({ alg: 'RS256', kid: issuer.signingKey.kid as string })
          .setSubject('writer')
          .setIssuer(issuer.url)
          .setAudience(issuer.resource)
          .setIssuedAt(now)
          .setExpirationTime(now + 300)
          .sign(privateKey)
      },
    ],
    ['opaque and unknown to the issuer', async () => 'opaque-token-the-issuer-never-issued'],
    [
      'opaque, active, but for another resource (introspection names its audience)',
      async () => issuer.token('opaque-writer', { resource: 'http://127.0.0.1:1/other' }),
    ],
  ])('refuses a %s token with 401 invalid_token', async (_label, make) => {
    const token = await make()
    const response = await post(endpoint, INITIALIZE, bearer(token))
    expect(response.status).toBe(401)
    const challenge = challengeOf(response.headers)
    expect(challenge).toContain('error="invalid_token"')
    expect(challenge).toContain(`resource_metadata="${metadataUrl()}"`)
  })

  it('accepts a token the test signs correctly (the refusals above are for their flaw alone)', async () => {
    const response = await post(endpoint, INITIALIZE, bearer(await forge(issuer, {})))
    expect(response.status).toBe(200)
  })

  it('keeps a session to the subject that opened it', async () => {
    const writer = await issuer.token('writer')
    const session = await openSession(endpoint, writer)
    const reader = await issuer.token('reader')
    const hijack = await callOn(endpoint, reader, session, 'whoami')
    expect(hijack.status).toBe(404)
    const own = await callOn(endpoint, await issuer.token('writer'), session, 'whoami')
    expect(own.status).toBe(200)
  })

  it('verifies opaque tokens with RFC 7662 introspection at the issuer', async () => {
    const introspections = issuer.hits.get('/token/introspection') ?? 0
    const { mcp, transport } = sdkClient(endpoint, issuer, 'opaque-writer')
    await mcp.connect(transport)
    try {
      const me = await mcp.callTool({ name: 'whoami', arguments: {} })
      expect(me.structuredContent).toMatchObject({ subject: 'opaque-writer', scopes: ['mcp:read'] })
      const stored = await mcp.callTool({ name: 'add_note', arguments: { text: 'opaque' } })
      expect(stored.isError).toBeFalsy()
      const after = await mcp.callTool({ name: 'whoami', arguments: {} })
      expect(after.structuredContent).toMatchObject({ scopes: ['mcp:read', 'mcp:write'] })
    } finally {
      await mcp.close()
    }
    expect(issuer.hits.get('/token/introspection') ?? 0).toBeGreaterThan(introspections)
    expect(deps.notes).toContain('opaque-writer: opaque')
  })

  it('picks up a rotated signing key at the issuer', async () => {
    const before = await issuer.token('writer')
    expect((await post(endpoint, INITIALIZE, bearer(before))).status).toBe(200)
    const jwksFetches = issuer.hits.get('/jwks') ?? 0
    await issuer.rotate()
    const after = await issuer.token('writer')
    expect(JSON.parse(Buffer.from(after.split('.')[0] as string, 'base64url').toString()).kid).toBe(
      issuer.signingKey.kid,
    )
    expect((await post(endpoint, INITIALIZE, bearer(after))).status).toBe(200)
    expect(issuer.hits.get('/jwks') ?? 0).toBeGreaterThan(jwksFetches)
    // The retired key is gone from the issuer's key set, so its tokens are no longer accepted.
    expect((await post(endpoint, INITIALIZE, bearer(before))).status).toBe(401)
  })
})

describe('OAuth resource server, other settings', () => {
  let issuer: TestIssuer
  beforeAll(async () => {
    issuer = await startIssuer()
  })
  afterAll(async () => {
    await issuer?.close()
  })

  it('checks the audience given by --auth-audience instead of the resource URL', async () => {
    const { endpoint } = await startServer(issuer, ['--auth-audience', 'urn:keel:test'])
    try {
      issuer.resource = endpoint.url
      const forUrn = await issuer.token('writer', { resource: 'urn:keel:test' })
      expect((await post(endpoint, INITIALIZE, bearer(forUrn))).status).toBe(200)
      const forUrl = await issuer.token('writer')
      expect((await post(endpoint, INITIALIZE, bearer(forUrl))).status).toBe(401)
    } finally {
      await endpoint.close()
    }
  })

  it('verifies tokens and the write scope in --stateless mode too', async () => {
    const { endpoint, runtime } = await startServer(issuer, ['--stateless', '--auth-scopes', 'mcp:read'])
    try {
      issuer.resource = endpoint.url
      const { mcp, transport } = sdkClient(endpoint, issuer, 'writer')
      await mcp.connect(transport)
      try {
        const me = await mcp.callTool({ name: 'whoami', arguments: {} })
        expect(me.structuredContent).toMatchObject({ subject: 'writer' })
        expect(
          (await mcp.callTool({ name: 'add_note', arguments: { text: 'stateless' } })).isError,
        ).toBeFalsy()
      } finally {
        await mcp.close()
      }
      expect(runtime.deps.notes).toEqual(['writer: stateless'])
      const reader = await issuer.token('reader')
      const write = await post(
        endpoint,
        {
          jsonrpc: '2.0',
          id: 3,
          method: 'tools/call',
          params: { name: 'add_note', arguments: { text: 'x' } },
        },
        bearer(reader),
      )
      expect(write.status).toBe(403)
      expect(challengeOf(write.headers)).toContain('error="insufficient_scope"')
      expect(runtime.deps.notes).toEqual(['writer: stateless'])
    } finally {
      await endpoint.close()
    }
  })

  it('names --auth-resource in the metadata and takes it as the audience', async () => {
    const resource = 'https://mcp.example.test/mcp'
    const { endpoint } = await startServer(issuer, ['--auth-resource', resource])
    try {
      const metadata = await (
        await fetch(new URL('/.well-known/oauth-protected-resource/mcp', endpoint.url))
      ).json()
      expect(metadata).toMatchObject({ resource, authorization_servers: [issuer.url] })
      const refused = await post(endpoint, INITIALIZE)
      expect(challengeOf(refused.headers)).toContain(
        'resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp"',
      )
      const token = await issuer.token('writer', { resource })
      expect((await post(endpoint, INITIALIZE, bearer(token))).status).toBe(200)
    } finally {
      await endpoint.close()
    }
  })

  it('answers 503 with Retry-After while the issuer is unreachable, and recovers once it is back', async () => {
    const gone = await startIssuer()
    const port = Number(new URL(gone.url).port)
    await gone.close()
    const { endpoint } = await startServer(gone)
    let back: TestIssuer | undefined
    try {
      const response = await post(endpoint, INITIALIZE, bearer(await forge(issuer, {})))
      expect(response.status).toBe(503)
      expect(response.headers.get('retry-after')).toBe('5')
      // Without a token nothing is fetched: the challenge still goes out.
      expect((await post(endpoint, INITIALIZE)).status).toBe(401)
      back = await startIssuer(port)
      back.resource = endpoint.url
      const token = await back.token('writer')
      // The server retries discovery at most every 5 s: poll (bounded) until it has.
      let status = 0
      for (let attempt = 0; attempt < 40 && status !== 200; attempt++) {
        status = (await post(endpoint, INITIALIZE, bearer(token))).status
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 500))
      }
      expect(status).toBe(200)
    } finally {
      await endpoint.close()
      await back?.close()
    }
  }, 30_000)
})
