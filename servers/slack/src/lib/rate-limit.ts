/**
 * How the server answers Slack's rate limits. `@slack/web-api`'s own handling sleeps for the whole
 * `Retry-After` with its request queue paused, so one 429 saying "3600" wedged every later call
 * until its tool timeout. The client now rejects rate-limited calls at once (`rejectRateLimitedCalls`)
 * and this policy decides instead: a short wait is waited out inside the call, a long one is
 * answered `rate_limited` with Slack's retry time, and the method is not asked again until a capped
 * back-off has passed (so a healthy API is tried again within seconds, whatever the header said).
 */

export interface RateLimitOptions {
  /** Longest `Retry-After` a call waits out itself before retrying once (2,000 ms). */
  maxInlineWaitMs?: number
  /** First back-off after a 429 that was not waited out (1,000 ms); doubles with each further 429. */
  backoffMs?: number
  /** Longest back-off, whatever `Retry-After` says (30,000 ms). */
  maxBackoffMs?: number
}

/** What a refused call is told: Slack's own wait, and when this server will ask Slack again. */
export interface RateLimitState {
  retryAfterSeconds: number
  retryAt: number
}

interface Gate {
  until: number
  strikes: number
  retryAfterSeconds: number
}

/** Per-method gates of one token (Slack limits each method separately, per app and workspace). */
export class RateLimitPolicy {
  readonly #gates = new Map<string, Gate>()
  readonly #maxInlineWaitMs: number
  readonly #backoffMs: number
  readonly #maxBackoffMs: number

  constructor(options: RateLimitOptions = {}) {
    this.#maxInlineWaitMs = options.maxInlineWaitMs ?? 2_000
    this.#backoffMs = options.backoffMs ?? 1_000
    this.#maxBackoffMs = options.maxBackoffMs ?? 30_000
  }

  /** The gate in force for `method`, or undefined when the method may be called now. */
  closed(method: string, now = Date.now()): RateLimitState | undefined {
    const gate = this.#gates.get(method)
    if (!gate || gate.until <= now) return undefined
    return { retryAfterSeconds: gate.retryAfterSeconds, retryAt: gate.until }
  }

  /** Milliseconds to wait before retrying inside the call, or undefined to answer `rate_limited`. */
  inlineWait(retryAfterSeconds: number, attempt: number): number | undefined {
    const wait = retryAfterSeconds * 1000
    return attempt === 0 && wait <= this.#maxInlineWaitMs ? wait : undefined
  }

  /** Records a 429 that is answered to the model; returns the state it is told. */
  limited(method: string, retryAfterSeconds: number, now = Date.now()): RateLimitState {
    const strikes = (this.#gates.get(method)?.strikes ?? 0) + 1
    const backoff = Math.min(this.#maxBackoffMs, this.#backoffMs * 2 ** Math.min(strikes - 1, 30))
    const until = now + Math.min(retryAfterSeconds * 1000, backoff)
    this.#gates.set(method, { until, strikes, retryAfterSeconds })
    return { retryAfterSeconds, retryAt: until }
  }

  /** A call of `method` succeeded: its back-off starts from the beginning again. */
  succeeded(method: string): void {
    if (this.#gates.size) this.#gates.delete(method)
  }
}
