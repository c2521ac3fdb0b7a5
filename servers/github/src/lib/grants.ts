import { hiddenByScopes, parseScopes, type ToolFacts } from './scopes.js'

/**
 * What each token turned out to allow, learned from GitHub's answers, and the tools it therefore
 * cannot use (hidden, with the reason a call gets):
 *
 * - classic tokens: `X-OAuth-Scopes`, sent on every answer (see scopes.ts);
 * - fine-grained tokens and GitHub Apps send no scopes. GitHub answers what they may not do with a
 *   403 whose `X-Accepted-GitHub-Permissions` names the permission sets that would have served it
 *   (`issues=write; pull_requests=write`: either one). The first such 403 teaches the server that
 *   the token lacks each single permission named; every tool that needs only permissions the token
 *   lacks is hidden from then on. Fine-grained personal tokens (`github_pat_`) cannot use the
 *   notifications API at all, so those tools are hidden for them from the start.
 *
 * State is per token (by its key, never the token), for at most {@link MAX_TOKENS} tokens: the least
 * recently used is forgotten first (it learns again on its next 403).
 */

export const MAX_TOKENS = 256

type Level = 'read' | 'write' | 'admin'
const RANK: Record<Level, number> = { read: 1, write: 2, admin: 3 }

/** `issues=write`: a permission at a level. */
type Permission = `${string}=${Level}`

/**
 * The fine-grained permissions a tool needs, as alternatives (any one serves). Tools missing here
 * need none a token can lack (metadata, search, public data) or go through GraphQL, whose errors
 * carry no permission header: they are never hidden by what a 403 taught.
 */
function permissionsOf(tool: ToolFacts): Permission[] {
  const level: Level = tool.readOnly ? 'read' : 'write'
  const special = SPECIAL[tool.name]
  if (special) return special
  const permission = TOOLSET_PERMISSION[tool.toolset]
  return permission ? [`${permission}=${level}`] : []
}

const TOOLSET_PERMISSION: Record<string, string> = {
  issues: 'issues',
  pull_requests: 'pull_requests',
  actions: 'actions',
  git: 'contents',
  code_security: 'security_events',
  dependabot: 'vulnerability_alerts',
  secret_protection: 'secret_scanning_alerts',
  gists: 'gists',
  stargazers: 'starring',
}

const SPECIAL: Record<string, Permission[]> = {
  // Reads of public data, search and metadata: any token.
  search_issues: [],
  search_pull_requests: [],
  get_gist: [],
  list_gists: [],
  list_starred_repositories: [],
  list_issue_types: [],
  // Repository contents.
  get_file_contents: ['contents=read'],
  list_branches: ['contents=read'],
  list_commits: ['contents=read'],
  get_commit: ['contents=read'],
  list_tags: ['contents=read'],
  list_releases: ['contents=read'],
  get_latest_release: ['contents=read'],
  get_release_by_tag: ['contents=read'],
  get_tag: ['contents=read'],
  create_branch: ['contents=write'],
  create_or_update_file: ['contents=write'],
  push_files: ['contents=write'],
  delete_file: ['contents=write'],
  update_pull_request_branch: ['pull_requests=write', 'contents=write'],
  create_repository: ['administration=write'],
  fork_repository: ['administration=write'],
  // Labels belong to issues and pull requests alike.
  list_labels: ['issues=read', 'pull_requests=read'],
  get_label: ['issues=read', 'pull_requests=read'],
  create_label: ['issues=write', 'pull_requests=write'],
  update_label: ['issues=write', 'pull_requests=write'],
  delete_label: ['issues=write', 'pull_requests=write'],
  add_issue_labels: ['issues=write', 'pull_requests=write'],
  remove_issue_label: ['issues=write', 'pull_requests=write'],
  // Comments on issues serve pull requests too.
  add_issue_comment: ['issues=write', 'pull_requests=write'],
  list_issue_comments: ['issues=read', 'pull_requests=read'],
  list_repository_security_advisories: ['repository_advisories=read'],
  list_org_repository_security_advisories: ['repository_advisories=read'],
  get_teams: ['members=read'],
  get_team_members: ['members=read'],
}

/** `"issues=write; pull_requests=write"` → the single permissions named (sets of several are skipped: any one of them may be the one missing). */
export function lackedPermissions(header: string): Permission[] {
  const lacked: Permission[] = []
  for (const set of header.split(';')) {
    const parts = set
      .split(',')
      .map((part) => part.trim().toLowerCase())
      .filter(Boolean)
    if (parts.length !== 1) continue
    const match = /^([a-z_]+)=(read|write|admin)$/.exec(parts[0] ?? '')
    if (match?.[1] && match[2]) lacked.push(`${match[1]}=${match[2] as Level}`)
  }
  return lacked
}

interface TokenState {
  scopes?: string
  byScopes?: Map<string, string>
  /** Permission name → the lowest level the token is known not to have. */
  lacked: Map<string, Level>
  byPermissions?: Map<string, string>
  /** The map handed out: the same object until something changes (core compares by identity). */
  hidden?: Map<string, string>
}

/** A fine-grained personal token, by the prefix GitHub gives them. */
export const isFineGrained = (token: string | undefined) => token?.startsWith('github_pat_') === true

export class TokenGrants {
  readonly #tools: () => ToolFacts[]
  readonly #states = new Map<string, TokenState>()

  constructor(tools: () => ToolFacts[]) {
    this.#tools = tools
  }

  /** Tokens whose state is kept (for tests of the bound). */
  get size(): number {
    return this.#states.size
  }

  #state(key: string): TokenState {
    let state = this.#states.get(key)
    if (state) {
      this.#states.delete(key)
    } else {
      state = { lacked: new Map() }
    }
    this.#states.set(key, state)
    while (this.#states.size > MAX_TOKENS) {
      const oldest = this.#states.keys().next().value
      if (oldest === undefined) break
      this.#states.delete(oldest)
    }
    return state
  }

  /** The tools this token cannot use, with why; undefined while nothing is known against it. */
  hidden(key: string | undefined): ReadonlyMap<string, string> | undefined {
    return key === undefined ? undefined : this.#states.get(key)?.hidden
  }

  /** A fine-grained personal token was seen: the notifications API does not serve them. */
  fineGrained(key: string): void {
    const state = this.#state(key)
    if (state.lacked.has('notifications')) return
    state.lacked.set('notifications', 'read')
    this.#update(state)
  }

  /** The `X-OAuth-Scopes` of an answer for this token. */
  observeScopes(key: string, header: string): void {
    const existing = this.#states.get(key)
    if (existing?.scopes === header) return
    const state = this.#state(key)
    state.scopes = header
    const granted = header.trim() || 'none'
    state.byScopes = new Map(
      [...hiddenByScopes(this.#tools(), parseScopes(header))].map((name) => [
        name,
        `${name} needs a token scope this classic token does not have (its scopes: ${granted}). ` +
          'Add the scope to the token (github.com/settings/tokens) and reconnect.',
      ]),
    )
    this.#update(state)
  }

  /** A 403 for this token naming the permissions that would have served it; true if it taught something. */
  observeDenied(key: string, header: string): boolean {
    const lacked = lackedPermissions(header)
    if (!lacked.length) return false
    const state = this.#state(key)
    let learned = false
    for (const permission of lacked) {
      const [name, level] = permission.split('=') as [string, Level]
      const known = state.lacked.get(name)
      if (known !== undefined && RANK[known] <= RANK[level]) continue
      state.lacked.set(name, level)
      learned = true
    }
    if (learned) this.#update(state)
    return learned
  }

  #update(state: TokenState): void {
    const byPermissions = new Map<string, string>()
    const lacks = (permission: Permission) => {
      const [name, level] = permission.split('=') as [string, Level]
      const known = state.lacked.get(name)
      return known !== undefined && RANK[known] <= RANK[level]
    }
    for (const tool of this.#tools()) {
      const needs =
        tool.toolset === 'notifications' ? (['notifications=read'] as Permission[]) : permissionsOf(tool)
      if (!needs.length || !needs.every(lacks)) continue
      byPermissions.set(
        tool.name,
        tool.toolset === 'notifications' && state.lacked.get('notifications') === 'read'
          ? `${tool.name} needs the notifications API, which GitHub does not serve to fine-grained tokens. Use a classic token with the "notifications" scope for it.`
          : `${tool.name} needs the fine-grained permission ${needs.map(describe).join(' or ')}, which this token does not have (GitHub answered 403). ` +
              "Grant it in the token's settings (github.com/settings/personal-access-tokens) and reconnect.",
      )
    }
    state.byPermissions = byPermissions
    const hidden = new Map([...(state.byScopes ?? []), ...byPermissions])
    state.hidden = hidden.size ? hidden : undefined
  }
}

/** `pull_requests=write` → `"Pull requests: write"`, as GitHub's settings page names it. */
function describe(permission: Permission): string {
  const [name, level] = permission.split('=') as [string, Level]
  const words = name.replace(/_/g, ' ')
  return `"${words.charAt(0).toUpperCase()}${words.slice(1)}: ${level}"`
}
