import { realpathSync } from 'node:fs'
import { lstat, opendir, readlink, realpath, stat } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { FsError, isErrnoError, toFsError } from './errors.js'

declare const safePathBrand: unique symbol

/**
 * A path that {@link PathGuard.resolveSafe} has checked: canonical (symlinks resolved, `..` gone), absolute and
 * inside an allowed root at the time of the check. Every library function that touches the file system takes
 * a `SafePath`, never a string, so the compiler makes sure the tool layer went through the guard.
 */
export interface SafePath {
  /** Canonical absolute path. For a path that does not exist yet: the canonical nearest existing ancestor plus the rest. */
  readonly path: string
  /** The canonical allowed root that contains {@link path} (the deepest one when roots are nested). */
  readonly root: string
  /** Whether the entry existed when it was resolved. */
  readonly exists: boolean
  /** True when resolved with `followFinalSymlink: false` and the entry itself is a symbolic link. */
  readonly isSymbolicLink: boolean
  /** The guard that checked it; used to re-check after opening (narrowing time-of-check/time-of-use races). */
  readonly guard: PathGuard
  readonly [safePathBrand]: true
}

/** Options of {@link PathGuard.resolveSafe}. */
export interface ResolveOptions {
  /**
   * The caller will create or replace the entry. A final component that is a symbolic link is refused: writes
   * never go through a link. Default false.
   */
  forWrite?: boolean
  /** Fail with `not_found` when the entry does not exist. Default: true for reads, false for writes. */
  mustExist?: boolean
  /**
   * Default true. With false, the final component is not resolved: the result names a symbolic link itself
   * (its parent directory is still resolved and checked). For stat-ing or moving a link without touching its target.
   */
  followFinalSymlink?: boolean
}

/** A configured root that could not be used as given. */
export interface RootWarning {
  /** The root as it was given. */
  root: string
  /** Why it was dropped or may not work, e.g. "does not exist". */
  reason: string
  /** True when the root was dropped from the allowed set. */
  dropped: boolean
}

/** The result of building or narrowing a guard. */
export interface GuardResult {
  guard: PathGuard
  warnings: RootWarning[]
}

interface Root {
  /** realpath of the root. */
  readonly canonical: string
  /** The root as given (absolute, normalised), accepted as an alias in a first lexical check. */
  readonly given: string
}

/** Guards against symlink loops when resolving dangling links by hand (the kernel's own limit is 40). */
const maxSymlinkHops = 40

/**
 * True when `child` is `parent` or inside it, compared by whole path components: `/allowed_evil` is not inside
 * `/allowed` (a plain string prefix test is the bug behind CVE-2025-53110). Both must be absolute and normalised.
 */
export function isWithin(parent: string, child: string): boolean {
  if (child === parent) return true
  const prefix = parent.endsWith(path.sep) ? parent : parent + path.sep
  return child.startsWith(prefix)
}

/**
 * The allowed set after a client announces its roots. Client roots can only narrow the command-line roots:
 * a client root inside a CLI root is kept (it narrows to it), a CLI root inside a client root is kept (the
 * intersection of the two subtrees), a client root outside every CLI root is dropped. With no CLI roots the
 * client roots are used as they are. Duplicates and roots nested in an earlier-kept root are removed.
 * All paths must be canonical and absolute.
 */
export function intersectRoots(cliRoots: readonly string[], clientRoots: readonly string[]): string[] {
  const candidates: string[] = []
  if (cliRoots.length === 0) {
    candidates.push(...clientRoots)
  } else {
    for (const client of clientRoots) {
      for (const cli of cliRoots) {
        if (isWithin(cli, client)) candidates.push(client)
        else if (isWithin(client, cli)) candidates.push(cli)
      }
    }
  }
  const result: string[] = []
  for (const candidate of candidates) {
    if (result.some((kept) => isWithin(kept, candidate))) continue
    // A later, wider root replaces the narrower ones it contains.
    for (let index = result.length - 1; index >= 0; index--) {
      if (isWithin(candidate, result[index]!)) result.splice(index, 1)
    }
    result.push(candidate)
  }
  return result
}

/**
 * The single authority on which paths the server may touch. Build it once with {@link PathGuard.create};
 * narrow it with the client's roots with {@link PathGuard.narrow}.
 */
export class PathGuard {
  readonly #roots: readonly Root[]
  /** The command-line roots; narrowing always starts from these, so client roots can never widen access. */
  readonly #base: readonly Root[]
  /**
   * Directories were configured (even if none of them could be used). Then client roots must never stand in
   * for them: an empty base means "nothing", not "whatever the client offers".
   */
  readonly #configured: boolean

  private constructor(roots: readonly Root[], base: readonly Root[], configured: boolean) {
    this.#roots = roots
    this.#base = base
    this.#configured = configured
  }

  /**
   * Canonicalises the command-line roots. Relative roots resolve against the working directory; `~` is not
   * expanded here (the config layer may do it). A missing root is dropped and reported; an unreadable one is
   * kept and reported. Never throws for a bad root.
   */
  static async create(roots: readonly string[]): Promise<GuardResult> {
    const { roots: canonical, warnings } = await canonicalRoots(roots)
    return { guard: new PathGuard(canonical, canonical, roots.length > 0), warnings }
  }

  /** Canonical allowed roots, in order. The first one is where relative paths resolve. */
  get roots(): readonly string[] {
    return this.#roots.map((root) => root.canonical)
  }

  /** One line naming the allowed directories, for error messages and the model. */
  describeRoots(): string {
    if (this.#roots.length === 0) return 'No allowed directories are configured.'
    return `Allowed directories: ${this.roots.join(', ')}`
  }

  /** True when directories were configured at creation, whether or not any of them could be used. */
  get configured(): boolean {
    return this.#configured
  }

  /**
   * A guard limited to the client's roots (see {@link intersectRoots}); this guard is unchanged. Client roots
   * are plain paths (convert `file://` URIs first). Missing client roots are dropped and reported. An empty
   * client list leaves no roots at all: the tool layer decides whether an empty list means "no narrowing".
   * When directories were configured but none of them could be used, the result has no roots either: client
   * roots replace the configured directories only when none were configured at all.
   */
  async narrow(clientRoots: readonly string[]): Promise<GuardResult> {
    const { roots: client, warnings } = await canonicalRoots(clientRoots)
    const base = this.#base.map((root) => root.canonical)
    const kept =
      base.length === 0 && this.#configured
        ? []
        : intersectRoots(
            base,
            client.map((root) => root.canonical),
          )
    for (const root of client) {
      if (
        !kept.some((candidate) => isWithin(root.canonical, candidate) || isWithin(candidate, root.canonical))
      ) {
        warnings.push({ root: root.given, reason: 'is outside every allowed directory', dropped: true })
      }
    }
    const byCanonical = new Map([...this.#base, ...client].map((root) => [root.canonical, root]))
    const roots = kept.map((canonical) => byCanonical.get(canonical) ?? { canonical, given: canonical })
    return { guard: new PathGuard(roots, this.#base, this.#configured), warnings }
  }

  /** The deepest allowed root that contains the canonical absolute `candidate`, or undefined. */
  rootOf(candidate: string): string | undefined {
    let best: string | undefined
    for (const root of this.#roots) {
      if (
        isWithin(root.canonical, candidate) &&
        (best === undefined || root.canonical.length > best.length)
      ) {
        best = root.canonical
      }
    }
    return best
  }

  /**
   * Checks a path from the model and returns its canonical form.
   *
   * - Rejects non-strings and empty strings (`invalid_argument`), NUL bytes and a leading `~` (never expanded;
   *   `permission_denied`, naming the allowed directories).
   * - A `file://` URI is converted to its path (decoded as URIs are) and then checked like any other path;
   *   a URI that does not denote a local path is `invalid_argument`.
   * - Percent-encoding in a plain path is not decoded: `%2e%2e` is a file name, not `..`.
   * - Absolute paths must lie (lexically) under an allowed root, as given or canonical, before the file
   *   system is touched, so a path outside the roots learns nothing about what exists there.
   * - Relative paths resolve against the first root. Convenience: when the first segment equals the base name
   *   of exactly one root and the first root has no entry of that name, the path resolves inside that root
   *   (models often write `project/src/x.ts` for the root `/home/me/project`).
   * - The path is then canonicalised with realpath; a path that does not exist yet is the realpath of its
   *   nearest existing ancestor plus the rest (dangling links are followed by hand, as the kernel would when
   *   creating). The canonical path must be inside a root, compared by whole components: any symlink,
   *   at the end or in the middle, that leads out of the roots is refused.
   *
   * @throws FsError `invalid_argument`, `permission_denied` or `not_found`.
   */
  async resolveSafe(input: string, options: ResolveOptions = {}): Promise<SafePath> {
    const forWrite = options.forWrite ?? false
    const mustExist = options.mustExist ?? !forWrite
    const followFinalSymlink = options.followFinalSymlink ?? true
    input = this.#validateInput(input)
    if (this.#roots.length === 0) {
      throw new FsError(
        'permission_denied',
        'No allowed directories are configured; no path can be accessed.',
      )
    }

    const lexical = path.isAbsolute(input) ? path.resolve(input) : await this.#resolveRelative(input)
    // Lexical check first: an outside path is refused without touching the file system.
    const lexicalRoot = this.#roots.find(
      (root) => isWithin(root.canonical, lexical) || isWithin(root.given, lexical),
    )
    if (!lexicalRoot) throw this.#outside(input)

    const isRoot = lexical === lexicalRoot.canonical || lexical === lexicalRoot.given
    let canonical: string
    let exists: boolean
    let isSymbolicLink = false
    if (followFinalSymlink || isRoot) {
      const resolved = await this.#canonicalize(lexical, input)
      canonical = resolved.missing.length ? path.join(resolved.real, ...resolved.missing) : resolved.real
      exists = resolved.missing.length === 0
    } else {
      const parent = await this.#canonicalize(path.dirname(lexical), input)
      canonical = path.join(parent.real, ...parent.missing, path.basename(lexical))
      const entry = parent.missing.length ? undefined : await lstat(canonical).catch(() => undefined)
      exists = entry !== undefined
      isSymbolicLink = entry?.isSymbolicLink() ?? false
    }

    const root = this.rootOf(canonical)
    if (root === undefined) {
      // Lexically inside, canonically outside: a symlink (final or in the middle) leads out of the roots.
      throw new FsError(
        'permission_denied',
        `Access denied: ${input} resolves through a symbolic link to a location outside the allowed directories. ${this.describeRoots()}`,
      )
    }
    if (mustExist && !exists) {
      throw new FsError('not_found', `No such file or directory: ${input}`, { details: { path: canonical } })
    }
    if (forWrite && isSymbolicLink) {
      throw new FsError('permission_denied', `Refusing to write through a symbolic link: ${input}`)
    }
    if (forWrite && followFinalSymlink && !isRoot && canonical !== lexical) {
      // The canonical path differs, so some component was a link; refuse if it is the final one. Writing goes
      // to the canonical path anyway, but a write aimed at a link is almost always a mistake or an attack.
      const entry = await lstat(lexical).catch(() => undefined)
      if (entry?.isSymbolicLink()) {
        throw new FsError('permission_denied', `Refusing to write through a symbolic link: ${input}`, {
          hint: `Write to the link's target instead: ${canonical}`,
        })
      }
    }
    return { path: canonical, root, exists, isSymbolicLink, guard: this } as unknown as SafePath
  }

  /**
   * Re-checks a canonical path observed after an operation (e.g. the real path of an opened descriptor).
   * @throws FsError `permission_denied` when it is no longer inside the roots.
   */
  assertInside(canonical: string, display: string): string {
    const root = this.rootOf(canonical)
    if (root === undefined) {
      throw new FsError(
        'permission_denied',
        `Access denied: ${display} changed while being opened and now leads outside the allowed directories.`,
      )
    }
    return root
  }

  async #resolveRelative(input: string): Promise<string> {
    const first = this.#roots[0]!
    const head = input.split(/[\\/]/)[0]
    if (head && head !== '.' && head !== '..') {
      const named = this.#roots.filter(
        (root) => path.basename(root.canonical) === head || path.basename(root.given) === head,
      )
      if (named.length === 1) {
        const inFirst = await lstat(path.join(first.canonical, head)).catch(() => undefined)
        if (!inFirst) {
          const root = named[0]!
          const base = path.basename(root.canonical) === head ? root.canonical : root.given
          return path.resolve(path.dirname(base), input)
        }
      }
    }
    return path.resolve(first.canonical, input)
  }

  /** realpath of the longest existing prefix, plus the missing rest; follows dangling links by hand. */
  async #canonicalize(
    lexical: string,
    input: string,
    hops = 0,
  ): Promise<{ real: string; missing: string[] }> {
    if (hops > maxSymlinkHops) {
      throw new FsError('invalid_argument', `Too many levels of symbolic links: ${input}`)
    }
    const missing: string[] = []
    let current = lexical
    for (;;) {
      try {
        // realpath(3) on the calling thread: a few readlink(2) calls on cached directory entries cost less
        // than a round trip to the thread pool, and this runs on every call. Same call, same errors as the
        // promise form.
        return { real: realpathSync.native(current), missing }
      } catch (error) {
        if (!isErrnoError(error)) throw error
        if (error.code === 'ELOOP') {
          throw new FsError('invalid_argument', `Too many levels of symbolic links: ${input}`, {
            cause: error,
          })
        }
        if (error.code === 'EACCES' || error.code === 'EPERM') {
          throw new FsError('permission_denied', `Permission denied by the operating system: ${input}`, {
            cause: error,
          })
        }
        if (error.code !== 'ENOENT' && error.code !== 'ENOTDIR') throw toFsError(error, input)
      }
      const entry = await lstat(current).catch(() => undefined)
      if (entry?.isSymbolicLink()) {
        // A dangling link: where would creating through it land? Resolve its target the way the kernel does.
        const target = await readlink(current)
        const parent = await this.#canonicalize(path.dirname(current), input, hops + 1)
        const parentPath = path.join(parent.real, ...parent.missing)
        const resolved = await this.#canonicalize(path.resolve(parentPath, target), input, hops + 1)
        return { real: resolved.real, missing: [...resolved.missing, ...missing] }
      }
      const parent = path.dirname(current)
      if (parent === current) return { real: current, missing }
      missing.unshift(path.basename(current))
      current = parent
    }
  }

  /** Checks the shape of a path from the model; returns the path to resolve (a `file://` URI converted). */
  #validateInput(input: unknown): string {
    if (typeof input !== 'string' || input.length === 0) {
      throw new FsError('invalid_argument', 'A path is required.')
    }
    if (input.includes('\0')) {
      throw new FsError(
        'permission_denied',
        `Access denied: paths must not contain NUL bytes. ${this.describeRoots()}`,
      )
    }
    if (input.startsWith('~')) {
      throw new FsError(
        'permission_denied',
        `Access denied: '~' is not expanded: ${input}. ${this.describeRoots()}`,
        {
          hint: 'Give an absolute path inside an allowed directory, or a path relative to the first one.',
        },
      )
    }
    if (/^file:/i.test(input)) {
      let converted: string
      try {
        converted = fileURLToPath(input)
      } catch {
        throw new FsError('invalid_argument', `Not a local file URI: ${input}`, {
          hint: 'Give a file system path instead.',
        })
      }
      return this.#validateInput(converted)
    }
    return input
  }

  #outside(input: string): FsError {
    return new FsError(
      'permission_denied',
      `Access denied: ${input} is outside the allowed directories. ${this.describeRoots()}`,
      { hint: 'Use a path inside one of the allowed directories.' },
    )
  }
}

async function canonicalRoots(
  inputs: readonly string[],
): Promise<{ roots: Root[]; warnings: RootWarning[] }> {
  const roots: Root[] = []
  const warnings: RootWarning[] = []
  for (const input of inputs) {
    if (typeof input !== 'string' || input.length === 0 || input.includes('\0')) {
      warnings.push({ root: String(input), reason: 'is not a valid path', dropped: true })
      continue
    }
    const given = path.resolve(input)
    let canonical: string
    try {
      canonical = await realpath(given)
      const info = await stat(canonical)
      if (!info.isDirectory()) {
        warnings.push({ root: input, reason: 'is not a directory', dropped: true })
        continue
      }
    } catch (error) {
      const reason = isErrnoError(error) && error.code === 'ENOENT' ? 'does not exist' : 'cannot be resolved'
      warnings.push({ root: input, reason, dropped: true })
      continue
    }
    try {
      await readdirProbe(canonical)
    } catch {
      warnings.push({ root: input, reason: 'is not readable', dropped: false })
    }
    if (!roots.some((root) => root.canonical === canonical)) roots.push({ canonical, given })
  }
  return { roots, warnings }
}

async function readdirProbe(directory: string): Promise<void> {
  const handle = await opendir(directory)
  await handle.close()
}
