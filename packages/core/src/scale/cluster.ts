import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  type AuthInfo,
  type JSONRPCMessage,
  type McpServer,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server'
import type { Redis } from 'ioredis'
import { createInstance, type Runtime } from '../build-server.js'
import { handlesOf } from '../handles.js'
import type { Logger } from '../logger.js'
import { HandleRelay } from './handle-relay.js'
import { connectRedis, duplicateConnection } from './redis.js'
import { RedisServerEventBus } from './redis-event-bus.js'
import { RedisEventStore } from './redis-event-store.js'
import { isResponse, serveRedisStream, sessionKey } from './redis-stream.js'
import { ownerOf, RelayTransport } from './relay-transport.js'

// Scale-out of 2025-era sessions (`--redis-url`). Any replica serves any request of a session:
// - the session's record (the client's initialize parameters, its log level) lives in Redis; a
//   replica that meets a session it has not seen builds an instance and replays the handshake to
//   it, so the SDK itself restores the negotiated version, client info and capabilities;
// - every SSE event is stored in a Redis stream; GET streams (the standalone stream and resumed
//   request streams) are served from Redis by whichever replica the client reaches, so messages
//   sent by any replica arrive, and `Last-Event-ID` resumes anywhere;
// - the answer to a server-to-client request is relayed over pub/sub to the replica that asked;
//   client notifications (cancellation, roots changed) and log level changes reach every replica.

/** One session's transport and server on this replica. */
export interface ClusterSession {
  transport: RelayTransport
  server: McpServer
}

/** What the HTTP session table (http/sessions.ts) tells the cluster when it opens a session. */
export interface SessionHooks {
  /** The session is initialized here (new, or restored): register it, as `owner`'s when it has one. */
  register(id: string, session: ClusterSession, owner?: string): void
  /** The client ended the session (DELETE) here. */
  closed(id: string): void
}

interface Relayed {
  session: string
  message: JSONRPCMessage
}

interface Broadcast {
  from: string
  session: string
  kind: 'notify' | 'level' | 'unsubscribe' | 'close'
  message?: JSONRPCMessage
}

const HTTP_ACCEPT = 'application/json, text/event-stream'

type Message = Record<string, unknown>

/** Thrown when Redis cannot answer: the request gets a 503, not a hang. */
export class StoreUnavailable extends Error {
  override name = 'StoreUnavailable'
}

/** The shared state of all replicas of one server, kept in Redis. */
export class Cluster {
  /**
   * This process's id among the replicas (also sent as the `x-keel-replica` header): the one its
   * state handles name, so a call carrying one is relayed here.
   */
  readonly replica: string
  readonly #local = new Map<string, ClusterSession>()
  readonly #restoring = new Map<string, Promise<ClusterSession | undefined>>()
  readonly #streams = new Set<Redis>()
  readonly #prefix: string
  readonly #ttlMs: number
  #closed = false
  /** Change events for 2026-07-28 `subscriptions/listen` streams, shared by all replicas. */
  readonly bus: RedisServerEventBus
  /** Calls carrying a state handle, relayed to the replica that holds its state. */
  readonly handles: HandleRelay

  private constructor(
    private readonly runtime: Runtime<unknown, unknown>,
    private readonly redis: Redis,
    private readonly subscriber: Redis,
    private readonly logger: Logger,
    private readonly hooks: SessionHooks,
  ) {
    this.replica = handlesOf(runtime).replica
    this.#prefix = `keel:${runtime.spec.name}:`
    this.#ttlMs = runtime.config.sessionIdleMs
    // A relayed call may run as long as any call, plus the trip there and back.
    this.handles = new HandleRelay(
      redis,
      this.#prefix,
      this.replica,
      logger,
      runtime.config.toolTimeoutMs + 10_000,
    )
    this.bus = new RedisServerEventBus(redis, `${this.#prefix}server-events`, (error) =>
      logger.warn('a change event was not shared', { error: error.message }),
    )
  }

  /** Connects to Redis and starts listening for relayed answers and session events. */
  static async start<D, C>(runtime: Runtime<D, C>, hooks: SessionHooks): Promise<Cluster> {
    const url = runtime.config.redisUrl
    if (!url) throw new Error('the cluster needs --redis-url')
    const redis = await connectRedis(url, runtime.logger, `keel-${runtime.spec.name}`)
    const subscriber = await duplicateConnection(redis)
    const cluster = new Cluster(
      runtime as Runtime<unknown, unknown>,
      redis,
      subscriber,
      runtime.logger,
      hooks,
    )
    subscriber.on('message', (channel: string, text: string) => cluster.#onChannel(channel, text))
    await subscriber.subscribe(
      cluster.#replicaChannel(cluster.replica),
      cluster.#broadcastChannel(),
      cluster.bus.channel,
      ...cluster.handles.channels,
    )
    runtime.logger.info('sessions and events are shared through Redis', { replica: cluster.replica })
    return cluster
  }

  #recordKey(id: string) {
    return sessionKey(this.#prefix, id)
  }

  #replicaChannel(replica: string) {
    return `${this.#prefix}replica:${replica}`
  }

  #broadcastChannel() {
    return `${this.#prefix}broadcast`
  }

  /** Runs a Redis command; failure becomes {@link StoreUnavailable}. */
  async #store<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      throw new StoreUnavailable(`the session store (Redis) is unavailable: ${(error as Error).message}`)
    }
  }

  /** Builds a session's instance and transport on this replica (not yet initialized). */
  #build(
    hooks: SessionHooks,
    id: string,
    init?: Message,
    owner?: string,
  ): { session: ClusterSession; store: RedisEventStore } {
    const server = createInstance(this.runtime, { forwardProcessLogs: false, connection: 'session' })
    const store = new RedisEventStore(this.redis, this.#prefix, id, this.#ttlMs, 1000, (error) =>
      this.logger.warn('an SSE event was not stored: it cannot be resumed', { error: error.message }),
    )
    const inner: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      eventStore: store,
      onsessioninitialized: async (sessionId) => {
        // Saved before the initialize answer leaves, so the client's next request finds it anywhere.
        if (init)
          await this.redis
            .multi()
            .hset(this.#recordKey(sessionId), 'init', JSON.stringify(init), 'owner', owner ?? '')
            .pexpire(this.#recordKey(sessionId), this.#ttlMs)
            .exec()
        this.#local.set(sessionId, session)
        hooks.register(sessionId, session, owner || undefined)
      },
      onsessionclosed: async (sessionId) => {
        this.#local.delete(sessionId)
        await this.forget(sessionId).catch((error: unknown) =>
          this.logger.warn('could not remove a closed session from Redis', { error }),
        )
        hooks.closed(sessionId)
      },
    })
    store.replica = this.replica
    const transport = new RelayTransport(inner, this.replica, store)
    transport.onclose = () => {
      if (this.#local.get(id)?.transport === transport) this.#local.delete(id)
    }
    const session: ClusterSession = { transport, server }
    return { session, store }
  }

  /** Whether Redis answers (readiness). */
  ping(): Promise<unknown> {
    return this.redis.ping()
  }

  /** A new session for an `initialize` request; its record is saved in Redis as it initializes. */
  async open(hooks: SessionHooks, init: Message, owner?: string): Promise<ClusterSession> {
    // Fail before the SDK runs the handshake: it would turn a storage error into a parse error.
    await this.#store(() => this.redis.ping())
    const { session } = this.#build(hooks, randomUUID(), init, owner)
    await session.server.connect(session.transport)
    return session
  }

  /**
   * The session `id` on this replica: restored from its Redis record when another replica opened
   * it. `undefined` when Redis has no such session (never opened, ended, or expired).
   */
  restore(hooks: SessionHooks, id: string, owner?: string): Promise<ClusterSession | undefined> {
    const local = this.#local.get(id)
    if (local) return Promise.resolve(local)
    let pending = this.#restoring.get(id)
    if (!pending) {
      pending = this.#restore(hooks, id, owner).finally(() => this.#restoring.delete(id))
      this.#restoring.set(id, pending)
    }
    return pending
  }

  async #restore(hooks: SessionHooks, id: string, owner?: string): Promise<ClusterSession | undefined> {
    const record = await this.#store(() => this.redis.hgetall(this.#recordKey(id)))
    if (!record.init) return undefined
    // A session opened under OAuth belongs to its subject on every replica, as it does on one.
    if (record.owner && record.owner !== owner) return undefined
    const { session, store } = this.#build(hooks, id, undefined, record.owner || undefined)
    await session.server.connect(session.transport)
    // The handshake is replayed to this replica's instance only: nothing goes to the client or
    // into the session's event streams.
    store.muted = true
    try {
      await this.#inject(session, id, {
        jsonrpc: '2.0',
        id: `keel-restore-${randomUUID()}`,
        method: 'initialize',
        params: JSON.parse(record.init),
      })
      await this.#inject(session, id, { jsonrpc: '2.0', method: 'notifications/initialized' })
      if (record.level) await this.#applyLevel(session, id, record.level)
    } catch (error) {
      this.#local.delete(id)
      await session.server.close().catch(() => {})
      throw error
    } finally {
      store.muted = false
    }
    this.logger.debug('restored a session opened on another replica', { session: id })
    return session
  }

  /** Hands one JSON-RPC message to a session's transport as if the client had posted it. */
  async #inject(session: ClusterSession, id: string, message: Message): Promise<void> {
    const response = await session.transport.inner.handleRequest(
      new Request('http://localhost/mcp', {
        method: 'POST',
        headers: { accept: HTTP_ACCEPT, 'content-type': 'application/json', 'mcp-session-id': id },
        body: JSON.stringify(message),
      }),
    )
    const text = await response.text()
    if (response.status >= 400 || /"error"\s*:/.test(text))
      throw new Error(
        `replaying ${String(message.method)} to a restored session failed: ${text.slice(0, 300)}`,
      )
  }

  #applyLevel(session: ClusterSession, id: string, level: string): Promise<void> {
    return this.#inject(session, id, {
      jsonrpc: '2.0',
      id: `keel-level-${randomUUID()}`,
      method: 'logging/setLevel',
      params: { level },
    })
  }

  /**
   * Before a session request is served here: refreshes the session's expiry in Redis (false when
   * the session no longer exists there), relays answers meant for other replicas, and shares what
   * every replica must know. Returns the messages left for this replica (none: answer 202).
   */
  async route(id: string, parsed: unknown): Promise<{ exists: boolean; rest: Message[] }> {
    const exists = await this.#store(() => this.redis.pexpire(this.#recordKey(id), this.#ttlMs))
    if (!exists) return { exists: false, rest: [] }
    const messages = (Array.isArray(parsed) ? parsed : [parsed]) as Message[]
    const rest: Message[] = []
    for (const message of messages) {
      const owner = isResponse(message) ? ownerOf(message.id) : undefined
      if (owner && owner.replica !== this.replica) {
        const payload: Relayed = { session: id, message: message as JSONRPCMessage }
        const heard = await this.#store(() =>
          this.redis.publish(this.#replicaChannel(owner.replica), JSON.stringify(payload)),
        )
        if (heard) this.logger.debug('relayed an answer to the replica that asked', { to: owner.replica })
        else this.logger.debug('an answer for a replica that is gone was dropped', { session: id })
        continue
      }
      rest.push(message)
      if (typeof message.method !== 'string') continue
      if (message.id === undefined && message.method !== 'notifications/initialized')
        await this.#broadcast(id, 'notify', message)
      else if (message.method === 'logging/setLevel') {
        const level = (message.params as Message | undefined)?.level
        if (typeof level === 'string') {
          await this.#store(() => this.redis.hset(this.#recordKey(id), 'level', level))
          await this.#broadcast(id, 'level', message)
        }
      } else if (message.method === 'resources/subscribe' || message.method === 'resources/unsubscribe') {
        const uri = (message.params as Message | undefined)?.uri
        if (typeof uri !== 'string') continue
        // One replica watches a subscribed resource: this one from now on; the others stop.
        if (message.method === 'resources/subscribe')
          await this.#store(() => this.redis.hset(this.#recordKey(id), `sub:${uri}`, this.replica))
        else await this.#store(() => this.redis.hdel(this.#recordKey(id), `sub:${uri}`))
        await this.#broadcast(id, 'unsubscribe', {
          jsonrpc: '2.0',
          method: 'resources/unsubscribe',
          params: { uri },
        })
      }
    }
    return { exists: true, rest }
  }

  async #broadcast(id: string, kind: Broadcast['kind'], message?: Message): Promise<void> {
    const payload: Broadcast = {
      from: this.replica,
      session: id,
      kind,
      ...(message ? { message: message as JSONRPCMessage } : {}),
    }
    await this.#store(() => this.redis.publish(this.#broadcastChannel(), JSON.stringify(payload)))
  }

  #onChannel(channel: string, text: string): void {
    if (channel === this.bus.channel) {
      this.bus.dispatch(text)
      return
    }
    if (this.handles.dispatch(channel, text)) return
    let payload: Relayed & Partial<Broadcast>
    try {
      payload = JSON.parse(text)
    } catch {
      return
    }
    const session = this.#local.get(payload.session)
    if (channel === this.#replicaChannel(this.replica)) {
      if (session) session.transport.deliver(payload.message)
      else this.logger.debug('an answer arrived for a session this replica no longer holds')
      return
    }
    if (payload.from === this.replica || !session) return
    const work = async () => {
      switch (payload.kind) {
        case 'notify':
          session.transport.deliver(payload.message)
          return
        case 'level': {
          const level = (payload.message as Message | undefined)?.params as Message | undefined
          if (typeof level?.level === 'string') await this.#applyLevel(session, payload.session, level.level)
          return
        }
        case 'unsubscribe':
          await this.#inject(session, payload.session, {
            ...(payload.message as Message),
            id: `keel-unsubscribe-${randomUUID()}`,
          })
          return
        case 'close':
          this.#local.delete(payload.session)
          this.hooks.closed(payload.session)
          return
      }
    }
    work().catch((error: unknown) =>
      this.logger.warn('could not apply a session change from another replica', { error }),
    )
  }

  /**
   * Takes over the session's subscriptions whose watching replica is gone (no longer listening on
   * its channel), so resource updates keep coming after a replica died. Run by the replica that
   * serves the session's standalone stream, where those notifications go.
   */
  async #adoptSubscriptions(id: string): Promise<void> {
    const record = await this.redis.hgetall(this.#recordKey(id))
    for (const [field, owner] of Object.entries(record)) {
      if (!field.startsWith('sub:') || owner === this.replica) continue
      if (await this.#alive(owner)) continue
      const uri = field.slice(4)
      await this.redis.hset(this.#recordKey(id), field, this.replica)
      // Restored as its owner's (under OAuth): the owner's stream asked for this takeover.
      const session = await this.restore(this.hooks, id, record.owner || undefined)
      if (!session) return
      await this.#inject(session, id, {
        jsonrpc: '2.0',
        id: `keel-subscribe-${randomUUID()}`,
        method: 'resources/subscribe',
        params: { uri },
      })
      this.logger.info('took over a subscription from a replica that is gone', { session: id, uri })
    }
  }

  /** Whether a replica is up (listening on its channel). */
  async #alive(replica: string): Promise<boolean> {
    if (replica === this.replica) return true
    const [, listeners] = (await this.redis.pubsub('NUMSUB', this.#replicaChannel(replica))) as [
      string,
      number,
    ]
    return Number(listeners) > 0
  }

  /**
   * The replica holding session `id`'s own state (what its stateful calls without a handle work
   * on, e.g. its browser context): the first replica to serve such a call claims it, and a
   * replica claims it again when the holder is gone (the state is gone with it).
   */
  async stateOwner(id: string): Promise<string> {
    const key = this.#recordKey(id)
    if (await this.#store(() => this.redis.hsetnx(key, 'state', this.replica))) return this.replica
    const owner = await this.#store(() => this.redis.hget(key, 'state'))
    if (!owner || owner === this.replica || (await this.#alive(owner))) return owner || this.replica
    await this.#store(() => this.redis.hset(key, 'state', this.replica))
    this.logger.info('took over the state of a session whose replica is gone', { session: id })
    return this.replica
  }

  /** Serves a request of session `id` relayed here because this replica holds its state. */
  async serveRelayed(
    session: { id: string; principal?: string },
    request: Request,
    authInfo: AuthInfo | undefined,
  ): Promise<Response> {
    const restored = await this.restore(this.hooks, session.id, session.principal)
    if (!restored)
      return Response.json(
        {
          jsonrpc: '2.0',
          id: null,
          error: { code: -32001, message: 'Session not found: start a new session with initialize' },
        },
        { status: 404 },
      )
    return restored.transport.inner.handleRequest(request, authInfo ? { authInfo } : undefined)
  }

  /** Removes a session from Redis and tells the other replicas to drop it. */
  async forget(id: string): Promise<void> {
    await this.#store(() => this.redis.del(this.#recordKey(id)))
    await this.#broadcast(id, 'close')
  }

  /** Serves a GET stream of session `id` from Redis (see {@link serveRedisStream}). */
  /** Whether a session's stream may be served to `owner` (sessions opened under OAuth have one). */
  async ownedBy(id: string, owner: string | undefined): Promise<boolean> {
    const recorded = await this.#store(() => this.redis.hget(this.#recordKey(id), 'owner'))
    return !recorded || recorded === owner
  }

  serveStream(id: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    return serveRedisStream(
      {
        redis: this.redis,
        prefix: this.#prefix,
        ttlMs: this.#ttlMs,
        logger: this.logger,
        readers: this.#streams,
        store: (work) => this.#store(work),
        adopt: (session) => this.#adoptSubscriptions(session),
        alive: (replica) => this.#alive(replica),
        closed: () => this.#closed,
      },
      id,
      req,
      res,
    )
  }

  /** Closes this replica's Redis connections (the sessions stay in Redis for the other replicas). */
  async close(): Promise<void> {
    this.#closed = true
    for (const reader of this.#streams) reader.disconnect()
    this.subscriber.disconnect()
    await this.redis.quit().catch(() => this.redis.disconnect())
  }
}
