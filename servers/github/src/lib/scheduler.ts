/**
 * What the retry and throttling plugins ask of Bottleneck (2.19.5), without its per-job machinery.
 *
 * Bottleneck passes every job through a submit lock, a register lock, a datastore that imitates a
 * remote one, a state tracker and about twenty events, two promises each: three jobs a request
 * (plugin-retry's limiter, built anew for each request; plugin-throttling's retry limiter and its
 * per-token `global` group), ≈ 7 % of a warm call. The plugins use a small part of it:
 *
 * - `schedule([options,] task, ...args)`: runs `task(...args)`, resolves or rejects as it does.
 *   Job options `priority` (0–9, lower first; 5 by default) and `weight` (1 by default; 0 for
 *   plugin-throttling's retries, which then take no concurrency slot).
 * - limiter options `maxConcurrent` (jobs running at once, by weight) and `minTime` (ms between
 *   the starts of two jobs): plugin-throttling's groups (`global` 10 at once; `write` one at a time,
 *   1 s apart; `search` 2 s; `notifications` 3 s).
 * - `on('failed', listener)`: a failed job asks its listeners; a number returned is a retry of the
 *   job after that many ms (still holding its slot), announced as `retry`; nothing returned is the
 *   job's rejection. That is how both plugins retry (5xx with plugin-retry's counts, rate limits and
 *   `Retry-After` with plugin-throttling's).
 * - `Group` with `key(id)`: one limiter per token, dropped after `timeout` ms unused.
 * - `Events`: Bottleneck's own emitter (plugin-throttling's `rate-limit` / `secondary-limit`).
 *
 * Anything else a plugin might start to pass (a reservoir, a high-water mark, a Redis datastore,
 * `expiration`) is refused with an error instead of being ignored, so a plugin upgrade that relies
 * on it fails its tests. Lifecycle events (`received`, `queued`, `executing`, `done`) are not
 * announced: neither plugin listens to them.
 */

type Task = (...args: unknown[]) => unknown
type Listener = (...args: unknown[]) => unknown

/** Bottleneck's `Events` class: `new Events(target)` gives `target` on/once/removeAllListeners. */
export interface EventsInstance {
  _events: Record<string, unknown[] | undefined>
  trigger(name: string, ...args: unknown[]): Promise<unknown>
  listenerCount(name: string): number
}
export type EventsClass = new (target: object) => EventsInstance

/** The pieces of the real Bottleneck class this module reads or adjusts. */
export interface BottleneckLike {
  version?: string
  Events: EventsClass
  prototype: {
    schedule(this: RealLimiter, ...args: unknown[]): Promise<unknown>
    storeDefaults: Record<string, unknown>
  }
}
interface RealLimiter {
  Events: EventsInstance
  datastore: string
  _limiter: unknown
  _store: { storeOptions?: Record<string, unknown> }
}

const noOptions: JobOptions = Object.freeze({})
const PRIORITIES = 10
const DEFAULT_PRIORITY = 5
const LIMITER_OPTIONS = new Set(['id', 'maxConcurrent', 'minTime', 'timeout'])
const JOB_OPTIONS = new Set(['id', 'priority', 'weight', 'expiration'])
/** The events a job of the light path can announce: a limiter listened to for others runs Bottleneck's own path. */
const LIGHT_EVENTS = new Set(['failed', 'retry', 'error'])

interface JobOptions {
  id?: string
  priority?: number
  weight?: number
  expiration?: number | null
}

interface Job {
  task: Task
  args: unknown[]
  options: JobOptions
  priority: number
  weight: number
  retryCount: number
  resolve(value: unknown): void
  reject(error: unknown): void
}

function refuse(kind: string, name: string): never {
  throw new Error(`the light scheduler does not support the ${kind} option "${name}"`)
}

/**
 * A job from `schedule`'s arguments as Bottleneck reads them: options first unless the first is
 * the task. Throws on what the light path does not implement.
 */
function jobOf(args: unknown[], resolve: Job['resolve'], reject: Job['reject']): Job {
  let options: JobOptions = noOptions
  let at = 0
  if (typeof args[0] !== 'function') {
    options = (args[0] ?? noOptions) as JobOptions
    at = 1
  }
  const task = args[at]
  if (typeof task !== 'function') throw new TypeError('schedule needs a task function')
  for (const name in options) {
    const value = options[name as keyof JobOptions]
    if (!JOB_OPTIONS.has(name) || (name === 'expiration' && value != null)) refuse('job', name)
  }
  const priority = options.priority
  return {
    task: task as Task,
    args: args.slice(at + 1),
    options,
    // Bottleneck's _sanitizePriority: a non-integer is the default, the rest clamped to 0–9.
    priority:
      priority === undefined || ~~priority !== priority
        ? DEFAULT_PRIORITY
        : Math.min(Math.max(priority, 0), PRIORITIES - 1),
    weight: options.weight ?? 1,
    retryCount: 0,
    resolve,
    reject,
  }
}

/**
 * Runs `job` once; on failure asks the `failed` listeners whether to run it again (after the number
 * of ms one returns, as Bottleneck does), else settles it. `release` is called once the job is
 * settled, before its promise is: the limiter frees the job's slot there.
 */
function attempt(events: EventsInstance, job: Job, release: (job: Job) => void): void {
  let outcome: unknown
  try {
    outcome = job.task(...job.args)
  } catch (error) {
    outcome = Promise.reject(error)
  }
  Promise.resolve(outcome).then(
    (value) => {
      release(job)
      job.resolve(value)
    },
    (error: unknown) => {
      if (!events._events.failed?.length) {
        release(job)
        job.reject(error)
        return
      }
      const options = {
        priority: DEFAULT_PRIORITY,
        weight: 1,
        expiration: null,
        id: '<no-id>',
        ...job.options,
      }
      const info = { args: job.args, options, retryCount: job.retryCount }
      void events.trigger('failed', error, info).then((retry) => {
        if (retry == null) {
          release(job)
          job.reject(error)
          return
        }
        const wait = ~~(retry as number)
        void events.trigger('retry', `Retrying ${options.id} after ${wait} ms`, info)
        job.retryCount++
        if (wait > 0) setTimeout(attempt, wait, events, job, release)
        else queueMicrotask(() => attempt(events, job, release))
      })
    },
  )
}

const released = () => {}

/**
 * The scheduler handed to plugin-throttling as `throttle.Bottleneck`: limiters and groups with
 * Bottleneck's semantics for what the plugin uses, and Bottleneck's own `Events`.
 */
export function lightBottleneck(Bottleneck: BottleneckLike) {
  const Events = Bottleneck.Events

  class Limiter {
    readonly id: string
    readonly #maxConcurrent: number | null
    readonly #minTime: number
    readonly #events: EventsInstance
    #running = 0
    /** When the next job may start (ms since the epoch); 0 while no `minTime` spacing applies. */
    #nextRequest = 0
    #queues: Job[][] | undefined
    #queued = 0
    #draining = false
    /** Set by each schedule, cleared by the group's sweep: an unused key is dropped. */
    used = true
    declare on: (name: string, listener: Listener) => this

    constructor(options: Record<string, unknown> = {}, ...invalid: unknown[]) {
      if (typeof options !== 'object' || options === null || invalid.length > 0)
        throw new TypeError('Bottleneck v2 takes a single object argument')
      for (const name in options) if (!LIMITER_OPTIONS.has(name)) refuse('limiter', name)
      this.id = String(options.id ?? '<no-id>')
      this.#maxConcurrent = (options.maxConcurrent as number | null | undefined) ?? null
      this.#minTime = (options.minTime as number | undefined) ?? 0
      this.#events = new Events(this)
    }

    schedule(...args: unknown[]): Promise<unknown> {
      this.used = true
      return new Promise((resolve, reject) => {
        const job = jobOf(args, resolve, reject)
        if (this.#queued === 0 && this.#fits(job.weight) && this.#minTime === 0 && this.#nextRequest === 0) {
          // Nothing waits, a slot is free and no spacing applies: the job starts now.
          this.#running += job.weight
          attempt(this.#events, job, this.#release)
          return
        }
        this.#queues ??= Array.from({ length: PRIORITIES }, () => [])
        this.#queues[job.priority]?.push(job)
        this.#queued++
        this.#drain()
      })
    }

    /** Jobs running (by weight) or waiting: a group drops a key only when both are none. */
    get idle(): boolean {
      return this.#running === 0 && this.#queued === 0
    }

    #fits(weight: number): boolean {
      return this.#maxConcurrent === null || this.#running + weight <= this.#maxConcurrent
    }

    readonly #release = (job: Job): void => {
      this.#running -= job.weight
      if (this.#queued > 0) this.#drain()
    }

    /** Starts waiting jobs, highest priority first, while the head fits (Bottleneck's order). */
    #drain(): void {
      if (this.#draining || !this.#queues) return
      this.#draining = true
      try {
        while (this.#queued > 0) {
          const queue = this.#queues.find((jobs) => jobs.length > 0)
          const job = queue?.[0]
          if (!queue || !job || !this.#fits(job.weight)) return
          queue.shift()
          this.#queued--
          this.#running += job.weight
          // As Bottleneck's local datastore: each start reserves the next one minTime later.
          let wait = 0
          if (this.#minTime > 0 || this.#nextRequest > 0) {
            const now = Date.now()
            wait = Math.max(this.#nextRequest - now, 0)
            this.#nextRequest = this.#minTime > 0 ? now + wait + this.#minTime : 0
          }
          if (wait > 0) setTimeout(attempt, wait, this.#events, job, this.#release)
          else attempt(this.#events, job, this.#release)
        }
      } finally {
        this.#draining = false
      }
    }
  }

  class Group {
    readonly id: string
    readonly #options: Record<string, unknown>
    readonly #timeout: number
    readonly #limiters = new Map<string, Limiter>()
    #sweep: ReturnType<typeof setInterval> | undefined

    constructor(options: Record<string, unknown> = {}) {
      const { id = 'group-key', timeout = 5 * 60 * 1000, ...limiterOptions } = options
      this.id = String(id)
      this.#timeout = Number(timeout)
      this.#options = limiterOptions
      // Refuse what a limiter would refuse now, not at the first request.
      new Limiter(limiterOptions)
    }

    key(key = ''): Limiter {
      let limiter = this.#limiters.get(key)
      if (!limiter) {
        limiter = new Limiter({ ...this.#options, id: `${this.id}-${key}` })
        this.#limiters.set(key, limiter)
        this.#sweep ??= setInterval(() => this.#dropUnused(), this.#timeout / 2)
        this.#sweep.unref?.()
      }
      return limiter
    }

    keys(): string[] {
      return [...this.#limiters.keys()]
    }

    /** Keys idle and unscheduled since the last sweep go (Bottleneck drops them after `timeout`). */
    #dropUnused(): void {
      for (const [key, limiter] of this.#limiters) {
        if (limiter.used) limiter.used = false
        else if (limiter.idle) this.#limiters.delete(key)
      }
      if (this.#limiters.size === 0) {
        clearInterval(this.#sweep)
        this.#sweep = undefined
      }
    }
  }

  return Object.assign(Limiter, { Group, Events, version: Bottleneck.version })
}

/**
 * plugin-retry builds `new Bottleneck()` for each request, from its own import: it takes no
 * scheduler option. A limiter with no limits (Bottleneck's defaults, as plugin-retry's), no chain
 * and no listeners but `failed`/`retry`/`error` runs its jobs on the light path (`attempt`): the
 * same retries as its `failed` listener decides them. Any other limiter keeps Bottleneck's path.
 * Applied once, to that exact version.
 */
export function withLightUnlimited(Bottleneck: BottleneckLike): void {
  const prototype = Bottleneck.prototype as BottleneckLike['prototype'] & { lightened?: boolean }
  if (prototype.lightened || Bottleneck.version !== '2.19.5') return
  prototype.lightened = true
  const schedule = prototype.schedule
  const names = Object.keys(prototype.storeDefaults)
  const values = names.map((name) => prototype.storeDefaults[name])
  const light = (limiter: RealLimiter): boolean => {
    const storeOptions = limiter._store.storeOptions
    if (limiter.datastore !== 'local' || limiter._limiter != null || storeOptions === undefined) return false
    for (let index = 0; index < names.length; index++)
      if (storeOptions[names[index] as string] !== values[index]) return false
    const events = limiter.Events._events
    for (const name in events) if (events[name]?.length && !LIGHT_EVENTS.has(name)) return false
    return true
  }
  prototype.schedule = function (this: RealLimiter, ...args: unknown[]) {
    if (!light(this)) return schedule.apply(this, args)
    return new Promise((resolve, reject) => {
      let job: Job
      try {
        job = jobOf(args, resolve, reject)
      } catch {
        // What the light path cannot take (an expiration), Bottleneck's own path does.
        resolve(schedule.apply(this, args))
        return
      }
      attempt(this.Events, job, released)
    })
  }
}
