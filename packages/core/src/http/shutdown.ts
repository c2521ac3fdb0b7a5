import type { Server } from 'node:http'
import type { Cluster } from '../scale/cluster.js'
import type { SessionTable } from './sessions.js'
import type { LoneRequests } from './streams.js'

/** What an HTTP endpoint holds open, closed in {@link closeEndpoint}. */
export interface EndpointParts {
  httpServer: Server
  sessions: SessionTable
  lone: LoneRequests
  cluster: Cluster | undefined
}

/**
 * Stops accepting, closes every session (their servers' cleanups run) and the per-request
 * handler and its change streams, leaves the cluster, and cuts what connections remain (open SSE
 * streams would otherwise hold the server open).
 */
export async function closeEndpoint({ httpServer, sessions, lone, cluster }: EndpointParts): Promise<void> {
  sessions.stopSweep()
  const closing = new Promise<void>((resolve) => httpServer.close(() => resolve()))
  await sessions.closeAll()
  await lone.close()
  await cluster?.close()
  httpServer.closeAllConnections()
  await closing
}
