/**
 * What went wrong, in terms the tool layer can map onto core's error kinds. Messages are written for the
 * model: they name paths inside the allowed directories (and the allowed directories themselves), never
 * server internals such as stack traces or paths outside the roots.
 */
export type FsErrorCode =
  | 'permission_denied'
  | 'not_found'
  | 'invalid_argument'
  | 'conflict'
  | 'too_large'
  | 'not_a_file'
  | 'not_a_directory'
  | 'binary'
  | 'unavailable'
  | 'internal'

/** Options of {@link FsError}. */
export interface FsErrorOptions {
  /** A next step for the model, e.g. "Use tail to read the end of the file". */
  hint?: string
  /** The underlying error (an errno error, usually); for logs only, never shown to the model. */
  cause?: unknown
  /** Structured facts for the tool layer (e.g. which edit failed); safe to show. */
  details?: Record<string, unknown>
}

/** The one error type of the filesystem library. */
export class FsError extends Error {
  override readonly name = 'FsError'
  readonly code: FsErrorCode
  readonly hint: string | undefined
  readonly details: Record<string, unknown> | undefined

  constructor(code: FsErrorCode, message: string, options: FsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.hint = options.hint
    this.details = options.details
  }
}

/** True for an errno-style error from `node:fs` (has a string `code`). */
export function isErrnoError(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && typeof (error as NodeJS.ErrnoException).code === 'string'
}

/**
 * Maps an error thrown by `node:fs` on `path` to an {@link FsError}. `path` must be a path the model may see
 * (inside the roots). FsErrors and abort errors pass through unchanged.
 */
export function toFsError(error: unknown, path: string): unknown {
  if (error instanceof FsError) return error
  if (!isErrnoError(error)) return error
  const options = { cause: error }
  switch (error.code) {
    case 'ENOENT':
      return new FsError('not_found', `No such file or directory: ${path}`, options)
    case 'EACCES':
    case 'EPERM':
      return new FsError('permission_denied', `Permission denied by the operating system: ${path}`, options)
    case 'EEXIST':
      return new FsError('conflict', `Already exists: ${path}`, options)
    case 'ENOTEMPTY':
      return new FsError('conflict', `Directory is not empty: ${path}`, options)
    case 'ENOTDIR':
      return new FsError(
        'not_a_directory',
        `Not a directory (or a parent is not a directory): ${path}`,
        options,
      )
    case 'EISDIR':
      return new FsError('not_a_file', `Is a directory, not a file: ${path}`, options)
    case 'ELOOP':
      // O_NOFOLLOW reports a symlink in the final component as ELOOP; so does a real symlink loop.
      return new FsError('permission_denied', `Refusing to follow a symbolic link: ${path}`, options)
    case 'EFBIG':
      return new FsError('too_large', `File too large: ${path}`, options)
    case 'ENAMETOOLONG':
      return new FsError('invalid_argument', `Path or name too long: ${path}`, options)
    case 'EINVAL':
      return new FsError('invalid_argument', `Invalid operation on ${path}`, options)
    case 'EXDEV':
      return new FsError('invalid_argument', `Cannot do this across file systems: ${path}`, options)
    case 'EROFS':
      return new FsError('permission_denied', `Read-only file system: ${path}`, options)
    case 'ENOSPC':
    case 'EDQUOT':
      return new FsError('unavailable', `No space left on device while writing ${path}`, options)
    case 'EMFILE':
    case 'ENFILE':
    case 'EBUSY':
    case 'EAGAIN':
      return new FsError('unavailable', `Temporarily unavailable (${error.code}): ${path}`, options)
    default:
      return new FsError('internal', `Unexpected file system error (${error.code}) on ${path}`, options)
  }
}

/** Rethrows `error` mapped by {@link toFsError}; for `catch` clauses. */
export function throwFsError(error: unknown, path: string): never {
  throw toFsError(error, path)
}
