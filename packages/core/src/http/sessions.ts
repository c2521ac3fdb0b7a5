import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node'
import type { McpServer } from '@modelcontextprotocol/server'
import { createInstance } from '../build-server.js'
import { BoundedEventStore } from '../event-store.js'
import type { Logger } from '../logger.js'
import type { ClusterSession, SessionHooks } from '../scale/cluster.js'
import type { HttpContext, HttpLimits } from './context.js'

// The 2025-era sessions this replica holds: how many (in all, and per client), how long an idle
// one lives, and opening a new one for an `initialize`.

/** One 2025-era session held here. */
export interface Session {
  transport: Pick<NodeStreamableHTTPServerTransport, 'handleRequest'>
  server: McpServer
  lastSeen: number
  /**
   * The table's count of uses when it was last added or used: the order idle sessions give way in
   * (uses in one millisecond share a `lastSeen`, never a `lastUse`). Set by the table.
   */
  lastUse: number
  /** Who opened it: a digest of the bearer token, else the remote address. */
  client: string
  /** Requests (and SSE streams) being served on it right now: such a session is not idle. */
  active: number
}

/** The sessions of this replica, bounded in number (in all and per client) and closed when idle. */
export class SessionTable {
  readonly #sessions = new Map<string, Session>()
  #uses = 0
  #sweep: NodeJS.Timeout | undefined

  constructor(
    private readonly limits: Pick<HttpLimits, 'maxSessions' | 'maxSessionsPerClient' | 'sessionIdleMs'>,
    private readonly logger: Logger,
  ) {}

  get size(): number {
    return this.#sessions.size
  }

  get(id: string): Session | undefined {
    return this.#sessions.get(id)
  }

  add(id: string, session: Session): void {
    session.lastUse = ++this.#uses
    this.#sessions.set(id, session)
  }

  /** Forgets the session without closing its server; false when it was not here. */
  delete(id: string): boolean {
    return this.#sessions.delete(id)
  }

  /** Forgets the session and closes its server, so its per-connection cleanups run. */
  close(id: string, session: Session): void {
    this.#sessions.delete(id)
    void session.server.close().catch(() => {})
  }

  /** What the cluster calls as sessions of `client` open or are restored here, and end. */
  hooksFor(client: string): SessionHooks {
    return {
      // A session opened under OAuth is its owner's, whoever's request restored it here.
      register: (id: string, opened: ClusterSession, owner?: string) => {
        this.add(id, { ...opened, lastSeen: Date.now(), lastUse: 0, client: owner ?? client, active: 0 })
      },
      closed: (id: string) => {
        const session = this.get(id)
        if (session) this.close(id, session)
      },
    }
  }

  /**
   * Makes room for one more session of `client`: its own oldest idle session gives way when it is at
   * its cap, and the oldest idle session of anyone when the server is at its cap. Abandoned sessions
   * therefore never lock anyone out. False when nothing idle can give way.
   */
  makeRoom(client: string): boolean {
    const own = [...this.#sessions.values()].filter((session) => session.client === client).length
    if (own >= this.limits.maxSessionsPerClient) {
      const victim = this.#oldestIdle((session) => session.client === client)
      if (!victim) return false
      this.logger.debug('evicting a session: its client is at its session cap', { session: victim[0] })
      this.close(...victim)
    }
    if (this.#sessions.size >= this.limits.maxSessions) {
      const victim = this.#oldestIdle(() => true)
      if (!victim) return false
      this.logger.debug('evicting the least recently used idle session', { session: victim[0] })
      this.close(...victim)
    }
    return true
  }

  /** Runs `work` with the session marked busy (not evictable, not idle). */
  async busy<T>(session: Session, work: () => Promise<T>): Promise<T> {
    session.active++
    session.lastSeen = Date.now()
    session.lastUse = ++this.#uses
    try {
      return await work()
    } finally {
      session.active--
      session.lastSeen = Date.now()
      session.lastUse = ++this.#uses
    }
  }

  /** Starts closing sessions idle longer than `sessionIdleMs`. */
  startSweep(): void {
    const { sessionIdleMs } = this.limits
    this.#sweep = setInterval(
      () => {
        const now = Date.now()
        for (const [id, session] of this.#sessions) {
          if (session.active === 0 && now - session.lastSeen > sessionIdleMs) {
            this.logger.info('closing idle session', { session: id })
            this.close(id, session)
          }
        }
      },
      Math.max(1000, Math.min(60_000, sessionIdleMs / 2)),
    )
    this.#sweep.unref()
  }

  stopSweep(): void {
    clearInterval(this.#sweep)
  }

  /** Closes every session's server and forgets them all (shutdown). */
  async closeAll(): Promise<void> {
    await Promise.allSettled([...this.#sessions.values()].map((session) => session.server.close()))
    this.#sessions.clear()
  }

  /** The least recently used session with nothing in flight, among those `which` accepts. */
  #oldestIdle(which: (session: Session) => boolean): [string, Session] | undefined {
    let oldest: [string, Session] | undefined
    for (const entry of this.#sessions) {
      const [, session] = entry
      if (session.active > 0 || !which(session)) continue
      if (!oldest || session.lastUse < oldest[1].lastUse) oldest = entry
    }
    return oldest
  }
}

/**
 * Opens a 2025-era session for `client`'s `initialize` and serves that request on it: in Redis
 * with `--redis-url` (any replica serves it afterwards), else in this process.
 */
export async function openSession(
  context: HttpContext,
  client: string,
  req: IncomingMessage,
  res: ServerResponse,
  initialize: { params?: Record<string, unknown> },
): Promise<void> {
  const { runtime, sessions, cluster, gate, onerror } = context
  const { logger } = runtime
  if (cluster) {
    const opened = await cluster.open(
      sessions.hooksFor(client),
      initialize.params ?? {},
      gate ? client : undefined,
    )
    await opened.transport.handleRequest(req, res, initialize)
    return
  }
  const server = createInstance(runtime, { forwardProcessLogs: false, connection: 'session' })
  const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    eventStore: new BoundedEventStore(),
    onsessioninitialized: (id) => {
      sessions.add(id, { transport, server, lastSeen: Date.now(), lastUse: 0, client, active: 0 })
      logger.debug('session opened', { session: id })
    },
    onsessionclosed: (id) => {
      // DELETE ends the session: close its server too, so its per-connection cleanups run.
      if (sessions.delete(id)) void server.close().catch(() => {})
      logger.debug('session closed', { session: id })
    },
  })
  transport.onerror = onerror
  await server.connect(transport)
  await transport.handleRequest(req, res, initialize)
}
