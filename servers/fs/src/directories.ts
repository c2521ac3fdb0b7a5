import { fileURLToPath } from 'node:url'
import { type ClientAccess, type Logger, ToolError } from '@keel-mcp/core'
import type { PathGuard, RootWarning } from './lib/index.js'

/** The allowed directories for one client: the configured ones, narrowed by the client's roots. */
export interface Effective {
  guard: PathGuard
  /** The client's roots narrowed the configured directories. */
  narrowed: boolean
  /** Why nothing is accessible, when `guard` has no roots (a message for the model). */
  reason: string | undefined
}

const maxCachedRootLists = 32

/**
 * Decides which directories a call may touch. The configured directories (argv) are the ceiling; a client
 * that offers MCP roots narrows them to the intersection (never widens). Computed from the calling client on
 * every call, so HTTP sessions with different roots never see each other's narrowing; the result is cached by
 * the client's list of roots (core caches that list until the client says it changed).
 */
export class AllowedDirectories {
  readonly base: PathGuard
  readonly #startupWarnings: readonly RootWarning[]
  readonly #logger: Logger
  readonly #cache = new Map<string, Promise<Effective>>()
  readonly #baseEffective: Effective

  constructor(base: PathGuard, startupWarnings: readonly RootWarning[], logger: Logger) {
    this.base = base
    this.#startupWarnings = startupWarnings
    this.#logger = logger
    this.#baseEffective = {
      guard: base,
      narrowed: false,
      reason: base.roots.length ? undefined : this.#noBase(),
    }
  }

  /** The effective directories for the client making a call. */
  async forClient(client: ClientAccess): Promise<Effective> {
    const roots = await client.roots()
    // A client without roots, or with an empty list, expresses no preference: the configured directories apply.
    if (!roots?.length) return this.#baseEffective
    const uris = roots.map((root) => root.uri)
    const key = JSON.stringify(uris)
    let effective = this.#cache.get(key)
    if (!effective) {
      effective = this.#narrow(uris)
      effective.catch(() => this.#cache.delete(key))
      if (this.#cache.size >= maxCachedRootLists) this.#cache.delete(this.#cache.keys().next().value!)
      this.#cache.set(key, effective)
    }
    return effective
  }

  /** The guard for a tool call; refuses with a clear message when nothing is accessible. */
  async guardFor(client: ClientAccess): Promise<PathGuard> {
    const effective = await this.forClient(client)
    if (effective.guard.roots.length === 0) {
      throw new ToolError('permission_denied', effective.reason ?? 'No directory is accessible.')
    }
    return effective.guard
  }

  /** Forgets computed narrowings (the client's roots changed, or directories appeared on disk). */
  clear(): void {
    this.#cache.clear()
  }

  async #narrow(uris: string[]): Promise<Effective> {
    const paths: string[] = []
    for (const uri of uris) {
      try {
        paths.push(fileURLToPath(uri))
      } catch {
        this.#logger.warn(`client root ${uri} is not a local file:// directory; it is ignored`)
      }
    }
    if (paths.length === 0) return this.#baseEffective
    const { guard, warnings } = await this.base.narrow(paths)
    for (const warning of warnings)
      this.#logger.warn(`client root ${warning.root} ${warning.reason}; it is ignored`)
    let reason: string | undefined
    if (guard.roots.length === 0) {
      if (this.base.configured && this.base.roots.length === 0) reason = this.#noBase()
      else if (this.base.configured)
        reason = `The client's roots (${paths.join(', ')}) lie outside the server's allowed directories (${this.base.roots.join(', ')}): nothing is accessible. Roots can only narrow the allowed directories.`
      else
        reason = `None of the client's roots (${paths.join(', ')}) is an existing directory: nothing is accessible.`
    }
    this.#logger.debug('client roots applied', { roots: paths, allowed: guard.roots })
    return { guard, narrowed: true, reason }
  }

  #noBase(): string {
    if (!this.base.configured) {
      return 'No allowed directories: the server was started without directories and the client offers no roots. Start the server with directories (mcp-server-fs <dir>...) or use a client that offers roots.'
    }
    const problems = this.#startupWarnings
      .filter((warning) => warning.dropped)
      .map((warning) => `${warning.root} ${warning.reason}`)
    return `None of the configured directories can be used (${problems.join('; ')}). Fix the server's arguments and restart it.`
  }
}
