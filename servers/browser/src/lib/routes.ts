/** A rule for requests whose URL matches a pattern: refuse them, or answer them with a given response. */
export interface Route {
  pattern: string
  matcher: RegExp
  action: 'block' | 'fulfill'
  status: number
  contentType: string
  body: string
}

/**
 * A URL glob as a regular expression over the whole URL: `*` is any run of characters (slashes
 * included), everything else is literal. `*\/api/*` matches every URL with an `/api/` path part.
 */
export function globToRegExp(pattern: string): RegExp {
  const literal = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*')
  return new RegExp(`^${literal}$`)
}

/** The first route matching `url`, if any (rules apply in the order they were added). */
export function routeFor(routes: readonly Route[], url: string): Route | undefined {
  return routes.find((route) => route.matcher.test(url))
}
