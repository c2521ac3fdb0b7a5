import type { Octokit } from './client.js'

/**
 * Several accounts in one server: `--account NAME=ENV_VAR` names a token, `--account-for
 * OWNER=NAME` sends every request about that owner's repositories (and orgs) with it. Each account
 * has its own Octokit, so its own rate-limit state, retries and host guard; a request goes out with
 * exactly one token, chosen from the owner it names, and the others never see it.
 */

export interface AccountSpec {
  name: string
  env: string
}

const ACCOUNT = /^([a-z0-9][a-z0-9_-]{0,38})=([A-Za-z_][A-Za-z0-9_]{0,127})$/
const ROUTE = /^([A-Za-z0-9][A-Za-z0-9_.-]{0,99})=([a-z0-9][a-z0-9_-]{0,38})$/

/** `name=ENV_VAR` → { name, env }; throws a message naming the bad entry. */
export function parseAccounts(entries: string[]): AccountSpec[] {
  const accounts = new Map<string, AccountSpec>()
  for (const entry of entries) {
    const match = ACCOUNT.exec(entry.trim())
    if (!match?.[1] || !match[2]) {
      throw new Error(`"${entry}" is not NAME=ENV_VAR (name: lower-case letters, digits, - and _)`)
    }
    if (match[1] === 'default') throw new Error('"default" is the name of GITHUB_TOKEN\'s account')
    if (accounts.has(match[1])) throw new Error(`account "${match[1]}" is given twice`)
    accounts.set(match[1], { name: match[1], env: match[2] })
  }
  return [...accounts.values()]
}

/** `owner=name` → owner (lower case) → account name; every name must be an account or `default`. */
export function parseRoutes(entries: string[], accounts: AccountSpec[]): Map<string, string> {
  const names = new Set(['default', ...accounts.map((account) => account.name)])
  const routes = new Map<string, string>()
  for (const entry of entries) {
    const match = ROUTE.exec(entry.trim())
    if (!match?.[1] || !match[2]) throw new Error(`"${entry}" is not OWNER=NAME`)
    if (!names.has(match[2])) {
      throw new Error(`"${entry}" names no account: define it with --account ${match[2]}=ENV_VAR`)
    }
    const owner = match[1].toLowerCase()
    if (routes.has(owner)) throw new Error(`owner "${match[1]}" is routed twice`)
    routes.set(owner, match[2])
  }
  return routes
}

/** Search qualifiers that name an owner (`repo:o/r`, `org:o`, `user:o`, `owner:o`). */
const QUALIFIER = /(?:^|\s)(?:repo:([A-Za-z0-9_.-]+)\/|(?:org|user|owner):([A-Za-z0-9_.-]+))/g

/** The owner a request is about: its route's `owner`, `org` or `username`, GraphQL's, or a search's. */
export function ownerOfRequest(options: Record<string, unknown>): string[] {
  const variables = (options.variables ?? {}) as Record<string, unknown>
  for (const value of [options.owner, options.org, variables.owner, variables.login]) {
    if (typeof value === 'string' && value) return [value]
  }
  // A URL already expanded (the next page from a `Link` header) carries its owner in its path.
  if (typeof options.url === 'string' && !options.url.includes('{')) {
    const path = options.url.replace(/^[a-z]+:\/\/[^/]+/i, '')
    const owner = /\/(?:repos|orgs|users)\/([^/?#]+)/.exec(path)?.[1]
    if (owner) return [decodeURIComponent(owner)]
  }
  if (typeof options.q === 'string') {
    const owners = new Set<string>()
    for (const match of options.q.matchAll(QUALIFIER)) owners.add((match[1] ?? match[2] ?? '').toLowerCase())
    owners.delete('')
    return [...owners]
  }
  return []
}

export class AccountRoutingError extends Error {
  override name = 'AccountRoutingError'
}

/**
 * Routes `base`'s requests: one about an owner routed to another account goes through that
 * account's client instead (its token, its limiter); the rest stay on `base`. A search naming
 * owners of different accounts is refused: one token cannot speak for both.
 */
export function routeByOwner(
  base: Octokit,
  routes: Map<string, string>,
  clientOf: (account: string) => Promise<Octokit>,
): void {
  base.hook.wrap('request', async (request, options) => {
    const owners = ownerOfRequest(options as unknown as Record<string, unknown>)
    const accounts = new Set(owners.map((owner) => routes.get(owner.toLowerCase()) ?? 'default'))
    if (accounts.size > 1) {
      throw new AccountRoutingError(
        `this request names owners of different accounts (${owners.join(', ')}): ask about one account's owners at a time`,
      )
    }
    const account = [...accounts][0] ?? 'default'
    if (account === 'default') return request(options)
    const target = await clientOf(account)
    if (target === base) return request(options)
    // The options carry `base`'s hook chain (`request.hook`): without it, `target` uses its own
    // (its token, limiter, retries and host guard) instead of coming back here.
    const { hook: _baseHook, ...requestOptions } = (options.request ?? {}) as Record<string, unknown>
    return target.request({ ...options, request: requestOptions } as never)
  })
}
