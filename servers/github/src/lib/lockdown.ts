import type { Octokit } from './client.js'

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
    owner: string,
    repo: string,
    login: string | undefined,
    signal?: AbortSignal,
  ): Promise<boolean> {
    if (!login) return Promise.resolve(false)
    if (login.toLowerCase() === owner.toLowerCase()) return Promise.resolve(true)
    const key = `${scope}\u0000${owner}/${repo}\u0000${login}`.toLowerCase()
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
