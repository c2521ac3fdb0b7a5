import type { IncomingMessage, ServerResponse } from 'node:http'
import { checkEnvelope, errorResponse, INVALID_REQUEST, PARSE_ERROR } from '../jsonrpc.js'
import { sendJson } from './respond.js'

// A POST body, in order: size cap (413), JSON (400, -32700), JSON-RPC envelope (400, -32600).

class BodyTooLarge extends Error {}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > limit) throw new BodyTooLarge()
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > limit) throw new BodyTooLarge()
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks)
}

/**
 * Reads and drops what is left of a too-large body, up to `bound` bytes, so that the client (a
 * `fetch` that writes the whole body before it reads) gets the 413 instead of a broken pipe. Past
 * the bound, or when the declared length is past it, the connection is closed instead.
 */
async function discardBody(req: IncomingMessage, bound: number): Promise<boolean> {
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > bound) return false
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > bound) return false
  }
  return true
}

/**
 * The checked JSON-RPC message (or batch) of a POST, or `undefined` when the body was refused and
 * the answer is written.
 */
export async function readMessage(
  req: IncomingMessage,
  res: ServerResponse,
  limits: { maxBodyBytes: number; discardBodyBytes: number },
): Promise<{ message: unknown } | undefined> {
  let body: Buffer
  try {
    body = await readBody(req, limits.maxBodyBytes)
  } catch (error) {
    if (!(error instanceof BodyTooLarge)) throw error
    const drained = await discardBody(req, limits.discardBodyBytes).catch(() => false)
    sendJson(
      res,
      413,
      errorResponse(null, INVALID_REQUEST, `Request body larger than ${limits.maxBodyBytes} bytes`),
      { connection: 'close' },
    )
    if (!drained) req.socket.destroySoon()
    return undefined
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(body.toString('utf8'))
  } catch {
    sendJson(res, 400, errorResponse(null, PARSE_ERROR, 'Parse error: the body is not valid JSON'))
    return undefined
  }
  const check = checkEnvelope(parsed)
  if (!check.ok) {
    sendJson(res, 400, errorResponse(check.id, check.code, check.message))
    return undefined
  }
  return { message: parsed }
}
