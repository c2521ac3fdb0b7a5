import { connectHttp, type TestClient } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Nginx, type Replica, startCluster, stopAll } from '../src/harness.js'

// 2025-era sessions across three replicas sharing Redis, behind round-robin nginx: consecutive
// requests of one session land on different replicas, and the session behaves as on one process.

let replicas: Replica[]
let nginx: Nginx

beforeAll(async () => {
  ;({ replicas, nginx } = await startCluster(3))
})
afterAll(stopAll)

const structured = async (client: TestClient) =>
  (await client.callTool({ name: 'whoami' })).structuredContent as {
    pid: number
    session: string
    client: string
    capabilities: string[]
  }

describe.each([['v2' as const], ['v1' as const]])('a %s client session behind nginx', (generation) => {
  it('is served by every replica with the same session, client info and capabilities', async () => {
    const connection = await connectHttp(nginx.url, {
      generation,
      onElicit: () => ({ action: 'accept', content: {} }),
      roots: [{ uri: 'file:///srv/a' }],
    })
    try {
      const seen = []
      for (let call = 0; call < 6; call++) seen.push(await structured(connection.client))
      const pids = new Set(seen.map((who) => who.pid))
      expect(pids).toEqual(new Set(replicas.map((replica) => replica.pid)))
      expect(new Set(seen.map((who) => who.session)).size).toBe(1)
      expect(seen[0]?.session).toMatch(/^[0-9a-f-]{36}$/)
      for (const who of seen) {
        expect(who.client).toBe('keel-test-client 1.0.0')
        expect(who.capabilities).toEqual(['elicitation', 'roots'])
      }
    } finally {
      await connection.close()
    }
  })

  it('lists tools and reports every progress step of a call, in order', async () => {
    const connection = await connectHttp(nginx.url, { generation })
    try {
      const { tools } = await connection.client.listTools()
      expect(tools.map((tool) => tool.name).sort()).toEqual(
        [
          'ask_model',
          'ask_name',
          'bump',
          'count',
          'list_roots',
          'open_counter',
          'talk',
          'tally',
          'whoami',
        ].sort(),
      )
      const steps: number[] = []
      const result = await connection.client.callTool(
        { name: 'count', arguments: { to: 20, step_ms: 5 } },
        { onprogress: (progress) => steps.push(progress.progress as number) },
      )
      expect(result.content[0].text).toMatch(/^counted to 20 on \d+$/)
      expect(steps).toEqual(Array.from({ length: 20 }, (_, index) => index + 1))
    } finally {
      await connection.close()
    }
  })

  it('relays answers to elicitation, sampling and roots to the replica whose call asked', async () => {
    const connection = await connectHttp(nginx.url, {
      generation,
      onElicit: (params) =>
        params.message === 'Your name?'
          ? { action: 'accept', content: { name: 'Ada' } }
          : { action: 'accept', content: { colour: 'teal' } },
      onSample: () => ({ role: 'assistant', content: { type: 'text', text: 'hello' }, model: 'test' }),
      roots: [{ uri: 'file:///srv/a' }, { uri: 'file:///srv/b' }],
    })
    try {
      // Several times, so the answers reach replicas other than the asking one.
      for (let round = 0; round < 3; round++) {
        const named = await connection.client.callTool({ name: 'ask_name' }, { timeout: 20_000 })
        expect(named.content[0].text).toMatch(/^Ada likes teal \(asked by \d+\)$/)
        const sampled = await connection.client.callTool(
          { name: 'ask_model', arguments: { prompt: 'hi' } },
          { timeout: 20_000 },
        )
        expect(sampled.content[0].text).toBe('model said: hello')
        const roots = await connection.client.callTool({ name: 'list_roots' }, { timeout: 20_000 })
        expect(roots.content[0].text).toBe('file:///srv/a,file:///srv/b')
      }
      // Some of those answers reached a replica other than the one that asked, and were relayed.
      const logs = replicas.map((replica) => replica.stderr()).join('\n')
      expect(logs).toMatch(/relayed an answer to the replica that asked/)
      expect(logs).toMatch(/restored a session opened on another replica/)
    } finally {
      await connection.close()
    }
  })

  it('keeps the log level the client set, whichever replica serves the next call', async () => {
    const lines: string[] = []
    const connection = await connectHttp(nginx.url, {
      generation,
      onLog: (params) => lines.push(String((params.data as { message?: string })?.message ?? params.data)),
    })
    try {
      await connection.client.setLoggingLevel('debug')
      for (let call = 0; call < 3; call++) await connection.client.callTool({ name: 'talk' })
      expect(lines.filter((line) => line.includes('debug line'))).toHaveLength(3)
      expect(lines.filter((line) => line.includes('info line'))).toHaveLength(3)
      await connection.client.setLoggingLevel('error')
      lines.length = 0
      for (let call = 0; call < 3; call++) await connection.client.callTool({ name: 'talk' })
      expect(lines).toEqual([])
    } finally {
      await connection.close()
    }
  })
})

describe('session boundaries across replicas', () => {
  it('answers 404 on every replica for a session id that was never opened', async () => {
    for (const replica of replicas) {
      const response = await fetch(replica.url, {
        method: 'POST',
        headers: {
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
          'mcp-session-id': '00000000-0000-4000-8000-000000000000',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
      expect(response.status).toBe(404)
      expect(((await response.json()) as { error: { code: number } }).error.code).toBe(-32001)
    }
  })

  it('ends a session on every replica when the client deletes it', async () => {
    const { openSession, post } = await import('./wire.js')
    const session = await openSession(nginx.url)
    // Touch it through every replica first, so each holds an instance of it.
    for (let call = 0; call < 3; call++) {
      const response = await post(nginx.url, session, { jsonrpc: '2.0', id: call + 1, method: 'ping' })
      expect(response.status).toBe(200)
      await response.text()
    }
    const deleted = await fetch(nginx.url, {
      method: 'DELETE',
      headers: { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
    })
    expect(deleted.status).toBe(200)
    for (const replica of replicas) {
      const response = await post(replica.url, session, { jsonrpc: '2.0', id: 9, method: 'ping' })
      expect(response.status).toBe(404)
      await response.text()
    }
  })

  it("never replays one session's events to another (a foreign Last-Event-ID names no stream)", async () => {
    const { openSession, post, resume, sseEvents } = await import('./wire.js')
    const victim = await openSession(nginx.url)
    const call = await post(nginx.url, victim, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'count',
        arguments: { to: 3, step_ms: 1 },
        _meta: { progressToken: 'secret-progress' },
      },
    })
    let eventId: string | undefined
    for await (const event of sseEvents(call)) eventId = event.id ?? eventId
    expect(eventId).toBeDefined()
    const attacker = await openSession(nginx.url)
    for (const replica of replicas) {
      const response = await resume(replica.url, attacker, eventId!)
      expect(response.status).toBe(404)
      expect(await response.text()).not.toContain('secret-progress')
    }
    // The victim itself can resume it, from any replica.
    const own = await resume(replicas[0]!.url, victim, eventId!.replace(/~.*$/, '~0-0'))
    expect(own.status).toBe(200)
    expect(await own.text()).toContain('secret-progress')
  })
})

describe('one standalone stream per session across replicas', () => {
  it('refuses a second GET stream on any replica with 409, and lets a resumed one take over', async () => {
    const { openSession, resume, sseEvents } = await import('./wire.js')
    const session = await openSession(nginx.url)
    const headers = {
      accept: 'text/event-stream',
      'mcp-session-id': session,
      'mcp-protocol-version': '2025-11-25',
    }
    const leave = new AbortController()
    const first = await fetch(replicas[0]!.url, { headers, signal: leave.signal })
    expect(first.status).toBe(200)
    const events = sseEvents(first)[Symbol.asyncIterator]()
    const primed = await events.next()
    const primingId = primed.value?.id as string
    expect(primingId).toMatch(/^_GET_stream~\d+-\d+$/)
    for (const replica of replicas) {
      const second = await fetch(replica.url, { headers })
      expect(second.status).toBe(409)
      await second.text()
    }
    // A client that lost its stream resumes it (with Last-Event-ID): it takes over.
    const resumed = await resume(replicas[1]!.url, session, primingId)
    expect(resumed.status).toBe(200)
    await resumed.body?.cancel()
    leave.abort()
  })
})

describe('client notifications across replicas', () => {
  it('cancels a call running on one replica with a cancellation that reaches another', async () => {
    const { openSession, post, replicaIdOf, sseEvents } = await import('./wire.js')
    const session = await openSession(nginx.url)
    const call = await post(nginx.url, session, {
      jsonrpc: '2.0',
      id: 41,
      method: 'tools/call',
      params: { name: 'count', arguments: { to: 400, step_ms: 50 }, _meta: { progressToken: 'c' } },
    })
    const runner = replicas.find((replica) => replicaIdOf(replica) === call.headers.get('x-keel-replica'))!
    const other = replicas.find((replica) => replica !== runner)!
    const events = sseEvents(call)[Symbol.asyncIterator]()
    let progress = 0
    while (progress < 3) {
      const next = await events.next()
      if (next.done) throw new Error('the call ended early')
      if (next.value.data.includes('notifications/progress')) progress++
    }
    const cancelled = await post(other.url, session, {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 41, reason: 'user gave up' },
    })
    expect(cancelled.status).toBe(202)
    for (
      let wait = 0;
      wait < 200 && !/tool call tool=count .*outcome=error:cancelled/.test(runner.stderr());
      wait++
    )
      await new Promise((wake) => setTimeout(wake, 50))
    expect(runner.stderr()).toMatch(/tool call tool=count .*outcome=error:cancelled/)
    await events.return?.(undefined)
  })
})
