import { createHash } from 'node:crypto'
import {
  type AuthInfo,
  OAuthError,
  OAuthErrorCode,
  type OAuthTokenVerifier,
} from '@modelcontextprotocol/server'
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from 'jose'
import type { Logger } from '../logger.js'
import type { VerifiedExtra } from './context.js'

// Access-token verification for the OAuth resource server. Signatures, keys and claims are
// checked by jose; this file only chooses the rules and turns the outcome into the SDK's AuthInfo.

/**
 * Signing algorithms accepted on access tokens: asymmetric only. `none` is never accepted, and the
 * HMAC algorithms are not either (a key set published for anyone to read is no shared secret).
 */
export const ACCEPTED_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]

/** Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds. */
export const CLOCK_TOLERANCE_SECONDS = 30

interface VerifierOptions {
  issuer: string
  /** The `aud` a token must carry. */
  audience: string
  /** Reported as `AuthInfo.resource` once the audience matched. */
  resource: URL
  logger: Logger
}

const invalid = (message: string) => new OAuthError(OAuthErrorCode.InvalidToken, message)

/** A scope token as RFC 6749 §3.3 writes it: printable ASCII without space, `"` or `\\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/

/**
 * The scopes a token grants. RFC 9068 (JWT access tokens) and RFC 7662 (introspection) define
 * `scope` as one space-separated string: any other shape is refused with `invalid_token`, never
 * guessed at (an array in `scope` was once read as a list and granted the write scope). `scp`,
 * which some issuers send instead, is read only when `scope` is absent: as the same string, or as
 * an array of scope tokens (the form Okta issues); any other shape of it is refused too. The same
 * rule holds for JWTs and introspection answers.
 */
export function scopesOf(claims: Record<string, unknown>): string[] {
  if (claims.scope !== undefined) {
    if (typeof claims.scope !== 'string')
      throw invalid('The token\'s "scope" claim is not a space-separated string (RFC 9068)')
    return claims.scope.split(' ').filter(Boolean)
  }
  const scp = claims.scp
  if (scp === undefined) return []
  if (typeof scp === 'string') return scp.split(' ').filter(Boolean)
  if (Array.isArray(scp) && scp.every((item) => typeof item === 'string' && SCOPE_TOKEN.test(item)))
    return [...scp] as string[]
  throw invalid('The token\'s "scp" claim is neither a space-separated string nor a list of scope tokens')
}

function authInfoOf(
  token: string,
  claims: JWTPayload & Record<string, unknown>,
  options: VerifierOptions,
): AuthInfo {
  const clientId = [claims.client_id, claims.azp, claims.cid].find((value) => typeof value === 'string')
  // A client-credentials token acts for the client itself; some issuers then omit `sub` (RFC 9068
  // sets it to the client id), so the client id stands in.
  const subject = typeof claims.sub === 'string' ? claims.sub : (clientId as string | undefined)
  const extra: VerifiedExtra = { subject, issuer: options.issuer }
  return {
    token,
    clientId: (clientId as string | undefined) ?? '',
    scopes: scopesOf(claims),
    ...(typeof claims.exp === 'number' ? { expiresAt: claims.exp } : {}),
    resource: options.resource,
    extra: extra as unknown as Record<string, unknown>,
  }
}

/** A reason a client may read, for a jose failure; undefined when the failure is the server's. */
function reasonFor(error: unknown): string | undefined {
  if (error instanceof errors.JWTExpired) return 'The token has expired'
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'aud') return 'The token was not issued for this resource'
    if (error.claim === 'iss') return 'The token was not issued by the expected authorization server'
    if (error.claim === 'nbf') return 'The token is not valid yet'
    return `The token's "${error.claim}" claim is not valid`
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return "The token's signing algorithm is not accepted"
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'The token signature is not valid'
  if (error instanceof errors.JWKSNoMatchingKey) return 'No key of the authorization server matches the token'
  if (error instanceof errors.JWKSMultipleMatchingKeys) return 'The token names no single key'
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid)
    return 'The token is malformed'
  if (error instanceof errors.JOSENotSupported) return "The token's algorithm or key type is not supported"
  return undefined
}

/** A JWS compact serialisation: three base64url segments. */
export function looksLikeJwt(token: string): boolean {
  return /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token)
}

/**
 * Verifies JWT access tokens against the issuer's JWKS (fetched on first use, cached, and
 * refetched when a token names an unknown key, so key rotation at the issuer is picked up).
 */
export function jwtVerifier(
  options: VerifierOptions & { jwksUri: string; cooldownMs: number },
): OAuthTokenVerifier {
  const keys = createRemoteJWKSet(new URL(options.jwksUri), {
    cooldownDuration: options.cooldownMs,
    cacheMaxAge: 10 * 60 * 1000,
    timeoutDuration: 10_000,
  })
  return {
    async verifyAccessToken(token) {
      try {
        const { payload } = await jwtVerify(token, keys, {
          issuer: options.issuer,
          audience: options.audience,
          algorithms: ACCEPTED_ALGORITHMS,
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          requiredClaims: ['exp'],
        })
        return authInfoOf(token, payload as JWTPayload & Record<string, unknown>, options)
      } catch (error) {
        if (error instanceof OAuthError) {
          options.logger.info('refused an access token', { reason: error.message })
          throw error
        }
        const reason = reasonFor(error)
        if (reason) {
          options.logger.info('refused an access token', { reason })
          throw invalid(reason)
        }
        options.logger.error('could not verify an access token: the key set is unavailable', { error })
        throw new OAuthError(OAuthErrorCode.ServerError, 'The authorization server keys are unavailable')
      }
    },
  }
}

interface IntrospectionOptions extends VerifierOptions {
  endpoint: string
  clientId: string
  clientSecret: string
}

const INTROSPECTION_CACHE_MS = 30_000
const INTROSPECTION_CACHE_ENTRIES = 1000

/**
 * Verifies opaque tokens with the issuer's RFC 7662 introspection endpoint. Active answers are
 * kept briefly (30 s, never past the token's expiry) keyed by a digest of the token.
 */
export function introspectionVerifier(options: IntrospectionOptions): OAuthTokenVerifier {
  const cache = new Map<string, { info: AuthInfo; until: number }>()
  const basic = Buffer.from(
    `${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`,
  ).toString('base64')
  return {
    async verifyAccessToken(token) {
      const key = createHash('sha256').update(token).digest('base64url')
      const cached = cache.get(key)
      if (cached && cached.until > Date.now()) return cached.info
      cache.delete(key)
      let response: Response
      try {
        response = await fetch(options.endpoint, {
          method: 'POST',
          headers: {
            authorization: `Basic ${basic}`,
            'content-type': 'application/x-www-form-urlencoded',
            accept: 'application/json',
          },
          body: new URLSearchParams({ token, token_type_hint: 'access_token' }),
          redirect: 'error',
          signal: AbortSignal.timeout(10_000),
        })
      } catch (error) {
        options.logger.error('token introspection failed', { error })
        throw new OAuthError(OAuthErrorCode.ServerError, 'The authorization server is unavailable')
      }
      if (!response.ok) {
        await response.body?.cancel()
        options.logger.error('token introspection was refused', { status: response.status })
        throw new OAuthError(OAuthErrorCode.ServerError, 'The authorization server refused introspection')
      }
      const claims = (await response.json().catch(() => ({}))) as Record<string, unknown>
      if (claims.active !== true) throw invalid('The token is not active')
      if (claims.token_type === 'refresh_token') throw invalid('A refresh token is not an access token')
      if (claims.iss !== undefined && claims.iss !== options.issuer)
        throw invalid('The token was not issued by the expected authorization server')
      // RFC 7662 makes `aud` optional; without it a token for any resource would pass, so it is required.
      const audiences =
        typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : []
      if (!audiences.includes(options.audience)) throw invalid('The token was not issued for this resource')
      const now = Date.now() / 1000
      if (typeof claims.exp !== 'number' || claims.exp + CLOCK_TOLERANCE_SECONDS < now)
        throw invalid('The token has expired')
      if (typeof claims.nbf === 'number' && claims.nbf - CLOCK_TOLERANCE_SECONDS > now)
        throw invalid('The token is not valid yet')
      let info: AuthInfo
      try {
        info = authInfoOf(token, claims as JWTPayload & Record<string, unknown>, options)
      } catch (error) {
        if (error instanceof OAuthError)
          options.logger.info('refused an access token', { reason: error.message })
        throw error
      }
      if (cache.size >= INTROSPECTION_CACHE_ENTRIES) cache.delete(cache.keys().next().value as string)
      cache.set(key, { info, until: Math.min(Date.now() + INTROSPECTION_CACHE_MS, claims.exp * 1000) })
      return info
    },
  }
}

/** JWTs go to the key set, anything else to introspection (when configured). */
export function combinedVerifier(
  jwt: OAuthTokenVerifier | undefined,
  introspection: OAuthTokenVerifier | undefined,
): OAuthTokenVerifier {
  return {
    verifyAccessToken(token) {
      if (jwt && looksLikeJwt(token)) return jwt.verifyAccessToken(token)
      if (introspection) return introspection.verifyAccessToken(token)
      return Promise.reject(invalid('The token is not a JWT and this server has no introspection endpoint'))
    },
  }
}
