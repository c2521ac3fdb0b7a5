import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { FakeGitHub } from '../../../servers/github/test/fake-github.js'
import { startFakeSlack } from '../../../servers/slack/test/fake-slack.js'
import type { Answer } from '../src/fuzz.js'
import { record } from '../src/report.js'
import { blackHole, GITHUB_TOKEN, githubRoutes, SERVERS, slackEnv, startCluster } from '../src/servers.js'
import { type Command, familyOf, HttpPeer, killAll, running, StdioPeer } from '../src/wire.js'

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})
afterAll(() => {
  expect(killAll()).toBe(0)
})

const bin = (slug: string) => new URL(`../../../servers/${slug}/dist/index.js`, import.meta.url).pathname
const isToolError = (answer: Answer) => (answer.result as { isError?: boolean } | undefined)?.isError === true
const ok = (answer: Answer) => answer.error === undefined && !isToolError(answer)
const textOf = (answer: Answer) =>
  ((answer.result as { content?: Array<{ text?: string }> } | undefined)?.content ?? [])
    .map((block) => block.text ?? '')
    .join('\n')

let nextId = 0
const call = (peer: StdioPeer, name: string, args: Record<string, unknown> = {}, timeoutMs = 60_000) =>
  peer.request(`c${++nextId}`, 'tools/call', { name, arguments: args }, timeoutMs)

async function stdio(command: Command): Promise<StdioPeer> {
  const peer = new StdioPeer(command)
  cleanups.push(() => peer.end())
  await peer.initialize()
  return peer
}

describe('postgres restarted mid-run', () => {
  it('reports the outage as a tool error and recovers without a restart of the server', async () => {
    const { postgres, url } = await startCluster()
    cleanups.push(() => postgres.stop())
    const peer = await stdio({
      command: process.execPath,
      args: [bin('postgres')],
      env: { DATABASE_URL: url },
    })
    expect(ok(await call(peer, 'query', { sql: 'SELECT 1' }))).toBe(true)
    // Calls keep coming while the cluster goes down and comes back.
    let stop = false
    const outcomes: string[] = []
    const load = (async () => {
      while (!stop) {
        const answer = await call(peer, 'query', { sql: 'SELECT count(*) FROM shop.orders' })
        outcomes.push(
          ok(answer)
            ? 'ok'
            : answer.error
              ? `rpc ${answer.error.code}`
              : (textOf(answer).split(':')[0] ?? ''),
        )
      }
    })()
    await postgres.restart()
    // After the restart: the pool must hand out working connections again.
    let recovered = false
    for (let attempt = 0; attempt < 40 && !recovered; attempt++) {
      recovered = ok(await call(peer, 'query', { sql: 'SELECT 1' }))
      if (!recovered) await new Promise((resolve) => setTimeout(resolve, 250))
    }
    stop = true
    await load
    record('faults', {
      case: 'postgres restart',
      calls: outcomes.length,
      ok: outcomes.filter((outcome) => outcome === 'ok').length,
      failedAs: [...new Set(outcomes.filter((outcome) => outcome !== 'ok'))],
    })
    expect(recovered).toBe(true)
    // Failed calls during the outage are tool errors the model can act on, never protocol errors.
    for (const outcome of outcomes) expect(['ok', 'unavailable', 'timeout']).toContain(outcome)
    expect(ok(await call(peer, 'query', { sql: 'SELECT count(*) FROM shop.orders' }))).toBe(true)
    expect(peer.impure).toEqual([])
    const ended = await peer.end()
    expect(ended).toMatchObject({ code: 0, killed: false })
  })
})

describe('GitHub answering 429, 5xx, slowly and with garbage', () => {
  it('turns each into a tool error or a retried success, and serves the next call', async () => {
    const fake = await FakeGitHub.start()
    cleanups.push(() => fake.close())
    const peer = await stdio({
      command: process.execPath,
      args: [bin('github')],
      env: { GITHUB_TOKEN, GITHUB_API_URL: fake.url, MCP_TOOL_TIMEOUT_MS: '3000' },
    })
    const faults: Array<[string, Parameters<FakeGitHub['once']>[2]]> = [
      [
        '429 with Retry-After',
        {
          status: 429,
          headers: { 'retry-after': '1', 'x-ratelimit-remaining': '0' },
          body: { message: 'rate limited' },
        },
      ],
      [
        '403 secondary rate limit',
        {
          status: 403,
          headers: { 'retry-after': '120' },
          body: { message: 'You have exceeded a secondary rate limit' },
        },
      ],
      ['500', { status: 500, body: { message: 'Server Error' } }],
      [
        '502 with an HTML page',
        { status: 502, headers: { 'content-type': 'text/html' }, body: '<html>Bad gateway</html>' },
      ],
      ['503', { status: 503, body: { message: 'Service Unavailable' } }],
      ['garbage JSON', { status: 200, body: '{"login": "half' }],
      ['an empty 200', { status: 200, body: '' }],
      [
        'slower than the tool timeout',
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 6000))
          return { body: { login: 'late' } }
        },
      ],
    ]
    const outcomes: Record<string, string> = {}
    for (const [label, reply] of faults) {
      fake.reset()
      fake.once('GET', '/user', reply)
      githubRoutes(fake)
      const answer = await call(peer, 'get_me')
      outcomes[label] = ok(answer)
        ? 'ok (retried)'
        : answer.error
          ? `rpc ${answer.error.code}`
          : (textOf(answer).split('\n')[0]?.slice(0, 120) ?? '')
      expect(answer.error, label).toBeUndefined()
      // A backend failure is something the model can act on (retry, wait), never `internal`.
      expect(outcomes[label], label).not.toMatch(/^internal/)
      // And the server is fine for the next call.
      expect(ok(await call(peer, 'get_me')), `after ${label}`).toBe(true)
    }
    record('faults', { case: 'github fake faults', outcomes })
    expect(peer.impure).toEqual([])
    expect(await peer.end()).toMatchObject({ code: 0, killed: false })
  })
})

describe('Slack answering 429, 5xx, slowly and with garbage', () => {
  it('turns each into a tool error or a retried success, and serves the next call', async () => {
    const fake = await startFakeSlack()
    cleanups.push(() => fake.close())
    const peer = await stdio({ command: process.execPath, args: [bin('slack')], env: slackEnv(fake) })
    const faults = [
      ['429 with Retry-After', { method: 'conversations.info', status: 429, retryAfter: 1 }],
      ['500', { method: 'conversations.info', status: 500 }],
      ['503 with an HTML page', { method: 'conversations.info', status: 503, body: '<html>down</html>' }],
      ['garbage JSON', { method: 'conversations.info', status: 200, body: '{"ok": tru' }],
      ['ok:false fatal_error', { method: 'conversations.info', error: 'fatal_error' }],
    ] as const
    const outcomes: Record<string, string> = {}
    for (const [label, fault] of faults) {
      fake.fail({ ...fault })
      const answer = await call(peer, 'get_channel_info', { channel: 'C0GENERAL' })
      outcomes[label] = ok(answer)
        ? 'ok (retried)'
        : answer.error
          ? `rpc ${answer.error.code}`
          : (textOf(answer).split('\n')[0]?.slice(0, 120) ?? '')
      expect(answer.error, label).toBeUndefined()
      // A backend failure is something the model can act on (retry, wait), never `internal`.
      expect(outcomes[label], label).not.toMatch(/^internal/)
      expect(ok(await call(peer, 'get_channel_info', { channel: 'C0GENERAL' })), `after ${label}`).toBe(true)
    }
    await peer.end()
    // Slow: a Slack API that accepts the connection and never answers, against a 2 s tool timeout.
    const hole = await blackHole()
    cleanups.push(() => hole.close())
    const slow = await stdio({
      command: process.execPath,
      args: [bin('slack')],
      env: { ...slackEnv(fake), SLACK_API_URL: hole.url, MCP_TOOL_TIMEOUT_MS: '2000' },
    })
    const late = await call(slow, 'get_channel_info', { channel: 'C0GENERAL' })
    outcomes['never answers'] = textOf(late).split('\n')[0]?.slice(0, 120) ?? ''
    expect(isToolError(late)).toBe(true)
    expect(textOf(late)).toMatch(/^timeout/)
    expect((await slow.request('alive', 'ping')).result).toEqual({})
    record('faults', { case: 'slack fake faults', outcomes })
    expect(await slow.end()).toMatchObject({ code: 0, killed: false })
  })
})

describe.each(SERVERS.map((entry) => [entry.name, entry] as const))(
  '%s when the client vanishes mid-call',
  (name, entry) => {
    it('exits cleanly when stdin closes during a call, leaving no process behind', async () => {
      const prepared = await entry.prepare()
      cleanups.push(() => prepared.stop())
      const slow = prepared.slow
      const peer = new StdioPeer({ ...prepared.command, env: { ...prepared.command.env, ...slow.env } })
      await peer.initialize()
      if (slow.warmUp) {
        const warm = await call(peer, slow.warmUp.name, slow.warmUp.arguments)
        expect(ok(warm), JSON.stringify(warm).slice(0, 500)).toBe(true)
      }
      await peer.send(JSON.stringify({ jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: slow.call }))
      await new Promise((resolve) => setTimeout(resolve, 300))
      const family = familyOf(peer.pid)
      const started = performance.now()
      const ended = await peer.end(15_000)
      const ms = Math.round(performance.now() - started)
      record('faults', {
        case: 'stdin closed mid-call',
        server: name,
        exit: ended,
        ms,
        processes: family.length,
      })
      expect(ended).toMatchObject({ code: 0, killed: false })
      expect(family.filter(running)).toEqual([])
      expect(peer.impure).toEqual([])
    })

    it('serves the next call after an HTTP client drops its connection mid-call, then stops on SIGTERM', async () => {
      const prepared = await entry.prepare()
      cleanups.push(() => prepared.stop())
      const slow = prepared.slow
      const peer = await HttpPeer.start({
        ...prepared.command,
        env: { ...prepared.command.env, ...slow.env },
      })
      cleanups.push(() => peer.close())
      await peer.initialize()
      if (slow.warmUp) {
        const warm = await peer.post(
          JSON.stringify({ jsonrpc: '2.0', id: 'warm', method: 'tools/call', params: slow.warmUp }),
        )
        expect(ok(warm.answers[0] as Answer), warm.raw.slice(0, 500)).toBe(true)
      }
      const dropped = new AbortController()
      const pending = peer
        .post(JSON.stringify({ jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: slow.call }), {
          signal: dropped.signal,
        })
        .catch((error: Error) => error)
      await new Promise((resolve) => setTimeout(resolve, 300))
      dropped.abort()
      await pending
      // A fresh client on the same server is served.
      const next = HttpPeer.attach(peer)
      await next.initialize()
      const ping = await next.post(JSON.stringify({ jsonrpc: '2.0', id: 'ping', method: 'ping' }))
      expect(ping.answers[0]?.result, ping.raw.slice(0, 500)).toEqual({})
      if (!slow.env) {
        const fresh = await next.post(
          JSON.stringify({ jsonrpc: '2.0', id: 'next', method: 'tools/call', params: prepared.cheapCall }),
        )
        expect(ok(fresh.answers[0] as Answer), fresh.raw.slice(0, 500)).toBe(true)
      }
      const family = familyOf(peer.pid)
      const ended = await peer.close(15_000)
      record('faults', { case: 'HTTP connection dropped mid-call', server: name, exit: ended })
      expect(ended.killed, peer.stderr.slice(-1500)).toBe(false)
      expect(family.filter(running)).toEqual([])
      expect(peer.stdout).toBe('')
    })
  },
)
