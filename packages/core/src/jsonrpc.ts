/** JSON-RPC 2.0 framing checks shared by the stdio and HTTP front doors. */

export const PARSE_ERROR = -32700
export const INVALID_REQUEST = -32600

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

type Check = { ok: true } | { ok: false; id: string | number | null; message: string }

const validId = (id: unknown): id is string | number =>
  typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))

/**
 * Checks the JSON-RPC envelope of one parsed message (a request, notification or response).
 * Method-specific parameter validation is left to the SDK (which answers -32602).
 */
export function checkEnvelope(message: unknown): Check {
  if (Array.isArray(message))
    return { ok: false, id: null, message: 'Invalid Request: JSON-RPC batches are not supported' }
  if (message === null || typeof message !== 'object') {
    return { ok: false, id: null, message: 'Invalid Request: expected a JSON-RPC object' }
  }
  const record = message as Record<string, unknown>
  const id = validId(record.id) ? record.id : null
  if (record.jsonrpc !== '2.0') return { ok: false, id, message: 'Invalid Request: "jsonrpc" must be "2.0"' }
  if ('method' in record) {
    if (typeof record.method !== 'string' || record.method === '') {
      return { ok: false, id, message: 'Invalid Request: "method" must be a non-empty string' }
    }
    if ('id' in record && !validId(record.id)) {
      return { ok: false, id: null, message: 'Invalid Request: "id" must be a string or a number' }
    }
    if ('params' in record && (record.params === null || typeof record.params !== 'object')) {
      return { ok: false, id, message: 'Invalid Request: "params" must be an object' }
    }
    return { ok: true }
  }
  if (('result' in record || 'error' in record) && 'id' in record) return { ok: true }
  return { ok: false, id, message: 'Invalid Request: not a request, notification or response' }
}
