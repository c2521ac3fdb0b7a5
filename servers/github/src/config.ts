import { type OptionSpecs, z } from '@keel-mcp/core'

/** The GitHub server's own options (the common flags come from core). */
export interface GithubOptions {
  token: string | undefined
  apiUrl: string
  tokenFromRequest: boolean
  lockdown: boolean
  accounts: string[]
  accountFor: string[]
}

export const options: OptionSpecs<GithubOptions> = {
  token: {
    flag: 'github-token',
    env: ['GITHUB_TOKEN', 'GITHUB_PERSONAL_ACCESS_TOKEN'],
    type: 'string',
    placeholder: 'token',
    secret: true,
    description: 'GitHub token (prefer the env var: argv shows in process lists).',
    schema: z.string().min(1, 'must not be empty').max(1000, 'is too long to be a GitHub token').optional(),
  },
  apiUrl: {
    flag: 'api-url',
    env: 'GITHUB_API_URL',
    type: 'string',
    placeholder: 'url',
    description:
      'REST API root: https://HOST/api/v3 (Enterprise Server), https://api.TENANT.ghe.com (default https://api.github.com).',
    schema: z.string().min(1).default('https://api.github.com'),
  },
  tokenFromRequest: {
    flag: 'token-from-request',
    env: 'GITHUB_TOKEN_FROM_REQUEST',
    type: 'boolean',
    description:
      "HTTP only: each request's bearer token is the caller's GitHub token, used for that request only.",
    schema: z.boolean().default(false),
  },
  accounts: {
    flag: 'account',
    env: 'GITHUB_ACCOUNTS',
    type: 'string',
    multiple: true,
    placeholder: 'name=ENV_VAR',
    description:
      'Another account, its token read from ENV_VAR (repeatable); route owners to it with --account-for.',
    schema: z.array(z.string()).default([]),
  },
  accountFor: {
    flag: 'account-for',
    env: 'GITHUB_ACCOUNT_FOR',
    type: 'string',
    multiple: true,
    placeholder: 'owner=name',
    description:
      "Use account NAME for OWNER's repositories and org (repeatable); other owners use GITHUB_TOKEN.",
    schema: z.array(z.string()).default([]),
  },
  lockdown: {
    flag: 'lockdown',
    env: 'GITHUB_LOCKDOWN',
    type: 'boolean',
    description: 'Withhold issue and PR text by users without push access to the repository.',
    schema: z.boolean().default(false),
  },
}

export const helpFooter = `Environment:
  GITHUB_TOKEN (or GITHUB_PERSONAL_ACCESS_TOKEN)   the token; see the README for scopes per toolset
  GITHUB_API_URL                                   GitHub Enterprise Server / ghe.com API root

Toolsets: default (a lean set), context, repos, issues, pull_requests, actions, users, labels,
  notifications, git, stargazers, orgs, gists, security_advisories, code_security, dependabot,
  secret_protection, discussions, projects, dynamic (find_tools), or all. --read-only removes every writing tool, whatever else was asked.`
