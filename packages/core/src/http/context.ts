import type { IncomingMessage } from 'node:http'
import type { AuthInfo } from '@modelcontextprotocol/server'
import type { AuthGate } from '../auth/gate.js'
import type { Runtime } from '../instance.js'
import type { Cluster } from '../scale/cluster.js'
import type { HttpFastCalls } from './fast-call.js'
import type { SessionTable } from './sessions.js'

// What the pieces of the HTTP endpoint share: the front door (front-door.ts), session routing
// (routing.ts, sessions.ts), the /mcp streams (streams.ts) and shutdown (shutdown.ts).

/** Limits of the HTTP front door. */
export interface HttpLimits {
  /** Sessions alive at once; past it the least recently used idle session is evicted first. */
  maxSessions: number
  /** Sessions one client (one bearer token, else one address) keeps; its oldest idle one gives way. */
  maxSessionsPerClient: number
  /** A session unused this long is closed. */
  sessionIdleMs: number
  /** Time a client gets to send its request headers. */
  headersTimeoutMs: number
  /** Time a client gets to send a whole request (not the response: SSE streams are not cut). */
  requestTimeoutMs: number
  /** A too-large body up to this size is read and discarded so the client can read the 413; past it the connection is closed. */
  discardBodyBytes: number
  /** OAuth: least time between two refetches of the issuer's keys when a token names an unknown key. */
  jwksCooldownMs: number
}

export const DEFAULT_LIMITS: HttpLimits = {
  maxSessions: 1024,
  maxSessionsPerClient: 32,
  sessionIdleMs: 10 * 60 * 1000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  discardBodyBytes: 64 * 1024 * 1024,
  jwksCooldownMs: 30_000,
}

/** One HTTP endpoint's parts, built once by `serveHttp` and read by every request. */
export interface HttpContext {
  runtime: Runtime<unknown, unknown>
  limits: HttpLimits
  /** The 2025-era sessions held on this replica. */
  sessions: SessionTable
  /** With `--redis-url`: sessions, events and state handles shared by the replicas. */
  cluster: Cluster | undefined
  /** With `--auth-issuer`: the OAuth 2.1 resource server. */
  gate: AuthGate | undefined
  /** Transport errors: a debug line, never a crash. */
  onerror: (error: Error) => void
  /** 2026-07-28 tool calls served without the SDK's per-request work (off with `KEEL_FAST_PATH=0`). */
  fastCalls?: HttpFastCalls
}

/**
 * The credential the front door verified for this request (OAuth), or the bearer it handed on
 * (`--auth-token`): the SDK reads it from `req.auth` as the handler's `authInfo`.
 */
export function verifiedAuth(req: IncomingMessage): AuthInfo | undefined {
  return (req as IncomingMessage & { auth?: AuthInfo }).auth
}
