/** JSON-RPC 2.0 framing checks shared by the stdio and HTTP front doors. */

export const PARSE_ERROR = -32700
export const INVALID_REQUEST = -32600
export const INVALID_PARAMS = -32602

/** A JSON-RPC error response. */
export interface JsonRpcErrorResponse {
  jsonrpc: '2.0'
  id: string | number | null
  error: { code: number; message: string; data?: unknown }
}

/** Builds a JSON-RPC error response. */
export function errorResponse(
  id: string | number | null,
  code: number,
  message: string,
): JsonRpcErrorResponse {
  return { jsonrpc: '2.0', id, error: { code, message } }
}

type Check = { ok: true } | { ok: false; id: string | number | null; code: number; message: string }

// JSON-RPC: ids SHOULD NOT have fractional parts; MCP's schema takes integers, and past 2^53 two ids
// compare equal. So an id is a string or a safe integer; anything else is an invalid request.
/** A JSON-RPC id as Keel accepts it: a string or a safe integer. */
export const validId = (id: unknown): id is string | number =>
  typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id))

/**
 * Checks the JSON-RPC envelope of one parsed message (a request, notification or response).
 * Method-specific parameter validation is left to the SDK (which answers -32602).
 */
export function checkEnvelope(message: unknown): Check {
  if (Array.isArray(message))
    return {
      ok: false,
      id: null,
      code: INVALID_REQUEST,
      message: 'Invalid Request: JSON-RPC batches are not supported',
    }
  if (message === null || typeof message !== 'object') {
    return {
      ok: false,
      id: null,
      code: INVALID_REQUEST,
      message: 'Invalid Request: expected a JSON-RPC object',
    }
  }
  const record = message as Record<string, unknown>
  const id = validId(record.id) ? record.id : null
  if (record.jsonrpc !== '2.0')
    return { ok: false, id, code: INVALID_REQUEST, message: 'Invalid Request: "jsonrpc" must be "2.0"' }
  if ('method' in record) {
    if (typeof record.method !== 'string' || record.method === '') {
      return {
        ok: false,
        id,
        code: INVALID_REQUEST,
        message: 'Invalid Request: "method" must be a non-empty string',
      }
    }
    if ('id' in record && !validId(record.id)) {
      return {
        ok: false,
        id: null,
        code: INVALID_REQUEST,
        message: 'Invalid Request: "id" must be a string or an integer (at most 2^53 - 1)',
      }
    }
    if ('params' in record && (record.params === null || typeof record.params !== 'object')) {
      return { ok: false, id, code: INVALID_REQUEST, message: 'Invalid Request: "params" must be an object' }
    }
    // JSON-RPC allows positional params; MCP names every parameter.
    if (Array.isArray(record.params)) {
      return {
        ok: false,
        id,
        code: INVALID_PARAMS,
        message: 'Invalid params: MCP takes params as an object, not an array',
      }
    }
    // The SDK drops a request it cannot read as one (a malformed `params._meta`, a stray top-level
    // member) without any answer, leaving the client waiting forever: answer it here instead.
    if ('id' in record) {
      const unread = unreadByTheSdk(record)
      if (unread === 'member')
        return {
          ok: false,
          id,
          code: INVALID_REQUEST,
          message: 'Invalid Request: unexpected members in the request',
        }
      if (unread === 'meta') {
        return {
          ok: false,
          id,
          code: INVALID_PARAMS,
          message: 'Invalid params: malformed "_meta" (a progressToken is a string or an integer)',
        }
      }
    }
    return { ok: true }
  }
  if (('result' in record || 'error' in record) && 'id' in record) return { ok: true }
  return {
    ok: false,
    id,
    code: INVALID_REQUEST,
    message: 'Invalid Request: not a request, notification or response',
  }
}

/** A JSON object (not null, not an array). */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** Every own member of `record` is one of `allowed` (a `__proto__` member from JSON is not). */
export function membersWithin(record: Record<string, unknown>, allowed: ReadonlySet<string>): boolean {
  for (const key in record) if (!allowed.has(key)) return false
  return true
}

const REQUEST_MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params'])
const RELATED_TASK = 'io.modelcontextprotocol/related-task'

/**
 * What keeps the SDK from reading a request as one (its `isJSONRPCRequest`), for a record whose
 * `jsonrpc`, `method`, `id` and `params` (an object when given) are already checked: a member
 * beside those four (the schema is strict), or a `params._meta` it refuses (an object whose
 * `progressToken` is a string or a safe integer and whose related-task entry has a string
 * `taskId`, when given; the `_meta` when both). The same verdicts as the SDK's zod schema
 * (test/jsonrpc.test.ts compares them), without building and compiling that schema on a start's
 * first message.
 */
function unreadByTheSdk(record: Record<string, unknown>): 'member' | 'meta' | undefined {
  if (!metaReadByTheSdk((record.params as Record<string, unknown> | undefined)?._meta)) return 'meta'
  return membersWithin(record, REQUEST_MEMBERS) ? undefined : 'member'
}

function metaReadByTheSdk(meta: unknown): boolean {
  if (meta === undefined) return true
  if (!isRecord(meta)) return false
  const token = meta.progressToken
  if (
    token !== undefined &&
    typeof token !== 'string' &&
    !(typeof token === 'number' && Number.isSafeInteger(token))
  )
    return false
  const task = meta[RELATED_TASK]
  return task === undefined || (isRecord(task) && typeof task.taskId === 'string')
}
