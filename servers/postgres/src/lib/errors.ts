/**
 * Domain errors and the pure mapper from PostgreSQL / node-postgres / Node errors to error kinds.
 * Kinds match @keel-mcp/core's ToolError kinds, plus `cancelled` (the caller aborted); the tool layer
 * turns a {@link ClassifiedError} into a ToolError. Messages are written for the model: they never
 * contain connection strings, user names of the connection, passwords or stack traces.
 */
import type { SqlRefusalCode } from './sql-guard.js'

export type ErrorKind =
  | 'invalid_argument'
  | 'not_found'
  | 'permission_denied'
  | 'unauthenticated'
  | 'conflict'
  | 'timeout'
  | 'cancelled'
  | 'unavailable'
  | 'internal'

/** A finer reason than the kind, for logs, tests and hints. */
export type ErrorReason =
  | SqlRefusalCode
  | 'undefined_table'
  | 'undefined_column'
  | 'undefined_function'
  | 'undefined_object'
  | 'undefined_parameter'
  | 'read_only_transaction'
  | 'insufficient_privilege'
  | 'statement_timeout'
  | 'lock_timeout'
  | 'query_cancelled'
  | 'result_too_large'
  | 'authentication_failed'
  | 'connection_failed'
  | 'admin_shutdown'
  | 'insufficient_resources'
  | 'data_exception'
  | 'integrity_violation'
  | 'invalid_sql'
  | 'configuration'
  | 'internal'

export interface ClassifiedError {
  readonly kind: ErrorKind
  readonly reason: ErrorReason
  /** Safe to show to the model. */
  readonly message: string
  /** What the model can do next (a tool to call, a change to make). */
  readonly hint?: string
  /** 1-based character position in the SQL, when known. */
  readonly position?: number
  /** SQLSTATE, when the error came from PostgreSQL. */
  readonly sqlstate?: string
}

/** The parser gate refused a statement; nothing was sent to the database. */
export class SqlRefusedError extends Error {
  override readonly name = 'SqlRefusedError'
  readonly code: SqlRefusalCode
  readonly position: number | undefined
  constructor(code: SqlRefusalCode, message: string, position?: number) {
    super(message)
    this.code = code
    this.position = position
  }
}

/** The query ran longer than its time limit and was cancelled on the server. */
export class QueryTimeoutError extends Error {
  override readonly name = 'QueryTimeoutError'
  readonly timeoutMs: number
  constructor(timeoutMs: number, options?: ErrorOptions) {
    super(`The query was cancelled after exceeding its ${timeoutMs} ms time limit.`, options)
    this.timeoutMs = timeoutMs
  }
}

/** The caller's AbortSignal fired; the query was cancelled on the server. */
export class QueryCancelledError extends Error {
  override readonly name = 'QueryCancelledError'
  constructor(options?: ErrorOptions) {
    super('The query was cancelled by the caller.', options)
  }
}

/** The result grew past the byte budget of one call; the statement was cancelled on the server. */
export class ResultTooLargeError extends Error {
  override readonly name = 'ResultTooLargeError'
  readonly maxBytes: number
  constructor(maxBytes: number, options?: ErrorOptions) {
    super(
      `The result was stopped after ${Math.round(maxBytes / 1024 / 1024)} MiB: one call may not receive more, whatever max_rows says.`,
      options,
    )
    this.maxBytes = maxBytes
  }
}

/** A configuration value is unusable (for example a role name that is not an identifier). */
export class DatabaseConfigError extends Error {
  override readonly name = 'DatabaseConfigError'
}

interface PgLikeError {
  code?: unknown
  message?: unknown
  position?: unknown
  hint?: unknown
  routine?: unknown
}

const connectionErrnos = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ECONNABORTED',
])

const connectionMessages = [
  /Connection terminated/i,
  /Client has encountered a connection error/i,
  /not queryable/i,
  /timeout exceeded when trying to connect/i,
  /The server does not support SSL connections/i,
  /self[- ]signed certificate|unable to verify the first certificate|certificate/i,
]

const messageOf = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === 'string' ? error : String(error)

function toPosition(value: unknown): number | undefined {
  const number = typeof value === 'string' ? Number.parseInt(value, 10) : value
  return typeof number === 'number' && Number.isInteger(number) && number > 0 ? number : undefined
}

function classified(
  kind: ErrorKind,
  reason: ErrorReason,
  message: string,
  extra: { hint?: string | undefined; position?: number | undefined; sqlstate?: string | undefined } = {},
): ClassifiedError {
  const result: { -readonly [K in keyof ClassifiedError]: ClassifiedError[K] } = { kind, reason, message }
  if (extra.hint !== undefined) result.hint = extra.hint
  if (extra.position !== undefined) result.position = extra.position
  if (extra.sqlstate !== undefined) result.sqlstate = extra.sqlstate
  return result
}

/** True for errors that mean the connection (not the statement) failed: the call may be retried. */
export function isConnectionError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const code = (error as PgLikeError).code
  if (typeof code === 'string') {
    if (connectionErrnos.has(code)) return true
    if (
      (code.startsWith('08') && code !== '08P01') ||
      code === '57P01' ||
      code === '57P02' ||
      code === '57P03'
    )
      return true
  }
  const message = messageOf(error)
  return connectionMessages.some((pattern) => pattern.test(message))
}

/**
 * Maps any error thrown by the postgres lib (guard refusals, timeouts, pg DatabaseErrors, socket
 * errors) to a kind, a reason and a model-safe message.
 */
export function classifyPgError(error: unknown): ClassifiedError {
  if (error instanceof SqlRefusedError) {
    const kind: ErrorKind = error.code === 'not_read_only' ? 'permission_denied' : 'invalid_argument'
    return classified(kind, error.code, error.message, {
      position: error.position,
      hint:
        error.code === 'not_read_only'
          ? 'This server only runs read-only queries.'
          : error.code === 'multiple_statements'
            ? 'Send one statement per call.'
            : undefined,
    })
  }
  if (error instanceof QueryTimeoutError) {
    return classified('timeout', 'statement_timeout', error.message, {
      hint: 'Narrow the query (filters, LIMIT) or check its plan with explain.',
    })
  }
  if (error instanceof QueryCancelledError) return classified('cancelled', 'query_cancelled', error.message)
  if (error instanceof ResultTooLargeError) {
    return classified('invalid_argument', 'result_too_large', error.message, {
      hint: 'Narrow the query: select fewer or shorter columns (left(column, 200), length(column)), filter with WHERE, add LIMIT, or aggregate (count, sum, group by).',
    })
  }
  if (error instanceof DatabaseConfigError) return classified('internal', 'configuration', error.message)

  const pgError = (typeof error === 'object' && error !== null ? error : {}) as PgLikeError
  const code = typeof pgError.code === 'string' ? pgError.code : undefined
  const rawMessage = messageOf(error)
  const position = toPosition(pgError.position)
  const pgHint = typeof pgError.hint === 'string' && pgError.hint !== '' ? pgError.hint : undefined
  const sqlstate = code !== undefined && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
  const fromServer = (kind: ErrorKind, reason: ErrorReason, hint?: string) =>
    classified(kind, reason, rawMessage, { hint: hint ?? pgHint, position, sqlstate })

  // Authentication: PostgreSQL's message names the user; ours names nothing from the connection.
  if (code === '28P01' || code === '28000') {
    return classified(
      'unauthenticated',
      'authentication_failed',
      'PostgreSQL rejected the credentials of the configured connection.',
      { hint: 'Check the user, password and pg_hba.conf rules for the connection.', sqlstate },
    )
  }
  if (code !== undefined && sqlstate === undefined && connectionErrnos.has(code)) {
    const reasons: Record<string, string> = {
      ECONNREFUSED: 'the connection was refused',
      ENOTFOUND: 'the host name could not be resolved',
      EAI_AGAIN: 'the host name could not be resolved',
      ETIMEDOUT: 'the connection timed out',
    }
    return classified(
      'unavailable',
      'connection_failed',
      `Cannot reach PostgreSQL: ${reasons[code] ?? 'the connection failed'}.`,
      { hint: 'Check that the database is running and reachable; then retry.' },
    )
  }
  if (sqlstate === '57P01' || sqlstate === '57P02' || sqlstate === '57P03') {
    return classified(
      'unavailable',
      'admin_shutdown',
      'PostgreSQL is shutting down, restarting or not yet accepting connections.',
      { hint: 'Retry in a moment.', sqlstate },
    )
  }
  if (sqlstate === '08P01') {
    // A protocol violation answered with an ERROR (the session lives on), most often a call
    // that supplied fewer parameters than the statement has $n placeholders.
    return /bind message supplies/i.test(rawMessage)
      ? fromServer('invalid_argument', 'undefined_parameter', 'Pass a value for every $n placeholder.')
      : fromServer('internal', 'internal')
  }
  if (sqlstate?.startsWith('08')) {
    return classified('unavailable', 'connection_failed', 'The connection to PostgreSQL failed.', {
      hint: 'Retry in a moment.',
      sqlstate,
    })
  }
  if (sqlstate === undefined && isConnectionError(error)) {
    return classified('unavailable', 'connection_failed', 'The connection to PostgreSQL failed.', {
      hint: 'Retry in a moment.',
    })
  }
  if (sqlstate === undefined) {
    return classified('internal', 'internal', 'An internal error occurred while talking to PostgreSQL.')
  }

  switch (sqlstate) {
    case '42601':
      return fromServer('invalid_argument', 'syntax_error')
    case '42P01':
      return fromServer('not_found', 'undefined_table', 'Call list_tables to see the tables that exist.')
    case '42703':
      return fromServer(
        'not_found',
        'undefined_column',
        'Call describe_table to see the columns of the table.',
      )
    case '42883':
      return fromServer('not_found', 'undefined_function')
    case '42704':
      return fromServer('not_found', 'undefined_object')
    case '42P02':
      return fromServer('invalid_argument', 'undefined_parameter', 'Pass a value for every $n placeholder.')
    case '25006':
      return classified(
        'permission_denied',
        'read_only_transaction',
        `${rawMessage} (this server only runs read-only queries)`,
        { sqlstate },
      )
    case '42501':
      return fromServer('permission_denied', 'insufficient_privilege')
    case '57014':
      return /statement timeout/i.test(rawMessage)
        ? fromServer(
            'timeout',
            'statement_timeout',
            'Narrow the query (filters, LIMIT) or check its plan with explain.',
          )
        : fromServer('cancelled', 'query_cancelled')
    case '55P03':
      return fromServer(
        'timeout',
        'lock_timeout',
        'Another transaction holds a lock on the data; retry later.',
      )
    case '25P03':
      return fromServer('timeout', 'statement_timeout')
  }
  const sqlClass = sqlstate.slice(0, 2)
  if (sqlClass === '53' || sqlClass === '54') return fromServer('unavailable', 'insufficient_resources')
  if (sqlClass === '22') return fromServer('invalid_argument', 'data_exception')
  if (sqlClass === '23') return fromServer('conflict', 'integrity_violation')
  // 0A: feature not supported (FOR UPDATE with GROUP BY, …): the statement needs rewriting.
  if (sqlClass === '42' || sqlClass === '0A') return fromServer('invalid_argument', 'invalid_sql')
  return fromServer('internal', 'internal')
}

/**
 * Removes passwords from connection strings and any text containing them: the password part of
 * `scheme://user:password@host` URLs and `password=…` / `sslpassword=…` key-value pairs (libpq
 * keyword/value strings and URL query parameters, quoted or not).
 */
export function redactConnectionString(text: string): string {
  return (
    text
      // Greedy up to the last '@' of the authority, so an unencoded '@' in a password is covered too.
      .replace(/([a-z][a-z0-9+.-]*:\/\/[^\s:/@]*):[^\s/]*@/gi, '$1:***@')
      .replace(/\b(\w*password)(\s*=\s*)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&;]+)/gi, '$1$2***')
  )
}
