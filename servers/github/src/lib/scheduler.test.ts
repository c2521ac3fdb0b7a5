import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import Bottleneck from 'bottleneck/light.js'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { GitHubClients } from './client.js'
import { type BottleneckLike, lightBottleneck } from './scheduler.js'

const Light = lightBottleneck(Bottleneck as unknown as BottleneckLike)

/** A task that runs until `finish()` is called, and says when it started. */
function held<T>(value: T) {
  let finish!: () => void
  const started = { at: 0, yes: false }
  const done = new Promise<void>((resolve) => {
    finish = resolve
  })
  const task = async () => {
    started.yes = true
    started.at = performance.now()
    await done
    return value
  }
  return { task, finish, started }
}

const settled = () => new Promise((resolve) => setImmediate(resolve))

describe('the light scheduler', () => {
  it('resolves with what the task returns and rejects with what it throws', async () => {
    const limiter = new Light()
    expect(await limiter.schedule((a: unknown, b: unknown) => `${a}${b}`, 'x', 'y')).toBe('xy')
    await expect(
      limiter.schedule(() => {
        throw new Error('thrown')
      }),
    ).rejects.toThrow('thrown')
    await expect(limiter.schedule({}, async () => Promise.reject(new Error('rejected')))).rejects.toThrow(
      'rejected',
    )
  })

  it('runs at most maxConcurrent jobs at once; the next starts when one ends', async () => {
    const limiter = new Light({ maxConcurrent: 2 })
    const jobs = [held(1), held(2), held(3)]
    const results = jobs.map((job) => limiter.schedule(job.task))
    await settled()
    expect(jobs.map((job) => job.started.yes)).toEqual([true, true, false])
    jobs[1]?.finish()
    await settled()
    expect(jobs[2]?.started.yes).toBe(true)
    for (const job of jobs) job.finish()
    expect(await Promise.all(results)).toEqual([1, 2, 3])
  })

  it('starts a weight-0 job on a full limiter and queued jobs by priority (plugin-throttling’s retries)', async () => {
    const limiter = new Light({ maxConcurrent: 1 })
    const order: string[] = []
    const first = held('first')
    const running = limiter.schedule(first.task)
    const later = limiter.schedule({ priority: 5 }, async () => order.push('priority 5'))
    const sooner = limiter.schedule({ priority: 1 }, async () => order.push('priority 1'))
    const retry = limiter.schedule({ priority: 0, weight: 0 }, async () => order.push('weight 0'))
    await retry
    expect(order).toEqual(['weight 0'])
    first.finish()
    await Promise.all([running, later, sooner])
    expect(order).toEqual(['weight 0', 'priority 1', 'priority 5'])
  })

  it('starts the n-th job no sooner than n × minTime after the first, the first at once', async () => {
    const limiter = new Light({ maxConcurrent: 1, minTime: 60 })
    const starts: number[] = []
    const scheduled = performance.now()
    await Promise.all([1, 2, 3].map(() => limiter.schedule(async () => starts.push(performance.now()))))
    // As Bottleneck's datastore: each start reserves the next slot minTime later, so a timer that
    // fires late shortens the gap after it, never the total. Timers may fire 1 ms early.
    expect(starts[0]! - scheduled).toBeLessThan(30)
    expect(starts[1]! - scheduled).toBeGreaterThanOrEqual(58)
    expect(starts[2]! - scheduled).toBeGreaterThanOrEqual(118)
  })

  it('retries as a failed listener decides, holding the job’s slot, and announces each retry', async () => {
    const limiter = new Light({ maxConcurrent: 1 })
    const seen: Array<{ retryCount: number; args: unknown[] }> = []
    const retries: string[] = []
    limiter.on('failed', (_error, given) => {
      const info = given as { retryCount: number; args: unknown[] }
      seen.push({ retryCount: info.retryCount, args: info.args })
      return info.retryCount < 2 ? 20 : undefined
    })
    limiter.on('retry', (message) => retries.push(String(message)))
    let attempts = 0
    let otherStarted = false
    const failing = limiter.schedule(
      { id: 'job' },
      async (argument: string) => {
        attempts++
        // While this job waits for its retry, the other may not take its slot.
        expect(otherStarted).toBe(false)
        throw new Error(`attempt ${attempts} with ${argument}`)
      },
      'a',
    )
    const other = limiter.schedule(async () => {
      otherStarted = true
    })
    await expect(failing).rejects.toThrow('attempt 3 with a')
    await other
    expect(seen).toEqual([
      { retryCount: 0, args: ['a'] },
      { retryCount: 1, args: ['a'] },
      { retryCount: 2, args: ['a'] },
    ])
    expect(retries).toEqual(['Retrying job after 20 ms', 'Retrying job after 20 ms'])
  })

  it('refuses options it does not implement instead of ignoring them', async () => {
    expect(() => new Light({ reservoir: 10 })).toThrow('"reservoir"')
    expect(() => new Light.Group({ highWater: 1 })).toThrow('"highWater"')
    await expect(new Light().schedule({ expiration: 1000 }, async () => 1)).rejects.toThrow('"expiration"')
  })

  it('keeps one limiter per group key, independent of the others', async () => {
    const group = new Light.Group({ id: 'writes', maxConcurrent: 1 })
    expect(group.key('a')).toBe(group.key('a'))
    expect(group.key('a').id).toBe('writes-a')
    const a = held('a')
    const running = group.key('a').schedule(a.task)
    // Key a is full; key b (another token) is not held up by it.
    expect(await group.key('b').schedule(async () => 'b')).toBe('b')
    a.finish()
    expect(await running).toBe('a')
  })

  it('drops a key unused for the group’s timeout, never one with a job running', async () => {
    vi.useFakeTimers()
    try {
      const group = new Light.Group({ timeout: 1000 })
      const busy = held('busy')
      const running = group.key('busy').schedule(busy.task)
      await group.key('idle').schedule(async () => 1)
      await vi.advanceTimersByTimeAsync(1000)
      expect(group.keys()).toEqual(['busy'])
      busy.finish()
      await running
      await vi.advanceTimersByTimeAsync(1000)
      expect(group.keys()).toEqual([])
    } finally {
      vi.useRealTimers()
    }
  })
})

describe('the plugins on the light scheduler (real Octokit, plugin-retry, plugin-throttling)', () => {
  it('sends no request through Bottleneck’s own queue, retries included', async () => {
    let requests = 0
    const { url } = await api((response) => {
      // The second request of each pair fails once: plugin-retry retries it.
      const status = ++requests % 3 === 2 ? 502 : 200
      response.writeHead(status, { 'content-type': 'application/json' })
      response.end(status === 200 ? '{"number":1}' : '{"message":"Bad gateway"}')
    })
    const octokit = await clientsFor(url).get('token')
    const receive = vi.spyOn(
      (Bottleneck as unknown as { prototype: { _receive(): unknown } }).prototype,
      '_receive',
    )
    try {
      for (let index = 0; index < 4; index++) {
        expect((await octokit.rest.issues.get({ owner: 'o', repo: 'r', issue_number: 1 })).data.number).toBe(
          1,
        )
      }
      expect(requests).toBe(6)
      expect(receive).not.toHaveBeenCalled()
    } finally {
      receive.mockRestore()
    }
  })

  it('leaves Bottleneck’s own path to a limiter with limits or with other listeners', async () => {
    await clientsFor('http://127.0.0.1:9').get('token') // loads the plugins and withLightUnlimited
    const Real = Bottleneck as unknown as new (
      options?: Record<string, unknown>,
    ) => {
      on(name: string, listener: () => void): void
      schedule<T>(task: () => Promise<T>): Promise<T>
    }
    const receive = vi.spyOn(
      (Bottleneck as unknown as { prototype: { _receive(): unknown } }).prototype,
      '_receive',
    )
    try {
      const listened = new Real()
      const done: string[] = []
      listened.on('done', () => done.push('done'))
      expect(await listened.schedule(async () => 1)).toBe(1)
      expect(await new Real({ maxConcurrent: 1 }).schedule(async () => 2)).toBe(2)
      expect(receive).toHaveBeenCalledTimes(2)
      expect(done).toEqual(['done'])
      // plugin-retry's shape: no limits, a failed listener only.
      const retried = new Real()
      retried.on('failed', () => undefined)
      expect(await retried.schedule(async () => 3)).toBe(3)
      expect(receive).toHaveBeenCalledTimes(2)
    } finally {
      receive.mockRestore()
    }
  })

  it('lets at most 10 reads of one token reach the API at once, and answers all 12', async () => {
    const waiting: ServerResponse[] = []
    let most = 0
    let received = 0
    const { url } = await api((response) => {
      received++
      waiting.push(response)
      most = Math.max(most, waiting.length)
      // Held until 10 are open (then the last 2): an 11th open request would show in `most`.
      if (waiting.length < 10 && received < 12) return
      setTimeout(() => {
        for (const answer of waiting.splice(0)) {
          answer.writeHead(200, { 'content-type': 'application/json' })
          answer.end('{"number":1}')
        }
      }, 20)
    })
    const octokit = await clientsFor(url).get('token')
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => octokit.rest.issues.get({ owner: 'o', repo: 'r', issue_number: 1 })),
    )
    expect(answers).toHaveLength(12)
    expect(most).toBe(10)
  })

  it('starts one token’s writes 1 s apart (the write group’s minTime), another token’s at once', async () => {
    const arrivals: Array<{ token: string; at: number }> = []
    const { url } = await api((response, request) => {
      arrivals.push({ token: String(request.headers.authorization), at: performance.now() })
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end('{"number":1}')
    })
    const clients = clientsFor(url)
    const [a, b] = await Promise.all([clients.get('token-a'), clients.get('token-b')])
    // An issue update is a write that triggers no notification (that group would space them 3 s).
    const update = (octokit: typeof a, title: string) =>
      octokit.rest.issues.update({ owner: 'o', repo: 'r', issue_number: 1, title })
    await Promise.all([update(a, 'a1'), update(a, 'a2'), update(b, 'b1')])
    const ofA = arrivals.filter((arrival) => arrival.token === 'token token-a')
    const ofB = arrivals.filter((arrival) => arrival.token === 'token token-b')
    expect(ofA).toHaveLength(2)
    expect(ofB).toHaveLength(1)
    // Spacing is of the starts; arrival also holds each request's own connection set-up.
    expect(ofA[1]!.at - ofA[0]!.at).toBeGreaterThanOrEqual(900)
    expect(ofB[0]!.at - ofA[0]!.at).toBeLessThan(500)
  })
})

/** A loopback API answering every request with `reply`. */
async function api(reply: (response: ServerResponse, request: import('node:http').IncomingMessage) => void) {
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => reply(response, request))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  opened.push(server)
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}
const opened: ReturnType<typeof createServer>[] = []
afterEach(() => {
  for (const server of opened.splice(0)) server.close()
})
const clientsFor = (baseUrl: string) =>
  new GitHubClients({ baseUrl, userAgent: 'test', retryAfterBaseMs: 1, log: () => {} })
