/**
 * Stopping what runs on the server: cancelling a statement (with
 * pg_cancel_backend from another connection or the protocol's CancelRequest, repeated until it has
 * stopped) and the byte budget that cuts a result off while it arrives.
 */
import { connect as netConnect } from 'node:net'
import type { Pool, PoolClient } from 'pg'
import { isConnectionError, ResultTooLargeError } from './errors.js'

/** After a cancel, how long to wait for the statement to stop before dropping the connection. */
const cancelGraceMs = 2_000
/** How long one cancel gets to take effect before it is sent again. */
const cancelRetryMs = 100
/**
 * How long the cancel waits for a second pool connection before it uses the protocol's cancel
 * instead. Unbounded, it could wait forever: a pool that is ending (the server shutting down)
 * never serves a connection request queued before its end.
 */
const cancelConnectWaitMs = 250

/** What cancelling needs of the Database: a pool with room for a second connection, or none. */
export interface CancelContext {
  getPool(): Promise<Pool>
  readonly poolSize: number
  readonly broken: WeakSet<object>
}

/** Resolves when `promise` settles or `ms` pass, whichever is first; never rejects. */
export async function settleWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms)
  })
  const settled = promise.then(
    () => true,
    () => true,
  )
  try {
    return await Promise.race([settled, deadline])
  } finally {
    clearTimeout(timer)
  }
}

interface ClientInternals {
  processID: number
  secretKey: number
  host: string
  port: number
}

/** Where a {@link ReceivedBytesMeter} reports a result over its limit. */
export interface ByteLimitTarget {
  interrupt(error: Error): void
}

/**
 * Counts the bytes one connection receives while a call watches it. When a call's count passes
 * its limit, the connection is marked broken and destroyed (so a huge row stops arriving at once)
 * and the call is interrupted with a {@link ResultTooLargeError}. One listener for the life of the
 * connection, not one added and removed per call.
 */
export class ReceivedBytesMeter {
  #received = 0
  #limit = 0
  #target: ByteLimitTarget | undefined
  readonly #stream: NodeJS.ReadableStream & { destroy(): void }
  readonly #client: PoolClient
  readonly #broken: WeakSet<object>

  constructor(
    stream: NodeJS.ReadableStream & { destroy(): void },
    client: PoolClient,
    broken: WeakSet<object>,
  ) {
    this.#stream = stream
    this.#client = client
    this.#broken = broken
    stream.on('data', this.#onData)
  }

  /** Counts from zero for `target`, until {@link unwatch}. */
  watch(limit: number, target: ByteLimitTarget): void {
    this.#received = 0
    this.#limit = limit
    this.#target = target
  }

  unwatch(): void {
    this.#target = undefined
  }

  readonly #onData = (chunk: Buffer | string) => {
    const target = this.#target
    if (target === undefined) return
    this.#received += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length
    if (this.#received <= this.#limit) return
    this.#target = undefined
    this.#stream.removeListener('data', this.#onData)
    this.#broken.add(this.#client)
    this.#stream.destroy()
    target.interrupt(new ResultTooLargeError(this.#limit))
  }
}

const meters = new WeakMap<PoolClient, ReceivedBytesMeter>()

/** The byte meter of `client`'s connection (made on first use), or undefined when it has no stream. */
export function receivedBytesMeter(
  client: PoolClient,
  broken: WeakSet<object>,
): ReceivedBytesMeter | undefined {
  let meter = meters.get(client)
  if (meter === undefined) {
    const stream = (
      client as unknown as { connection?: { stream?: NodeJS.ReadableStream & { destroy(): void } } }
    ).connection?.stream
    if (stream === undefined) return undefined
    meter = new ReceivedBytesMeter(stream, client, broken)
    meters.set(client, meter)
  }
  return meter
}

/**
 * Cancels the statement running on `target` and waits (at most cancelGraceMs) for it to stop.
 * PostgreSQL ignores a cancel that arrives while the backend waits for the next protocol message,
 * as it can between one protocol message of a statement and the next; the statement would then
 * run on after the connection is dropped (until its statement_timeout). So the cancel is sent
 * again until the statement has really ended.
 */
export async function cancelUntilStopped(
  target: PoolClient,
  running: Promise<unknown>,
  pool: CancelContext,
): Promise<void> {
  const deadline = performance.now() + cancelGraceMs
  do {
    await cancelBackend(target, pool)
    if (await settleWithin(running, cancelRetryMs)) return
  } while (performance.now() < deadline)
}

/**
 * Cancels the statement running on `target`: pg_cancel_backend from another pool connection when
 * the pool has room; otherwise, or when that is not permitted (a SET ROLE session may not signal
 * its own login role's backends), the protocol-level CancelRequest with the backend's secret key.
 */
export async function cancelBackend(target: PoolClient, context: CancelContext): Promise<void> {
  const { processID } = target as unknown as ClientInternals
  try {
    const pool = await context.getPool()
    const ending = (pool as unknown as { ending?: boolean }).ending === true
    if (!ending && (pool.idleCount > 0 || pool.totalCount < context.poolSize)) {
      const other = await connectWithin(pool, cancelConnectWaitMs)
      let failed = false
      try {
        const result = await other.query<{ cancelled: boolean }>(
          'SELECT pg_catalog.pg_cancel_backend($1) AS cancelled',
          [processID],
        )
        if (result.rows[0]?.cancelled === true) return
      } catch (error) {
        failed = isConnectionError(error)
        throw error
      } finally {
        other.release(failed || context.broken.has(other) ? true : undefined)
      }
    }
  } catch {
    // Fall through to the protocol-level cancel.
  }
  await cancelViaProtocol(target)
}

/** A pool connection within `ms`, or a rejection; one that arrives later goes back to the pool. */
async function connectWithin(pool: Pool, ms: number): Promise<PoolClient> {
  const connecting = pool.connect()
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('no connection for the cancel in time')), ms)
  })
  try {
    return await Promise.race([connecting, late])
  } catch (error) {
    connecting.then(
      (client) => client.release(),
      () => undefined,
    )
    throw error
  } finally {
    clearTimeout(timer)
  }
}

function cancelViaProtocol(target: PoolClient): Promise<void> {
  const { processID, secretKey, host, port } = target as unknown as ClientInternals
  return new Promise<void>((resolve) => {
    const socket = host.startsWith('/') ? netConnect(`${host}/.s.PGSQL.${port}`) : netConnect(port, host)
    const packet = Buffer.alloc(16)
    packet.writeInt32BE(16, 0)
    packet.writeInt32BE(80877102, 4) // CancelRequest code
    packet.writeInt32BE(processID, 8)
    packet.writeInt32BE(secretKey, 12)
    socket.setTimeout(cancelGraceMs, () => socket.destroy())
    socket.once('connect', () => socket.end(packet))
    socket.once('close', () => resolve())
    socket.once('error', () => resolve())
  })
}
