/**
 * The GitHub REST API root the server talks to, and the only origin that ever receives the token.
 *
 * Accepted: `https://api.github.com` (default), GitHub Enterprise Server (`https://HOST/api/v3`;
 * a bare `https://HOST` gets `/api/v3`), GitHub Enterprise Cloud with data residency
 * (`https://api.TENANT.ghe.com`; `https://TENANT.ghe.com` is rewritten to it). Plain HTTP only on
 * loopback (a local fake or proxy): a token must never cross a network in clear text.
 */
export function normaliseApiUrl(raw: string): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new Error('must be an absolute URL such as https://ghes.example.com/api/v3')
  }
  if (url.username || url.password) throw new Error('must not carry credentials')
  if (url.search || url.hash) throw new Error('must not carry a query or fragment')
  const loopback = isLoopback(url.hostname)
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new Error('must use https:// (plain http is accepted only for loopback addresses)')
  }
  const host = url.hostname.toLowerCase()
  const path = url.pathname.replace(/\/+$/, '')
  if (host === 'github.com' || host === 'www.github.com') return new URL('https://api.github.com')
  if (host.endsWith('.ghe.com') && !host.startsWith('api.') && path === '') {
    return new URL(`https://api.${host}`)
  }
  if (path === '' && !loopback && host !== 'api.github.com' && !host.endsWith('.ghe.com')) {
    url.pathname = '/api/v3'
  } else {
    url.pathname = path || '/'
  }
  return url
}

/** The base URL Octokit wants: no trailing slash. */
export function baseUrlOf(url: URL): string {
  return url.href.replace(/\/+$/, '')
}

export function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host)
}
