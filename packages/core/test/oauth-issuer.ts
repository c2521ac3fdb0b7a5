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

/** A public client for the authorization-code flow with PKCE (a user signs in). */
export const BROWSER_CLIENT = { id: 'browser-app', redirectUri: 'http://127.0.0.1:1/callback' }

/** The user the scripted sign-in signs in as. */
export const USER = 'alice'

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
    cookies: { keys: ['test-cookie-signing-key'] },
    jwks: { keys: [key] },
    clients: [
      ...Object.entries(CLIENTS).map(([id, client]) => ({
        client_id: id,
        client_secret: client.secret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        ...(client.scope ? { scope: client.scope } : {}),
      })),
      {
        client_id: BROWSER_CLIENT.id,
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        redirect_uris: [BROWSER_CLIENT.redirectUri],
        response_types: ['code'],
        scope: 'openid mcp:read mcp:write',
      },
    ],
    // Sign-in and consent pages: the test's own (see `signIn`), answered without a human.
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    pkce: { required: () => true },
    scopes: SCOPES,
    features: {
      devInteractions: { enabled: false },
      // The issuer's own dev pages stay off; `/interaction/:uid` below signs the user in.
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

/**
 * The sign-in and consent step, as a user would complete it: `alice` signs in and grants the
 * scopes and the resource the client asked for. oidc-provider then redirects to the client.
 */
async function signIn(
  instance: Provider,
  req: Parameters<Provider['interactionDetails']>[0],
  res: Parameters<Provider['interactionDetails']>[1],
  state: { resource: string },
): Promise<void> {
  const details = await instance.interactionDetails(req, res)
  const clientId = details.params.client_id as string
  const grant = details.grantId
    ? ((await instance.Grant.find(details.grantId)) ?? new instance.Grant({ accountId: USER, clientId }))
    : new instance.Grant({ accountId: USER, clientId })
  // Consent to what the issuer says is missing, and to the asked scopes on the asked resource.
  const missing = details.prompt.details as {
    missingOIDCScope?: string[]
    missingResourceScopes?: Record<string, string[]>
  }
  if (missing.missingOIDCScope?.length) grant.addOIDCScope(missing.missingOIDCScope.join(' '))
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
    grant.addResourceScope(indicator, scopes.join(' '))
  const asked = String(details.params.scope ?? '')
    .split(' ')
    .filter((scope) => SCOPES.includes(scope))
  const resource = (details.params.resource as string | undefined) ?? state.resource
  if (asked.length) grant.addResourceScope(resource, asked.join(' '))
  const grantId = await grant.save()
  await instance.interactionFinished(
    req,
    res,
    { login: { accountId: USER }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  )
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
    if (path.startsWith('/interaction/')) {
      signIn(current, req, res, state).catch((error: unknown) => {
        res.writeHead(500).end(String(error))
      })
      return
    }
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
