import type { Redis, RedisOptions } from 'ioredis'
import type { Logger } from '../logger.js'

/**
 * Connects to Redis, loading the client only now (stdio servers and single-process HTTP never
 * load it). Commands fail fast while Redis is unreachable (no offline queue, a command timeout),
 * so a request gets a clear error instead of waiting; the client reconnects on its own.
 */
export async function connectRedis(url: string, logger: Logger, name: string): Promise<Redis> {
  // Named export from source; a bundled bin loads its own copy of the client as a CommonJS file
  // (tools/bundle: vendor files), whose exports arrive as the namespace's default.
  const loaded = (await import('ioredis')) as typeof import('ioredis') & {
    default?: typeof import('ioredis')
  }
  const Redis = loaded.Redis ?? loaded.default?.Redis
  let lastComplaint = 0
  const options: RedisOptions = {
    lazyConnect: true,
    connectionName: name,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 5000,
    connectTimeout: 5000,
    retryStrategy: (attempt) => Math.min(attempt * 250, 2000),
  }
  const redis = new Redis(url, options)
  let started = false
  let lastError: Error | undefined
  redis.on('error', (error: Error) => {
    lastError = error
    // Before start-up is done the failure is the start-up error itself (below).
    if (!started) return
    // One line per 10 s while Redis is away, not one per reconnection attempt.
    if (Date.now() - lastComplaint < 10_000) return
    lastComplaint = Date.now()
    logger.warn('Redis is unavailable; session requests fail until it is back', { error: error.message })
  })
  redis.on('ready', () => {
    if (lastComplaint) logger.info('Redis is available again')
    lastComplaint = 0
  })
  try {
    await redis.connect()
    started = true
  } catch (error) {
    redis.disconnect()
    throw new Error(`cannot reach Redis (--redis-url): ${(lastError ?? (error as Error)).message}`)
  }
  return redis
}

/** A second connection with the same settings, for blocking reads or subscriptions. */
export async function duplicateConnection(redis: Redis, blockingMs = 0): Promise<Redis> {
  const copy = redis.duplicate({
    lazyConnect: true,
    ...(blockingMs ? { commandTimeout: blockingMs + 5000 } : {}),
  })
  // Errors surface as rejected commands; the owner of the connection decides what to say.
  copy.on('error', () => {})
  await copy.connect()
  return copy
}
