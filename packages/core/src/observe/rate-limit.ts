import type { Redis } from 'ioredis'
import type { Rate } from '../observe-config.js'

// Per-client rate limits: token buckets, one per client and budget (`call` for every tool, `write`
// for tools that write). A call takes a token from each bucket that applies, all or none: a call
// refused by one budget spends nothing from the other. In one process the buckets live in memory;
// with --redis-url they live in Redis (one Lua script checks and takes atomically), so a client
// that round-robins over replicas gets the one budget, not one per replica.

export interface Bucket {
  /** Budget name, for the metrics and the message (`call`, `write`). */
  budget: string
  rate: Rate
  burst: number
}

export interface RateDecision {
  allowed: boolean
  /** When refused: how long until a token is there for every bucket asked, in ms. */
  retryAfterMs: number
  /** When refused: the budget that refused. */
  budget?: string
}

export interface RateLimiter {
  take(client: string, buckets: Bucket[]): Promise<RateDecision>
  /** The same decision at once, for a limiter that holds its buckets in process. */
  takeNow?(client: string, buckets: Bucket[]): RateDecision
  close(): Promise<void>
}

const perMs = (rate: Rate) => rate.count / rate.perMs

/** Clients remembered at most (the least recently seen are dropped: a full bucket is the default). */
const MAX_CLIENTS = 10_000

/** One budget's bucket of one client: its tokens when last taken from, and when. */
interface Level {
  tokens: number
  at: number
}

export function memoryRateLimiter(now: () => number = Date.now): RateLimiter {
  // Per client, its buckets by budget. A call builds no key: the client's id (one string object
  // per session or subject, its hash cached by V8) finds its buckets, which are few.
  const clients = new Map<string, Map<string, Level>>()
  /** The client seen last, already last in {@link clients}' order. */
  let latest: string | undefined
  const level = (saved: Level | undefined, bucket: Bucket, at: number) =>
    saved ? Math.min(bucket.burst, saved.tokens + (at - saved.at) * perMs(bucket.rate)) : bucket.burst
  const allowed: RateDecision = Object.freeze({ allowed: true, retryAfterMs: 0 })
  const refusal = (saved: Map<string, Level> | undefined, buckets: Bucket[], at: number): RateDecision => {
    const levels = buckets.map((bucket) => level(saved?.get(bucket.budget), bucket, at))
    const bucket = buckets[levels.findIndex((tokens) => tokens < 1)] as Bucket
    const retryAfterMs = Math.max(
      ...buckets.map((candidate, index) =>
        Math.max(0, (1 - (levels[index] as number)) / perMs(candidate.rate)),
      ),
    )
    return { allowed: false, retryAfterMs: Math.ceil(retryAfterMs), budget: bucket.budget }
  }
  const takeNow = (client: string, buckets: Bucket[]): RateDecision => {
    const at = now()
    let saved = clients.get(client)
    // All or none: a call refused by one budget spends nothing from the others.
    for (const bucket of buckets)
      if (level(saved?.get(bucket.budget), bucket, at) < 1) return refusal(saved, buckets, at)
    saved ??= new Map()
    for (const bucket of buckets) {
      const known = saved.get(bucket.budget)
      const tokens = level(known, bucket, at) - 1
      if (known) {
        known.tokens = tokens
        known.at = at
      } else saved.set(bucket.budget, { tokens, at })
    }
    // Re-inserted so that the map's order is least recently seen first (dropped first); the client
    // seen last is there already.
    if (client !== latest) {
      clients.delete(client)
      clients.set(client, saved)
      latest = client
      while (clients.size > MAX_CLIENTS) clients.delete(clients.keys().next().value as string)
    }
    return allowed
  }
  return {
    takeNow,
    async take(client, buckets) {
      return takeNow(client, buckets)
    },
    async close() {},
  }
}

// KEYS: one hash per bucket. ARGV: burst, tokens-per-ms, ... per bucket. Redis's clock decides, so
// replicas with skewed clocks still share one budget. Returns {allowed, retryAfterMs, index}.
const TAKE_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local levels = {}
local wait = 0
local short = 0
for i, key in ipairs(KEYS) do
  local burst = tonumber(ARGV[i * 2 - 1])
  local rate = tonumber(ARGV[i * 2])
  local saved = redis.call('HMGET', key, 'tokens', 'at')
  local tokens = burst
  if saved[1] then
    tokens = math.min(burst, tonumber(saved[1]) + (now - tonumber(saved[2])) * rate)
  end
  levels[i] = tokens
  if tokens < 1 then
    if short == 0 then short = i end
    wait = math.max(wait, math.ceil((1 - tokens) / rate))
  end
end
if short > 0 then return {0, wait, short} end
for i, key in ipairs(KEYS) do
  local burst = tonumber(ARGV[i * 2 - 1])
  local rate = tonumber(ARGV[i * 2])
  redis.call('HSET', key, 'tokens', tostring(levels[i] - 1), 'at', tostring(now))
  redis.call('PEXPIRE', key, math.ceil(burst / rate) + 1000)
end
return {1, 0, 0}
`

export function redisRateLimiter(redis: Redis, prefix = 'keel:rate'): RateLimiter {
  return {
    async take(client, buckets) {
      const keys = buckets.map((bucket) => `${prefix}:${bucket.budget}:${client}`)
      const args = buckets.flatMap((bucket) => [String(bucket.burst), String(perMs(bucket.rate))])
      const [allowed, wait, index] = (await redis.eval(
        TAKE_SCRIPT,
        keys.length,
        ...keys,
        ...args,
      )) as number[]
      return allowed === 1
        ? { allowed: true, retryAfterMs: 0 }
        : { allowed: false, retryAfterMs: Number(wait), budget: buckets[Number(index) - 1]?.budget as string }
    },
    async close() {
      redis.disconnect()
    },
  }
}
