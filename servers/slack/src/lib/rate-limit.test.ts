import { describe, expect, it } from 'vitest'
import { RateLimitPolicy } from './rate-limit.js'

describe('RateLimitPolicy', () => {
  it('waits out only a short Retry-After, and only once', () => {
    const policy = new RateLimitPolicy()
    expect(policy.inlineWait(1, 0)).toBe(1000)
    expect(policy.inlineWait(1, 1)).toBeUndefined()
    expect(policy.inlineWait(3, 0)).toBeUndefined()
    expect(policy.inlineWait(3600, 0)).toBeUndefined()
  })

  it('closes a method for a back-off that doubles per 429 and is capped, whatever Retry-After says', () => {
    const policy = new RateLimitPolicy({ backoffMs: 1000, maxBackoffMs: 4000 })
    const now = 1_000_000
    expect(policy.limited('users.list', 3600, now)).toEqual({ retryAfterSeconds: 3600, retryAt: now + 1000 })
    expect(policy.closed('users.list', now + 999)).toEqual({ retryAfterSeconds: 3600, retryAt: now + 1000 })
    expect(policy.closed('users.list', now + 1000)).toBeUndefined()
    expect(policy.closed('conversations.info', now)).toBeUndefined()
    expect(policy.limited('users.list', 3600, now).retryAt).toBe(now + 2000)
    expect(policy.limited('users.list', 3600, now).retryAt).toBe(now + 4000)
    expect(policy.limited('users.list', 3600, now).retryAt).toBe(now + 4000)
    // A Retry-After shorter than the back-off is honoured as it is.
    expect(policy.limited('users.list', 2, now).retryAt).toBe(now + 2000)
    policy.succeeded('users.list')
    expect(policy.limited('users.list', 3600, now).retryAt).toBe(now + 1000)
  })
})
