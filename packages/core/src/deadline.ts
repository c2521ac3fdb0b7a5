/**
 * Deadlines of many short operations on one timer per duration. A `setTimeout` per call, cleared
 * when the call ends, costs a timer object, a closure and timer-list work on every call (about
 * 400 bytes of garbage); calls that share a duration expire in the order they started, so one
 * timer armed for the earliest deadline serves them all.
 */

/** Something with a deadline: `expire` is called once it has passed (unless cancelled first). */
export interface Expiring {
  expire(): void
}

interface Bucket {
  /** Deadlines (performance.now() ms) by entry, in the order they were set: the earliest first. */
  readonly entries: Map<Expiring, number>
  timer: NodeJS.Timeout | undefined
}

const buckets = new Map<number, Bucket>()
/** Timers fire on the event loop's cached clock, which can trail performance.now() by a little. */
const SLACK_MS = 1

function fire(durationMs: number, bucket: Bucket): void {
  bucket.timer = undefined
  const now = performance.now()
  for (const [entry, deadline] of bucket.entries) {
    if (deadline > now + SLACK_MS) {
      arm(durationMs, bucket, deadline - now)
      return
    }
    bucket.entries.delete(entry)
    try {
      entry.expire()
    } catch (error) {
      // The others still expire, on a later turn; the error surfaces as a timer's would.
      if (bucket.entries.size > 0) arm(durationMs, bucket, 0)
      throw error
    }
  }
}

/** The longest delay a Node timer takes (longer ones fire after 1 ms): a later deadline re-arms. */
const MAX_TIMER_MS = 2_147_483_647

function arm(durationMs: number, bucket: Bucket, inMs: number): void {
  bucket.timer = setTimeout(fire, Math.min(MAX_TIMER_MS, Math.max(1, Math.ceil(inMs))), durationMs, bucket)
}

/**
 * Calls `entry.expire()` once `durationMs` have passed, unless {@link cancelDeadline} comes first.
 * An entry has one deadline at a time. While none is pending, the timer does not keep the process
 * alive (as a cleared `setTimeout` would not).
 */
export function setDeadline(entry: Expiring, durationMs: number): void {
  let bucket = buckets.get(durationMs)
  if (bucket === undefined) {
    bucket = { entries: new Map(), timer: undefined }
    buckets.set(durationMs, bucket)
  }
  bucket.entries.delete(entry)
  const empty = bucket.entries.size === 0
  bucket.entries.set(entry, performance.now() + durationMs)
  if (bucket.timer === undefined) arm(durationMs, bucket, durationMs)
  else if (empty) bucket.timer.ref()
}

/** Cancels `entry`'s deadline of `durationMs` (nothing when it has none or it passed). */
export function cancelDeadline(entry: Expiring, durationMs: number): void {
  const bucket = buckets.get(durationMs)
  if (bucket === undefined || !bucket.entries.delete(entry)) return
  if (bucket.entries.size === 0) bucket.timer?.unref()
}
