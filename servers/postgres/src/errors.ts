import { ToolError } from '@keel-mcp/core'
import { classifyPgError, ExtensionMissingError, pointAt } from './lib/index.js'

/**
 * Maps anything the lib throws to the ToolError the model reads: SQLSTATE-based kinds, a hint
 * that names the next tool, and for errors with a position a psql-style excerpt with a caret
 * (when the SQL is at hand). Authentication and connection failures never echo the connection.
 * Returns undefined for errors nobody recognises: core turns those into `internal` with a log ref.
 */
export function toToolError(error: unknown, sql?: string): ToolError | undefined {
  if (ToolError.is(error)) return error
  if (error instanceof ExtensionMissingError) {
    return new ToolError('unavailable', error.message, {
      hint: error.hint,
      cause: error,
      details: { reason: 'extension_missing', extension: error.extension },
    })
  }
  const classified = classifyPgError(error)
  if (classified.reason === 'internal' && classified.sqlstate === undefined) return undefined
  let message = classified.message
  if (classified.position !== undefined) {
    const excerpt = sql === undefined ? undefined : pointAt(sql, classified.position)
    message =
      excerpt === undefined ? `${message} (position ${classified.position})` : `${message}\n${excerpt}`
  }
  return new ToolError(classified.kind, message, {
    ...(classified.hint === undefined ? {} : { hint: classified.hint }),
    cause: error,
    details: {
      reason: classified.reason,
      ...(classified.sqlstate === undefined ? {} : { sqlstate: classified.sqlstate }),
      ...(classified.position === undefined ? {} : { position: classified.position }),
    },
  })
}

/** Runs `work`, turning lib errors into ToolErrors that can point into `sql`. */
export async function withSql<T>(sql: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw toToolError(error, sql) ?? error
  }
}
