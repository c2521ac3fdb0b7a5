import type { IncomingMessage } from 'node:http'
import {
  type AuthInfo,
  bearerAuthChallengeResponse,
  buildOAuthProtectedResourceMetadata,
  getOAuthProtectedResourceMetadataUrl,
  OAuthError,
  OAuthErrorCode,
  type OAuthMetadata,
  type OAuthTokenVerifier,
  requireBearerAuth,
} from '@modelcontextprotocol/server'
import type { AuthConfig } from '../auth-config.js'
import type { AnyTool } from '../define.js'
import type { Logger } from '../logger.js'
import { verifiedExtra } from './context.js'
import { discoverIssuer, type IssuerMetadata } from './discovery.js'
import { combinedVerifier, introspectionVerifier, jwtVerifier } from './verifier.js'

// The OAuth 2.1 resource server in front of /mcp (MCP authorization, RFC 9728): protected
// resource metadata, bearer verification with the SDK's helpers, and the write-scope check.

/** An HTTP answer the front door writes as it is. */
export interface GateAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

/** What the HTTP front door (http/front-door.ts, http/streams.ts) asks of the OAuth resource server. */
export interface AuthGate {
  /** The Protected Resource Metadata answer for `pathname`, or undefined when it is not a metadata path. */
  metadata(pathname: string, method: string): GateAnswer | undefined
  /** The verified token of the request, or the 401/403/503 answer to send instead. */
  authenticate(req: IncomingMessage): Promise<AuthInfo | GateAnswer>
  /** A 403 `insufficient_scope` answer when the message (or batch) calls a tool that writes without the write scope. */
  scopeChallenge(message: unknown, authInfo: AuthInfo): GateAnswer | undefined
  /** Who is calling: issuer and subject (sessions are bound to it). */
  principal(authInfo: AuthInfo): string
}

export interface AuthGateOptions {
  auth: AuthConfig & { issuer: string }
  /** The resource URL when `--auth-resource` is not given (known once the server listens). */
  defaultResource: () => string
  tools: AnyTool<unknown>[]
  logger: Logger
  /** Least time between two JWKS refetches on an unknown key (default 30 s). */
  jwksCooldownMs?: number
}

const RETRY_DISCOVERY_MS = 5000

function secureOrLoopback(value: string): boolean {
  const url = new URL(value)
  if (url.protocol === 'https:') return true
  const host = url.hostname.replace(/^\[|\]$/g, '')
  return (
    url.protocol === 'http:' && (host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host))
  )
}
const METADATA_PREFIX = '/.well-known/oauth-protected-resource'

function headersOf(response: Response): Record<string, string> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    headers[name] = value
  })
  return headers
}

async function answerOf(response: Response): Promise<GateAnswer> {
  return { status: response.status, headers: headersOf(response), body: await response.text() }
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): GateAnswer {
  return { status, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) }
}

/** True when the tool may change something: only tools annotated read-only are not writes. */
export function writes(tool: Pick<AnyTool<unknown>, 'annotations'>): boolean {
  return tool.annotations.readOnlyHint !== true
}

/** Where this resource server is, and its metadata document: known once the server listens. */
interface ResourceSettings {
  resource: URL
  metadataUrl: string
  metadataPaths: Set<string>
  document: string
}

/** The resource settings, worked out on first use (the default resource URL needs the bound port) and kept. */
function resourceSettings(options: AuthGateOptions): () => ResourceSettings {
  const { auth } = options
  let resolved: ResourceSettings | undefined
  return () => {
    if (resolved) return resolved
    const resource = new URL(auth.resource ?? options.defaultResource())
    const document = buildOAuthProtectedResourceMetadata({
      // Only the issuer is read from it; the full metadata is fetched when tokens are verified.
      oauthMetadata: { issuer: auth.issuer } as OAuthMetadata,
      resourceServerUrl: resource,
      scopesSupported: [...new Set([...auth.scopes, auth.writeScope])],
      // The config check already requires HTTPS except on loopback (including ::1 and 127.0.0.0/8).
      dangerouslyAllowInsecureIssuerUrl: true,
    })
    const metadataUrl = getOAuthProtectedResourceMetadataUrl(resource)
    resolved = {
      resource,
      metadataUrl,
      metadataPaths: new Set([METADATA_PREFIX, new URL(metadataUrl).pathname]),
      document: JSON.stringify(document),
    }
    return resolved
  }
}

/** The token verifier for the issuer's metadata: its JWKS, its introspection endpoint, or both. */
async function buildVerifier(options: AuthGateOptions, resource: URL): Promise<OAuthTokenVerifier> {
  const { auth, logger } = options
  const metadata: IssuerMetadata = await discoverIssuer(auth.issuer)
  // Keys and introspection answers decide who gets in: they travel over TLS, except on loopback.
  if (metadata.jwks_uri && !secureOrLoopback(metadata.jwks_uri))
    throw new Error(`the issuer's jwks_uri ${metadata.jwks_uri} is not https`)
  const common = {
    issuer: metadata.issuer,
    audience: auth.audience ?? resource.href,
    resource,
    logger,
  }
  const jwt = metadata.jwks_uri
    ? jwtVerifier({ ...common, jwksUri: metadata.jwks_uri, cooldownMs: options.jwksCooldownMs ?? 30_000 })
    : undefined
  const introspection =
    auth.introspectionUrl && auth.clientId && auth.clientSecret
      ? introspectionVerifier({
          ...common,
          endpoint: auth.introspectionUrl,
          clientId: auth.clientId,
          clientSecret: auth.clientSecret,
        })
      : undefined
  if (!jwt && !introspection)
    throw new Error(`${auth.issuer} publishes no jwks_uri; set --auth-introspection-url`)
  logger.info('OAuth: authorization server metadata loaded', {
    issuer: metadata.issuer,
    jwks: Boolean(jwt),
    introspection: Boolean(introspection),
  })
  return combinedVerifier(jwt, introspection)
}

type BearerGate = (request: Request) => Promise<AuthInfo | Response>

/**
 * The SDK's bearer gate around the verifier, built once the issuer's metadata is in; after a
 * failed discovery it is tried again on a request at most every RETRY_DISCOVERY_MS.
 */
function bearerGateLoader(
  options: AuthGateOptions,
  settings: () => ResourceSettings,
): () => Promise<BearerGate> {
  const { auth, logger } = options
  let bearerGate: Promise<BearerGate> | undefined
  let failedAt = 0
  return () => {
    if (bearerGate) return bearerGate
    if (Date.now() - failedAt < RETRY_DISCOVERY_MS)
      return Promise.reject(new Error('the authorization server was unreachable moments ago'))
    const { resource, metadataUrl } = settings()
    bearerGate = buildVerifier(options, resource).then(
      (verifier) =>
        requireBearerAuth({
          verifier,
          requiredScopes: auth.scopes,
          resourceMetadataUrl: metadataUrl,
          expectedResource: resource,
        }),
      (error: unknown) => {
        logger.error('OAuth: the authorization server metadata is unavailable; retrying on later requests', {
          error,
        })
        failedAt = Date.now()
        bearerGate = undefined
        throw error
      },
    )
    return bearerGate
  }
}

/** The Protected Resource Metadata answer for `pathname`, or undefined when it is not a metadata path. */
function metadataAnswer(
  settings: ResourceSettings,
  pathname: string,
  method: string,
): GateAnswer | undefined {
  const { metadataPaths, document } = settings
  const path = pathname.length > 1 ? pathname.replace(/\/$/, '') : pathname
  if (!path.startsWith(METADATA_PREFIX)) return undefined
  if (!metadataPaths.has(path)) return json(404, { error: 'Not found' })
  // Public and read by browser-based clients too: any origin may read it.
  const cors = { 'access-control-allow-origin': '*' }
  if (method === 'OPTIONS')
    return {
      status: 204,
      headers: { ...cors, 'access-control-allow-methods': 'GET, HEAD, OPTIONS' },
      body: '',
    }
  if (method !== 'GET' && method !== 'HEAD')
    return json(405, { error: 'Method not allowed' }, { ...cors, allow: 'GET, HEAD, OPTIONS' })
  return {
    status: 200,
    headers: { 'content-type': 'application/json', 'cache-control': 'max-age=300', ...cors },
    body: method === 'HEAD' ? '' : document,
  }
}

/** The verified token of the request, or the 401/403/503 answer to send instead. */
async function authenticate(
  auth: AuthGateOptions['auth'],
  settings: ResourceSettings,
  bearerGateFor: () => Promise<BearerGate>,
  req: IncomingMessage,
): Promise<AuthInfo | GateAnswer> {
  const { resource, metadataUrl } = settings
  const header = req.headers.authorization
  // Without a token there is nothing to verify: answer the challenge without contacting the issuer.
  if (typeof header !== 'string' || !/^bearer\s+\S/i.test(header)) {
    return answerOf(
      bearerAuthChallengeResponse(
        new OAuthError(OAuthErrorCode.InvalidToken, 'An access token is required'),
        {
          requiredScopes: auth.scopes,
          resourceMetadataUrl: metadataUrl,
        },
      ),
    )
  }
  let gate: BearerGate
  try {
    gate = await bearerGateFor()
  } catch {
    return json(
      503,
      { error: 'temporarily_unavailable', error_description: 'The authorization server is unreachable' },
      { 'retry-after': '5' },
    )
  }
  // The SDK's gate reads the one header it needs; the rest of the request stays with Node.
  const outcome = await gate(
    new Request(resource, { headers: { authorization: header.replace(/^bearer\s+/i, 'Bearer ') } }),
  )
  if (!(outcome instanceof Response)) return outcome
  const answer = await answerOf(outcome)
  if (answer.status >= 500) return json(503, { error: 'temporarily_unavailable' }, { 'retry-after': '5' })
  return answer
}

/** A 403 `insufficient_scope` answer when the message (or batch) calls a tool that writes without the write scope. */
function scopeChallenge(
  auth: AuthGateOptions['auth'],
  tools: Map<string, AnyTool<unknown>>,
  metadataUrl: () => string,
  message: unknown,
  authInfo: AuthInfo,
): GateAnswer | undefined {
  if (authInfo.scopes.includes(auth.writeScope)) return undefined
  for (const item of Array.isArray(message) ? message : [message]) {
    const call = item as { method?: unknown; params?: { name?: unknown } } | null
    if (call?.method !== 'tools/call' || typeof call.params?.name !== 'string') continue
    const tool = tools.get(call.params.name)
    if (!tool || !writes(tool)) continue
    const description = `The tool ${tool.name} writes: it needs the ${auth.writeScope} scope`
    const response = bearerAuthChallengeResponse(
      new OAuthError(OAuthErrorCode.InsufficientScope, description),
      {
        requiredScopes: [...new Set([...auth.scopes, auth.writeScope])],
        resourceMetadataUrl: metadataUrl(),
      },
    )
    return {
      status: response.status,
      headers: headersOf(response),
      body: JSON.stringify({ error: 'insufficient_scope', error_description: description }),
    }
  }
  return undefined
}

/**
 * Creates the gate. Nothing is fetched here: the issuer's metadata (and then its keys) are
 * fetched on the first request that carries a token, and fetched again after a failure.
 */
export function createAuthGate(options: AuthGateOptions): AuthGate {
  const { auth } = options
  const tools = new Map(options.tools.map((tool) => [tool.name, tool]))
  const settings = resourceSettings(options)
  const bearerGateFor = bearerGateLoader(options, settings)
  return {
    metadata: (pathname, method) => metadataAnswer(settings(), pathname, method),
    authenticate: (req) => authenticate(auth, settings(), bearerGateFor, req),
    scopeChallenge: (message, authInfo) =>
      scopeChallenge(auth, tools, () => settings().metadataUrl, message, authInfo),
    principal(authInfo) {
      const extra = verifiedExtra(authInfo)
      return `subject:${extra?.issuer ?? ''} ${extra?.subject ?? authInfo.clientId}`
    },
  }
}
