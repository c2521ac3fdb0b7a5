import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, type JWK } from 'jose'
import Provider from 'oidc-provider'

// A real authorization server for the OAuth tests: oidc-provider (a certified OpenID provider) on
// loopback, issuing JWT access tokens for a resource indicator (RFC 8707), opaque ones for the
// `opaque-*` clients, and answering introspection (RFC 7662). Its signing key can be rotated.

export const SCOPES = ['mcp:read', 'mcp:write', 'other']

/** OAuth clients registered at the test issuer: id → secret and the scopes it may get. */
export const CLIENTS = {
  writer: { secret: 'writer-secret-0123456789', scope: 'mcp:read mcp:write' },
  reader: { secret: 'reader-secret-0123456789', scope: 'mcp:read' },
  outsider: { secret: 'outsider-secret-01234567', scope: 'other' },
  'opaque-writer': { secret: 'opaque-secret-0123456789', scope: 'mcp:read mcp:write' },
  // The MCP server's own credentials, for introspection.
  'resource-server': { secret: 'rs-secret-0123456789abcdef', scope: '' },
} as const

export type ClientName = keyof typeof CLIENTS

export interface TestIssuer {
  /** `http://127.0.0.1:<port>` */
  url: string
  /** The resource (audience) tokens are issued for unless a request names another. */
  resource: string
  /** The current signing key (private), to mint tokens the issuer itself would not. */
  signingKey: JWK
  /** Obtains an access token with client credentials (form POST to the token endpoint). */
  token(client: ClientName, options?: { scope?: string; resource?: string }): Promise<string>
  /** Replaces the signing key: the JWKS then lists only the new key. */
  rotate(): Promise<void>
  /** Requests the issuer has served, by path. */
  hits: Map<string, number>
  close(): Promise<void>
}

async function signingKey(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' }
}

function provider(issuer: string, key: JWK, state: { resource: string }): Provider {
  const instance = new Provider(issuer, {
    jwks: { keys: [key] },
    clients: Object.entries(CLIENTS).map(([id, client]) => ({
      client_id: id,
      client_secret: client.secret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      ...(client.scope ? { scope: client.scope } : {}),
    })),
    scopes: SCOPES,
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      // Only the resource server may introspect, and it may introspect any token issued for it.
      introspection: {
        enabled: true,
        allowedPolicy: (ctx) => ctx.oidc.client?.clientId === 'resource-server',
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => state.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, _resource, client) => ({
          scope: SCOPES.join(' '),
          accessTokenFormat: client.clientId.startsWith('opaque') ? 'opaque' : 'jwt',
          accessTokenTTL: 600,
        }),
      },
    },
    ttl: { ClientCredentials: 600 },
  })
  // Token failures are expected in these tests; oidc-provider reports them on an event, not a log.
  instance.on('server_error', () => {})
  return instance
}

/** Starts the issuer on a loopback port (a free one unless given). */
export async function startIssuer(port = 0): Promise<TestIssuer> {
  const server: Server = createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', resolve)
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const state = { resource: 'http://127.0.0.1:1/unset' }
  let key = await signingKey('key-1')
  let current = provider(url, key, state)
  let rotations = 1
  const hits = new Map<string, number>()
  server.on('request', (req, res) => {
    const path = new URL(req.url ?? '/', url).pathname
    hits.set(path, (hits.get(path) ?? 0) + 1)
    current.callback()(req, res)
  })
  return {
    url,
    get resource() {
      return state.resource
    },
    set resource(value: string) {
      state.resource = value
    },
    get signingKey() {
      return key
    },
    hits,
    async token(client, options = {}) {
      const registered = CLIENTS[client]
      const body = new URLSearchParams({
        grant_type: 'client_credentials',
        resource: options.resource ?? state.resource,
      })
      const scope = options.scope ?? registered.scope
      if (scope) body.set('scope', scope)
      const response = await fetch(`${url}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${client}:${registered.secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body,
      })
      const answer = (await response.json()) as { access_token?: string; error?: string }
      if (!answer.access_token) throw new Error(`token request failed: ${JSON.stringify(answer)}`)
      return answer.access_token
    },
    async rotate() {
      key = await signingKey(`key-${++rotations}`)
      current = provider(url, key, state)
    },
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
