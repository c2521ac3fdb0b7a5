import type { ServerResponse } from 'node:http'
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server'
import type { GateAnswer } from '../auth/gate.js'
import { errorResponse } from '../jsonrpc.js'

// The answers the HTTP endpoint writes itself, before or instead of the SDK's transports.

/** Writes a JSON answer, unless an answer is already on its way. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return
  const payload = JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    ...headers,
  })
  res.end(payload)
}

/** Writes an answer the OAuth gate prepared, as it is. */
export function sendAnswer(res: ServerResponse, answer: GateAnswer): void {
  if (res.headersSent) return
  res.writeHead(answer.status, { ...answer.headers, 'content-length': Buffer.byteLength(answer.body) })
  res.end(answer.body)
}

/** 404 for a session id this server does not know (or that is not the caller's): start again. */
export function sendSessionNotFound(res: ServerResponse): void {
  sendJson(res, 404, errorResponse(null, -32001, 'Session not found: start a new session with initialize'))
}

/** 503 when no idle session can give way to a new one. */
export function sendTooManySessions(res: ServerResponse, id: string | number | null = null): void {
  sendJson(res, 503, errorResponse(id, -32000, 'Too many sessions in use; try again later'), {
    'retry-after': '5',
  })
}

/** The head of an SSE answer, as the SDK's transports write it. */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
}

/** The 2025-era revisions: what the SDK's 2025 transports accept in `MCP-Protocol-Version`. */
export const LEGACY_REVISIONS: ReadonlySet<string> = new Set<string>(SUPPORTED_PROTOCOL_VERSIONS)

/** Whether an `Accept` header takes both JSON and SSE, as the SDK's 2025 transports require. */
export function acceptsJsonAndEventStream(accept: string | undefined): boolean {
  return (
    typeof accept === 'string' && accept.includes('application/json') && accept.includes('text/event-stream')
  )
}
