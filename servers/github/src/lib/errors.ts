import { AccountRoutingError } from './accounts.js'
import {
  GRAPHQL_WENT_WRONG,
  isReadEndpoint,
  isUnconfirmedWrite,
  MalformedResponseError,
  TokenHostError,
  UnexpectedShapeError,
} from './client.js'
import { sanitize } from './sanitize.js'

export type ErrorKind =
  | 'unauthenticated'
  | 'rate_limited'
  | 'permission_denied'
  | 'not_found'
  | 'conflict'
  | 'invalid_argument'
  | 'unavailable'

export interface ClassifiedError {
  kind: ErrorKind
  message: string
  hint?: string
  status?: number
  /** A write GitHub may have applied without confirming it (sent once, never again). */
  unconfirmed?: boolean
}

interface HttpLike {
  status: number
  message?: string
  response?: { headers?: Record<string, string | number | undefined>; data?: unknown }
}

function isHttpError(error: unknown): error is HttpLike {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { status?: unknown }).status === 'number' &&
    ((error as { name?: unknown }).name === 'HttpError' || 'response' in error)
  )
}

const short = (text: string, max = 300) => {
  const clean = sanitize(text).replace(/\s+/g, ' ').trim()
  return clean.length > max ? `${clean.slice(0, max)}…` : clean
}

/** GitHub's own message (not the URL Octokit appends), cleaned and capped. */
function githubMessage(error: HttpLike): string {
  const data = error.response?.data as { message?: unknown } | undefined
  if (typeof data?.message === 'string' && data.message) return short(data.message)
  return short(String(error.message ?? '').replace(/ - https?:\/\/\S+$/, ''))
}

/** GitHub's per-field validation errors (422). */
function fieldErrors(error: HttpLike): string[] {
  const errors = (error.response?.data as { errors?: unknown } | undefined)?.errors
  if (!Array.isArray(errors)) return []
  return errors.slice(0, 10).map((item) => {
    if (typeof item === 'string') return short(item, 200)
    const entry = item as { message?: string; resource?: string; field?: string; code?: string }
    if (entry.message) return short(entry.message, 200)
    return short(
      [entry.resource, entry.field].filter(Boolean).join('.') + (entry.code ? ` ${entry.code}` : ''),
      200,
    )
  })
}

const header = (error: HttpLike, name: string): string | undefined => {
  const value = error.response?.headers?.[name]
  return value === undefined ? undefined : String(value)
}

/** Turns an Octokit `RequestError` (or our own host guard) into what the model reads. */
export function classifyGitHubError(error: unknown): ClassifiedError | undefined {
  if (error instanceof TokenHostError) return { kind: 'permission_denied', message: error.message }
  if (error instanceof AccountRoutingError) return { kind: 'invalid_argument', message: error.message }
  if (isUnconfirmedWrite(error)) {
    const status = (error as { status?: unknown }).status
    return unconfirmedWrite(
      error instanceof MalformedResponseError
        ? 'its answer broke off'
        : `HTTP ${typeof status === 'number' ? status : '?'}`,
      typeof status === 'number' ? status : undefined,
    )
  }
  if (error instanceof MalformedResponseError)
    return {
      kind: 'unavailable',
      message: error.message,
      hint: 'GitHub sent a broken answer; try again later.',
    }
  const graphqlError = classifyGraphqlError(error)
  if (graphqlError) return graphqlError
  // Inputs are checked by their schemas before a call, so a TypeError in a tool is a field of
  // GitHub's answer that is missing or of another type than GitHub documents (`data.map is not a
  // function`, a property of null): the upstream's fault, retryable, not the server's `internal`.
  // The cause (with its stack) is still logged at debug level.
  if (error instanceof TypeError || error instanceof UnexpectedShapeError)
    return {
      kind: 'unavailable',
      message: 'GitHub sent an answer of an unexpected shape',
      hint: 'GitHub (or what answers at --api-url) sent JSON this tool cannot read; try again later.',
    }
  if (!isHttpError(error)) return undefined
  const status = error.status
  const message = githubMessage(error)
  if (status === 401) {
    // Never echo the token, not even a prefix.
    return {
      kind: 'unauthenticated',
      status,
      message: 'GitHub rejected the credentials (missing, invalid, expired or revoked token)',
      hint: 'Use a valid GitHub token (GITHUB_TOKEN, or the bearer of this request with --token-from-request).',
    }
  }
  if (status === 403 || status === 429) {
    const reset = Number(header(error, 'x-ratelimit-reset'))
    if (header(error, 'x-ratelimit-remaining') === '0') {
      const at = Number.isFinite(reset) && reset > 0 ? new Date(reset * 1000).toISOString() : undefined
      return {
        kind: 'rate_limited',
        status,
        message: `GitHub API rate limit exhausted${at ? `; it resets at ${at}` : ''}`,
        hint: 'Wait until the reset time; authenticated tokens get 5,000 requests an hour.',
      }
    }
    const retryAfter = header(error, 'retry-after')
    if (/secondary rate|abuse/i.test(message) || retryAfter !== undefined || status === 429) {
      return {
        kind: 'rate_limited',
        status,
        message: `GitHub secondary rate limit${retryAfter ? `; retry after ${retryAfter} s` : ''}`,
        hint: 'Slow down: fewer concurrent or write requests.',
      }
    }
    const accepted = header(error, 'x-accepted-oauth-scopes')?.trim()
    const granted = header(error, 'x-oauth-scopes')?.trim()
    const permissions = header(error, 'x-accepted-github-permissions')?.trim()
    let hint = 'The token lacks access to this resource or action.'
    if (accepted) {
      hint = `This call needs the token scope(s): ${accepted}${granted !== undefined ? ` (the token has: ${granted || 'none'})` : ''}.`
    } else if (permissions) {
      hint = `This call needs the fine-grained permission(s): ${permissions}.`
    }
    return { kind: 'permission_denied', status, message: `Forbidden: ${message}`, hint }
  }
  if (status === 404) {
    return {
      kind: 'not_found',
      status,
      message: 'Not found',
      hint: 'Check owner, repository, number, path and ref; a private repository also answers 404 when the token cannot see it.',
    }
  }
  if (status === 409) return { kind: 'conflict', status, message: `Conflict: ${message}` }
  if (status === 422 || (status >= 400 && status < 500)) {
    const fields = fieldErrors(error)
    return {
      kind: 'invalid_argument',
      status,
      message: fields.length
        ? `${message}: ${fields.join('; ')}`
        : message || `GitHub refused the request (${status})`,
    }
  }
  return {
    kind: 'unavailable',
    status,
    message:
      status >= 500
        ? `GitHub is unavailable (HTTP ${status}) after retries`
        : `GitHub request failed (HTTP ${status})`,
    hint: 'Try again later; see https://www.githubstatus.com for incidents.',
  }
}

/** A write sent once that GitHub may have applied without confirming it. */
function unconfirmedWrite(what: string, status?: number): ClassifiedError {
  return {
    kind: 'unavailable',
    ...(status === undefined ? {} : { status }),
    unconfirmed: true,
    message: `GitHub did not confirm the write (${what}); it may have been applied`,
    hint:
      'This server sent it once and did not repeat it: read what it changes (the issue, pull ' +
      'request, comments, branch, file or project) to see whether it is there before calling again.',
  }
}

/**
 * GraphQL answers HTTP 200 with an `errors` list (`@octokit/graphql`'s GraphqlResponseError):
 * mapped by the first error's type the way REST maps its status.
 */
function classifyGraphqlError(error: unknown): ClassifiedError | undefined {
  if (!(error instanceof Error) || error.name !== 'GraphqlResponseError') return undefined
  const errors = (error as { errors?: unknown }).errors
  const list = Array.isArray(errors) ? (errors as Array<{ type?: unknown; message?: unknown }>) : []
  const first = list[0]
  const type = typeof first?.type === 'string' ? first.type : ''
  const message =
    short(
      list
        .map((item) => String(item.message ?? ''))
        .filter(Boolean)
        .slice(0, 3)
        .join('; '),
    ) || 'GitHub refused the GraphQL request'
  if (GRAPHQL_WENT_WRONG.test(message)) {
    // GitHub's transient failure: a query was already sent again (client.ts); a mutation never is.
    const request = (error as { request?: { query?: unknown } }).request
    if (!isReadEndpoint({ method: 'POST', url: '/graphql', query: request?.query }))
      return unconfirmedWrite('GraphQL: something went wrong')
    return {
      kind: 'unavailable',
      message: `GitHub could not run the query: ${message}`,
      hint: 'Try again later; see https://www.githubstatus.com for incidents.',
    }
  }
  if (type === 'NOT_FOUND') {
    return {
      kind: 'not_found',
      message: `Not found: ${message}`,
      hint: 'Check owner, repository, number and ids; a private resource is also "not found" when the token cannot see it.',
    }
  }
  if (type === 'FORBIDDEN' || type === 'INSUFFICIENT_SCOPES') {
    return {
      kind: 'permission_denied',
      message: `Forbidden: ${message}`,
      hint: 'The token lacks access (Projects need the project or read:project scope; discussions need repository read access).',
    }
  }
  if (type === 'RATE_LIMITED') {
    return {
      kind: 'rate_limited',
      message: 'GitHub GraphQL rate limit exhausted',
      hint: 'Wait for the reset (an hour at most).',
    }
  }
  return { kind: 'invalid_argument', message }
}
