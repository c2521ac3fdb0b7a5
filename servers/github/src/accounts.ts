import { ConfigError } from '@keel-mcp/core'
import type { GithubOptions } from './config.js'
import {
  type AccountSpec,
  type GitHubClients,
  type Octokit,
  parseAccounts,
  parseRoutes,
  routeByOwner,
} from './lib/index.js'

/**
 * The server's own client (GITHUB_TOKEN), routing requests about owners given to other accounts
 * (`--account`, `--account-for`) through those accounts' clients. Made on first use.
 */
export function accountClients(
  options: GithubOptions,
  context: {
    fromRequest: boolean
    token: string | undefined
    env: NodeJS.ProcessEnv
    addSecret(value: string | undefined): void
    clients: GitHubClients
    logger: { warn(message: string): void }
  },
): () => Promise<Octokit> {
  let accounts: AccountSpec[]
  let routes: Map<string, string>
  try {
    accounts = parseAccounts(options.accounts)
    routes = parseRoutes(options.accountFor, accounts)
  } catch (error) {
    throw new ConfigError(`--account / --account-for: ${(error as Error).message}`)
  }
  if (context.fromRequest && (accounts.length || routes.size)) {
    throw new ConfigError(
      '--account cannot be combined with --token-from-request: each request brings its own token',
    )
  }
  const tokens = new Map<string, string | undefined>([['default', context.token]])
  for (const account of accounts) {
    const value = context.env[account.env]
    if (!value)
      throw new ConfigError(`--account ${account.name}=${account.env}: ${account.env} is not set or empty`)
    context.addSecret(value)
    tokens.set(account.name, value)
    if (![...routes.values()].includes(account.name)) {
      context.logger.warn(
        `account "${account.name}" is never used: route owners to it with --account-for OWNER=${account.name}`,
      )
    }
  }
  const { clients } = context
  let routed: Promise<Octokit> | undefined
  return () => {
    if (!routes.size) return clients.get(context.token)
    routed ??= clients.get(context.token).then((base) => {
      routeByOwner(base, routes, (name) => clients.get(tokens.get(name)))
      return base
    })
    routed.catch(() => {
      routed = undefined
    })
    return routed
  }
}
