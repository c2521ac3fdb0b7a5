import type { IncomingMessage, ServerResponse } from 'node:http'
import { toWebRequest } from '@modelcontextprotocol/node'
import { isLegacyRequest } from '@modelcontextprotocol/server'
import { stateRoute } from '../handles.js'
import { type HttpContext, verifiedAuth } from './context.js'
import { clientOf } from './front-door.js'
import { sendSessionNotFound, sendTooManySessions } from './respond.js'
import type { Session } from './sessions.js'

// Which session, and which replica, serves a request: the session a `Mcp-Session-Id` names
// (restored from Redis when another replica opened it; found only by the client that opened it),
// and with replicas, the replica that holds the state a call needs.

/**
 * The session `sessionId` names, or none when there is no id. `undefined` when the request was
 * answered instead: no such session for this caller (404), or no room to restore it (503).
 */
export async function findSession(
  context: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  sessionId: string | undefined,
): Promise<{ session: Session | undefined } | undefined> {
  const { sessions, cluster, gate } = context
  let session = sessionId ? sessions.get(sessionId) : undefined
  if (cluster && sessionId && !session) {
    // A session another replica opened: restored here from Redis (if it still exists).
    if (!sessions.makeRoom(clientOf(req, gate))) {
      sendTooManySessions(res)
      return undefined
    }
    await cluster.restore(
      sessions.hooksFor(clientOf(req, gate)),
      sessionId,
      gate ? clientOf(req, gate) : undefined,
    )
    session = sessions.get(sessionId)
  }
  // A session belongs to the subject that opened it: another token's holder does not find it.
  if (sessionId && (!session || (gate && session.client !== clientOf(req, gate)))) {
    sendSessionNotFound(res)
    return undefined
  }
  return { session }
}

/**
 * A lone 2026-07-28 call carrying another replica's state handle is served by that replica: true
 * when it was relayed there (and answered).
 */
export async function relayedLoneCall(
  context: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  message: unknown,
): Promise<boolean> {
  const { cluster, runtime } = context
  if (!cluster) return false
  const route = stateRoute(runtime, message)
  return (
    typeof route === 'object' &&
    !(await isLegacyRequest(await toWebRequest(req, message), message)) &&
    (await cluster.handles.relay(route.owner, req, res, message, verifiedAuth(req)))
  )
}

/**
 * Routes a POST of a session shared through Redis: what other replicas wait for goes to them, and
 * a stateful call to the replica holding its state. The message left to serve on this replica's
 * session, or `undefined` when the request was answered (or relayed).
 */
export async function routeSessionCall(
  context: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  session: Session,
  sessionId: string,
  message: unknown,
): Promise<{ message: unknown } | undefined> {
  const { cluster, gate, runtime, sessions } = context
  if (!cluster) return { message }
  const routed = await cluster.route(sessionId, message)
  if (!routed.exists) {
    sessions.close(sessionId, session)
    sendSessionNotFound(res)
    return undefined
  }
  if (routed.rest.length === 0) {
    res.writeHead(202).end()
    return undefined
  }
  const rest = Array.isArray(message) ? routed.rest : routed.rest[0]
  // A stateful call is served where its state lives: the replica its handle names, or the one
  // holding this session's own state.
  const route = stateRoute(runtime, rest)
  const owner = route === 'connection' ? await cluster.stateOwner(sessionId) : route?.owner
  const principal = gate ? { principal: clientOf(req, gate) } : {}
  if (
    owner &&
    owner !== cluster.replica &&
    (await cluster.handles.relay(owner, req, res, rest, verifiedAuth(req), {
      id: sessionId,
      ...principal,
    }))
  )
    return undefined
  return { message: rest }
}
