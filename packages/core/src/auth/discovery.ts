// Authorization server metadata (RFC 8414, with OpenID Connect discovery as the fallback).

/** The fields of the issuer's metadata the resource server uses. */
export interface IssuerMetadata {
  issuer: string
  jwks_uri?: string
  introspection_endpoint?: string
  scopes_supported?: string[]
}

const FETCH_TIMEOUT_MS = 10_000

/**
 * The metadata URLs to try for an issuer, in order: RFC 8414 (well-known inserted before the
 * path), OpenID Connect with the same insertion, and OpenID Connect appended to the issuer.
 */
export function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer)
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '')
  const at = (wellKnown: string) => new URL(`/.well-known/${wellKnown}${path}`, url.origin).href
  return [
    ...new Set([
      at('oauth-authorization-server'),
      at('openid-configuration'),
      new URL(`${path}/.well-known/openid-configuration`, url.origin).href,
    ]),
  ]
}

const stripSlash = (value: string) => value.replace(/\/$/, '')

/**
 * Fetches the issuer's metadata. The document's `issuer` must be the configured issuer (RFC 8414
 * §3.3: otherwise an attacker-controlled document could name another issuer's keys).
 */
export async function discoverIssuer(issuer: string, signal?: AbortSignal): Promise<IssuerMetadata> {
  const problems: string[] = []
  for (const url of metadataUrls(issuer)) {
    let response: Response
    try {
      response = await fetch(url, {
        headers: { accept: 'application/json' },
        redirect: 'error',
        signal: signal
          ? AbortSignal.any([signal, AbortSignal.timeout(FETCH_TIMEOUT_MS)])
          : AbortSignal.timeout(FETCH_TIMEOUT_MS),
      })
    } catch (error) {
      problems.push(`${url}: ${(error as Error).message}`)
      continue
    }
    if (!response.ok) {
      await response.body?.cancel()
      problems.push(`${url}: HTTP ${response.status}`)
      continue
    }
    let document: Partial<IssuerMetadata>
    try {
      document = (await response.json()) as Partial<IssuerMetadata>
    } catch {
      problems.push(`${url}: not JSON`)
      continue
    }
    if (typeof document.issuer !== 'string' || stripSlash(document.issuer) !== stripSlash(issuer)) {
      throw new Error(`The metadata at ${url} names issuer ${JSON.stringify(document.issuer)}, not ${issuer}`)
    }
    return document as IssuerMetadata
  }
  throw new Error(`No authorization server metadata for ${issuer} (${problems.join('; ')})`)
}
