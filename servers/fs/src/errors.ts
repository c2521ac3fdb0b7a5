import {
  type ErrorMapper,
  errorReference,
  formatToolError,
  type Logger,
  ToolError,
  type ToolErrorKind,
} from '@keel-mcp/core'
import { FsError, type FsErrorCode } from './lib/index.js'

const kinds: Record<FsErrorCode, ToolErrorKind> = {
  permission_denied: 'permission_denied',
  not_found: 'not_found',
  invalid_argument: 'invalid_argument',
  conflict: 'conflict',
  too_large: 'too_large',
  not_a_file: 'invalid_argument',
  not_a_directory: 'invalid_argument',
  binary: 'invalid_argument',
  unavailable: 'unavailable',
  internal: 'internal',
}

const defaultHints: Partial<Record<FsErrorCode, string>> = {
  binary: 'Use read_media_file for images and audio.',
  not_a_directory: 'Use read_text_file or get_file_info for files.',
  not_a_file: 'Use list_directory or directory_tree for directories.',
  too_large: 'Read a line range with read_text_file (start_line/end_line, head or tail).',
}

/**
 * The library's errors as tool errors. Messages name paths inside the allowed directories and the allowed
 * directories themselves, never anything outside; the errno cause stays in the log.
 */
export const mapError: ErrorMapper = (error) => {
  if (!(error instanceof FsError)) return undefined
  return new ToolError(kinds[error.code], error.message, {
    cause: error.cause ?? error,
    hint: error.hint ?? defaultHints[error.code],
    ...(error.details ? { details: error.details } : {}),
  })
}

/** One line (plus hint) saying why one item of a batch failed, for results that carry per-item errors. */
export function describeError(error: unknown, logger: Logger): string {
  const mapped = ToolError.is(error) ? error : mapError(error)
  if (mapped) return formatToolError(mapped)
  const ref = errorReference()
  logger.error(`unexpected failure (ref ${ref})`, { ref, error })
  return `internal: unexpected failure (ref ${ref}); the details are in the server log`
}
