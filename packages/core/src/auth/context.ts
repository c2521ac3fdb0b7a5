import { type AuthInfo, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server'
import type { AuthConfig } from '../auth-config.js'
import type { RequestAuth } from '../define.js'

// What a tool call sees of the request's credential, and the write-scope rule where a call is
// served. Nothing of the OAuth verifier (jose, discovery) is imported here: the tool-call path
// loads none of it.

/** What a verified token says about its bearer (kept on `AuthInfo.extra` by the verifier). */
export interface VerifiedExtra {
  /** The token's `sub`: who the token speaks for. */
  subject: string | undefined
  issuer: string
}

/** The verifier's claims on a request's AuthInfo, when OAuth verified it. */
export function verifiedExtra(authInfo: AuthInfo | undefined): VerifiedExtra | undefined {
  const extra = authInfo?.extra as Partial<VerifiedExtra> | undefined
  return typeof extra?.issuer === 'string' ? (extra as VerifiedExtra) : undefined
}

/** The tool context's view of the request's credential: the raw token without OAuth, who it is for with OAuth. */
export function requestAuthOf(authInfo: { token?: string } | undefined): RequestAuth | undefined {
  if (!authInfo?.token) return undefined
  const verified = verifiedExtra(authInfo as AuthInfo)
  if (!verified) return { token: authInfo.token }
  const info = authInfo as AuthInfo
  // The access token itself stays here: it is for this server only (no token passthrough).
  return {
    subject: verified.subject,
    issuer: verified.issuer,
    clientId: info.clientId || undefined,
    scopes: [...info.scopes],
  }
}

/**
 * Whether a call must be refused for want of the write scope: OAuth is on, the request came over
 * HTTP (so it was verified), the tool writes, and the token lacks the scope. The front door
 * answers such calls with a 403 first; this is the same rule where the call is served.
 */
export function lacksWriteScope(
  auth: AuthConfig,
  tool: { annotations: { readOnlyHint?: boolean } },
  http: { authInfo?: { scopes?: string[] } } | undefined,
): boolean {
  if (!auth.issuer || !http || tool.annotations.readOnlyHint === true) return false
  return !http.authInfo?.scopes?.includes(auth.writeScope)
}

/** Throws the JSON-RPC error for a call {@link lacksWriteScope} refuses. */
export function assertWriteScope(
  auth: AuthConfig,
  tool: { name: string; annotations: { readOnlyHint?: boolean } },
  http: { authInfo?: { scopes?: string[] } } | undefined,
): void {
  if (!lacksWriteScope(auth, tool, http)) return
  throw new ProtocolError(
    ProtocolErrorCode.InvalidRequest,
    `Tool ${tool.name} writes: the access token needs the ${auth.writeScope} scope`,
  )
}
