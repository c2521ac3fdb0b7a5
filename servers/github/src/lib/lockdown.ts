import type { Octokit } from './client.js'

/**
 * A repository to judge lockdown against. `answered: true` when it was read from the API's answer
 * (the repository GitHub actually served, after any redirect of a renamed or transferred repo);
 * otherwise it is only the request's spelling, which never decides anything by itself.
 */
export interface RepositoryRef {
  owner: string
  repo: string
  answered?: boolean
}

const SEGMENT = /^[A-Za-z0-9_.-]{1,100}$/

/**
 * `owner/repo` from a path: after `repos/` in an API URL, at the start of a `full_name`, or at the
 * start of a web URL, which names its repository only when something of it follows (`issues/1`).
 */
function fromPath(path: string, form: 'api' | 'name' | 'web'): { owner: string; repo: string } | undefined {
  let parts: string[]
  try {
    parts = path.split('/').filter(Boolean).map(decodeURIComponent)
  } catch {
    return undefined
  }
  const start = form === 'api' ? parts.indexOf('repos') + 1 : 0
  if (form === 'api' && start === 0) return undefined
  if (form === 'web' && parts.length < 3) return undefined
  const [owner, repo] = [parts[start], parts[start + 1]]
  if (!owner || !repo || !SEGMENT.test(owner) || !SEGMENT.test(repo) || repo === '.' || repo === '..')
    return undefined
  return { owner, repo }
}

function fromUrl(value: unknown, form: 'api' | 'web'): { owner: string; repo: string } | undefined {
  return typeof value === 'string' && URL.canParse(value)
    ? fromPath(new URL(value).pathname, form)
    : undefined
}

/**
 * The repository an API object belongs to, as GitHub answered it: `repository.full_name`,
 * `base.repo.full_name`, then the API URLs it carries (`repository_url`, `url`, `issue_url`,
 * `pull_request_url`: `…/repos/{owner}/{repo}/…`), then its web `html_url`. Falls back to the
 * request's spelling, marked as not answered, when the object names none.
 */
export function answeredBy(object: unknown, requested: { owner: string; repo: string }): RepositoryRef {
  const record = (object ?? {}) as {
    repository?: { full_name?: unknown } | null
    base?: { repo?: { full_name?: unknown } | null } | null
    [field: string]: unknown
  }
  const fullName = [record.repository?.full_name, record.base?.repo?.full_name].find(
    (name): name is string => typeof name === 'string' && name.includes('/'),
  )
  const named = fullName ? fromPath(fullName, 'name') : undefined
  const found =
    named ??
    fromUrl(record.repository_url, 'api') ??
    fromUrl(record.url, 'api') ??
    fromUrl(record.issue_url, 'api') ??
    fromUrl(record.pull_request_url, 'api') ??
    fromUrl(record.html_url, 'web')
  return found ? { ...found, answered: true } : { ...requested, answered: false }
}

const MAX_ENTRIES = 2048
const TTL_MS = 10 * 60 * 1000

/**
 * Lockdown: text by users who cannot push to the repository is withheld, so that an outsider's
 * issue or comment cannot steer the model. Push access is read from GitHub (collaborator
 * permission) and cached per token, repository and user for ten minutes. Anything that fails to
 * prove push access counts as no access.
 */
export class PushAccess {
  readonly #cache = new Map<string, { value: Promise<boolean>; at: number }>()

  has(
    octokit: Octokit,
    scope: string,
    where: RepositoryRef,
    login: string | undefined,
    signal?: AbortSignal,
  ): Promise<boolean> {
    if (!login) return Promise.resolve(false)
    const { owner, repo } = where
    // The owner can push to their own repository; but only the repository GitHub answered for says
    // who the owner is. A request's spelling (a renamed or transferred repo redirects) is asked
    // about like anyone else, and GitHub answers for the repository it redirects to.
    if (where.answered === true && login.toLowerCase() === owner.toLowerCase()) return Promise.resolve(true)
    const key = `${scope}\u0000${owner}/${repo}\u0000${where.answered === true}\u0000${login}`.toLowerCase()
    const hit = this.#cache.get(key)
    if (hit && Date.now() - hit.at < TTL_MS) return hit.value
    const value = octokit.rest.repos
      .getCollaboratorPermissionLevel({
        owner,
        repo,
        username: login,
        ...(signal ? { request: { signal } } : {}),
      })
      .then(
        ({ data }) =>
          ['admin', 'maintain', 'write'].includes(data.role_name ?? '') ||
          ['admin', 'write'].includes(data.permission) ||
          data.user?.permissions?.push === true,
        () => false,
      )
    this.#cache.set(key, { value, at: Date.now() })
    if (this.#cache.size > MAX_ENTRIES) {
      const oldest = this.#cache.keys().next().value
      if (oldest !== undefined) this.#cache.delete(oldest)
    }
    return value
  }
}

export const WITHHELD = '[withheld: lockdown mode hides text by users without push access]'
