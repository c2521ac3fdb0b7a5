import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { AuthGate } from './auth/gate.js'
import type { Runtime } from './build-server.js'
import { useStateSecret } from './client-access.js'
import { DEFAULT_LIMITS, type HttpContext, type HttpLimits } from './http/context.js'
import { HttpFastCalls } from './http/fast-call.js'
import { endpointUrl, frontDoor, listen } from './http/front-door.js'
import { SessionTable } from './http/sessions.js'
import { closeEndpoint } from './http/shutdown.js'
import { loneRequests, mcpHandler } from './http/streams.js'
import { serverReadiness } from './readiness.js'
import type { Cluster } from './scale/cluster.js'

// The Streamable HTTP endpoint, composed of its rooms (src/http/): the front door (front-door.ts),
// session routing (routing.ts, sessions.ts), the /mcp streams (streams.ts) and shutdown
// (shutdown.ts). Loaded only when a server serves HTTP (run.ts imports it on demand).

export type { HttpLimits } from './http/context.js'

/** A running HTTP endpoint. */
export interface HttpEndpoint {
  /** `http://host:port/mcp` */
  url: string
  port: number
  /** Stops accepting, closes sessions and in-flight requests. */
  close(): Promise<void>
  /** How many tool calls core's HTTP fast path served (0 when it is off). */
  readonly fastPathServed: number
}

/**
 * Serves MCP over Streamable HTTP at `/mcp` and a health check at `/healthz`.
 *
 * Front door, in order: Host check (DNS rebinding), Origin check, bearer token (constant-time),
 * method, body size, JSON and JSON-RPC framing. Behind it, 2025-era clients get sessions (SSE
 * streams, server-to-client requests, resumable with `Last-Event-ID`) and 2026-era requests
 * are served per request; `--stateless` serves both eras per request with no sessions.
 */
export async function serveHttp<D, C>(
  runtime: Runtime<D, C>,
  limits: Partial<HttpLimits> = {},
  options: { fastPath?: boolean } = {},
): Promise<HttpEndpoint> {
  const shared = runtime as unknown as Runtime<unknown, unknown>
  const { config, logger, spec } = shared
  const settled: HttpLimits = { ...DEFAULT_LIMITS, sessionIdleMs: config.sessionIdleMs, ...limits }
  // 2026-07-28 requestState is signed with the shared secret, so a retry may reach any replica.
  if (config.stateSecret) useStateSecret(config.stateSecret)
  const onerror = (error: Error) => logger.debug('http transport error', { error: error.message })
  const sessions = new SessionTable(settled, logger)
  // With --redis-url, sessions live in Redis and any replica serves any request (scale/cluster.ts).
  const cluster: Cluster | undefined =
    config.redisUrl && !config.stateless
      ? await (await import('./scale/cluster.js')).Cluster.start(shared, sessions.hooksFor('cluster'))
      : undefined
  const lone = loneRequests(shared, cluster, onerror)
  let httpServer: Server | undefined
  // OAuth 2.1 resource server: loaded only when an issuer is configured.
  const issuer = config.auth.issuer
  const gate: AuthGate | undefined = issuer
    ? (await import('./auth/gate.js')).createAuthGate({
        auth: { ...config.auth, issuer },
        defaultResource: () => endpointUrl(httpServer as Server, config.host),
        tools: shared.tools,
        logger,
        jwksCooldownMs: settled.jwksCooldownMs,
      })
    : undefined
  const context: HttpContext = { runtime: shared, limits: settled, sessions, cluster, gate, onerror }
  if (options.fastPath !== false) context.fastCalls = new HttpFastCalls(shared)
  // /readyz: the server's own upstream (spec.ready) and, with replicas, Redis.
  const readiness = {
    ...serverReadiness(spec, shared.deps),
    ...(cluster ? { redis: () => cluster.ping() } : {}),
  }
  shared.operations?.observer.gauge(
    'mcp_sessions',
    'Open 2025-era HTTP sessions on this replica.',
    () => sessions.size,
  )
  sessions.startSweep()

  // Slow clients: headers and request bodies must arrive within their timeouts (checked every
  // second), so trickling sockets are closed in seconds; responses (SSE streams) are not limited.
  const server = createServer(
    { connectionsCheckingInterval: 1000 },
    frontDoor(context, readiness, mcpHandler(context, lone)),
  )
  httpServer = server
  server.headersTimeout = settled.headersTimeoutMs
  server.requestTimeout = settled.requestTimeoutMs
  await listen(server, config).catch(async (error: unknown) => {
    sessions.stopSweep()
    await cluster?.close()
    throw error
  })
  return {
    url: endpointUrl(server, config.host),
    port: (server.address() as AddressInfo).port,
    close: () => closeEndpoint({ httpServer: server, sessions, lone, cluster }),
    get fastPathServed() {
      return context.fastCalls?.served ?? 0
    },
  }
}
