import { nodeCrypto } from './lazy-crypto.js'
import { redactor } from './redact.js'

/**
 * The kinds of failure a tool can report. The model sees `kind: message` plus the hint; the
 * kind tells it whether retrying, fixing arguments or asking the user is the right move.
 */
export const TOOL_ERROR_KINDS = [
  'invalid_argument',
  'not_found',
  'permission_denied',
  'unauthenticated',
  'conflict',
  'rate_limited',
  'timeout',
  'cancelled',
  'too_large',
  'unavailable',
  'internal',
] as const

/** One of {@link TOOL_ERROR_KINDS}. */
export type ToolErrorKind = (typeof TOOL_ERROR_KINDS)[number]

/** Options of a {@link ToolError}. */
export interface ToolErrorOptions {
  /** What the model should do next ("Call list_tables first"). Shown to the model. */
  hint?: string
  /** The underlying error. Logged to stderr, never shown to the client. */
  cause?: unknown
  /** Extra structured detail shown to the client (keep it free of secrets and server paths). */
  details?: Record<string, unknown>
}

/**
 * The one error type tools throw for failures in their domain. Its message and hint reach the
 * model; its `cause` stays in the server's logs.
 */
export class ToolError extends Error {
  readonly kind: ToolErrorKind
  readonly hint: string | undefined
  readonly details: Record<string, unknown> | undefined

  constructor(kind: ToolErrorKind, message: string, options: ToolErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ToolError'
    this.kind = kind
    this.hint = options.hint
    this.details = options.details
  }

  /** True for a `ToolError`, also across duplicated copies of this package. */
  static is(error: unknown): error is ToolError {
    return (
      error instanceof ToolError ||
      (error instanceof Error &&
        error.name === 'ToolError' &&
        typeof (error as { kind?: unknown }).kind === 'string' &&
        (TOOL_ERROR_KINDS as readonly string[]).includes((error as unknown as { kind: string }).kind))
    )
  }
}

/**
 * A server's pure mapper from domain errors (SQLSTATE, HTTP status, errno…) to a
 * {@link ToolError}. Return `undefined` for errors it does not recognise: they become `internal`.
 */
export type ErrorMapper = (error: unknown) => ToolError | undefined

/** The text the model reads for a tool error. */
export function formatToolError(error: ToolError): string {
  const lines = [`${error.kind}: ${redactor.redact(error.message)}`]
  if (error.hint) lines.push(`Hint: ${redactor.redact(error.hint)}`)
  return lines.join('\n')
}

/** A short random reference that ties a generic client message to the full log line. */
export function errorReference(): string {
  return nodeCrypto().randomBytes(4).toString('hex')
}

/** Errno codes → kinds, for servers that touch the file system or network directly. */
export function mapSystemError(error: unknown): ToolError | undefined {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code !== 'string') return undefined
  switch (code) {
    case 'ENOENT':
      return new ToolError('not_found', 'No such file or directory', { cause: error })
    case 'EACCES':
    case 'EPERM':
      return new ToolError('permission_denied', 'Permission denied by the operating system', { cause: error })
    case 'EEXIST':
      return new ToolError('conflict', 'Already exists', { cause: error })
    case 'ENOTDIR':
      return new ToolError('invalid_argument', 'A path component is not a directory', { cause: error })
    case 'EISDIR':
      return new ToolError('invalid_argument', 'Expected a file but found a directory', { cause: error })
    case 'ENOTEMPTY':
      return new ToolError('conflict', 'Directory is not empty', { cause: error })
    case 'EFBIG':
    case 'ENOSPC':
      return new ToolError('too_large', 'No space or file too large', { cause: error })
    case 'ECONNREFUSED':
    case 'ECONNRESET':
    case 'EHOSTUNREACH':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'ETIMEDOUT':
      return new ToolError('unavailable', 'The service could not be reached', { cause: error })
    default:
      return undefined
  }
}

/** True when an error is an abort (AbortSignal, DOMException AbortError, or our timeout). */
export function isAbortError(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error.name === 'AbortError' ||
      (error as { code?: unknown }).code === 'ABORT_ERR' ||
      error.name === 'TimeoutError')
  )
}
