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

/** What http.ts asks of the OAuth resource server. */
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

async function answerOf(response: Response): Promise<GateAnswer> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    headers[name] = value
  })
  return { status: response.status, headers, body: await response.text() }
}

/** True when the tool may change something: only tools annotated read-only are not writes. */
export function writes(tool: Pick<AnyTool<unknown>, 'annotations'>): boolean {
  return tool.annotations.readOnlyHint !== true
}

/**
 * Creates the gate. Nothing is fetched here: the issuer's metadata (and then its keys) are
 * fetched on the first request that carries a token, and fetched again after a failure.
 */
export function createAuthGate(options: AuthGateOptions): AuthGate {
  const { auth, logger } = options
  const tools = new Map(options.tools.map((tool) => [tool.name, tool]))
  let resolved:
    | { resource: URL; metadataUrl: string; metadataPaths: Set<string>; document: string }
    | undefined
  const settings = () => {
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

  // The SDK's bearer gate around the verifier, built once the issuer's metadata is in; after a
  // failed discovery it is tried again on a request at most every RETRY_DISCOVERY_MS.
  let bearerGate: Promise<(request: Request) => Promise<AuthInfo | Response>> | undefined
  let failedAt = 0
  const bearerGateFor = () => {
    if (bearerGate) return bearerGate
    if (Date.now() - failedAt < RETRY_DISCOVERY_MS)
      return Promise.reject(new Error('the authorization server was unreachable moments ago'))
    const { resource, metadataUrl } = settings()
    bearerGate = buildVerifier().then(
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

  async function buildVerifier(): Promise<OAuthTokenVerifier> {
    const metadata: IssuerMetadata = await discoverIssuer(auth.issuer)
    // Keys and introspection answers decide who gets in: they travel over TLS, except on loopback.
    if (metadata.jwks_uri && !secureOrLoopback(metadata.jwks_uri))
      throw new Error(`the issuer's jwks_uri ${metadata.jwks_uri} is not https`)
    const { resource } = settings()
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

  const json = (status: number, body: unknown, headers: Record<string, string> = {}): GateAnswer => ({
    status,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

  return {
    metadata(pathname, method) {
      const { metadataPaths, document } = settings()
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
    },

    async authenticate(req) {
      const { resource, metadataUrl } = settings()
      const header = req.headers.authorization
      // Without a token there is nothing to verify: answer the challenge without contacting the issuer.
      if (typeof header !== 'string' || !/^bearer\s+\S/i.test(header)) {
        return answerOf(
          bearerAuthChallengeResponse(
            new OAuthError(OAuthErrorCode.InvalidToken, 'An access token is required'),
            { requiredScopes: auth.scopes, resourceMetadataUrl: metadataUrl },
          ),
        )
      }
      let gate: Awaited<ReturnType<typeof bearerGateFor>>
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
    },

    scopeChallenge(message, authInfo) {
      if (authInfo.scopes.includes(auth.writeScope)) return undefined
      for (const item of Array.isArray(message) ? message : [message]) {
        const call = item as { method?: unknown; params?: { name?: unknown } } | null
        if (call?.method !== 'tools/call' || typeof call.params?.name !== 'string') continue
        const tool = tools.get(call.params.name)
        if (!tool || !writes(tool)) continue
        const response = bearerAuthChallengeResponse(
          new OAuthError(
            OAuthErrorCode.InsufficientScope,
            `The tool ${tool.name} writes: it needs the ${auth.writeScope} scope`,
          ),
          {
            requiredScopes: [...new Set([...auth.scopes, auth.writeScope])],
            resourceMetadataUrl: settings().metadataUrl,
          },
        )
        const headers: Record<string, string> = {}
        response.headers.forEach((value, name) => {
          headers[name] = value
        })
        return {
          status: response.status,
          headers,
          body: JSON.stringify({
            error: 'insufficient_scope',
            error_description: `The tool ${tool.name} writes: it needs the ${auth.writeScope} scope`,
          }),
        }
      }
      return undefined
    },

    principal(authInfo) {
      const extra = verifiedExtra(authInfo)
      return `subject:${extra?.issuer ?? ''} ${extra?.subject ?? authInfo.clientId}`
    },
  }
}
