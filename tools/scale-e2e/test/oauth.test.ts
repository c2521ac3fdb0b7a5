import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ClientName, TestIssuer } from '../../../packages/core/test/oauth-issuer.js'
import { type Nginx, type Replica, stopAll } from '../src/harness.js'
import { oauthClient, startOAuthCluster } from './oauth-cluster.js'
import { ACCEPT, type SseEvent, sseEvents } from './wire.js'

// OAuth and Redis sessions together: a real authorization server (oidc-provider, the one core's
// OAuth tests use) on loopback, Redis, three replicas started with `--auth-issuer` and
// `--redis-url`, and round-robin nginx in front. A session opened under OAuth belongs to the
// subject that opened it on every replica, and the write scope is enforced by every replica.

let issuer: TestIssuer
let replicas: Replica[]
let nginx: Nginx
const tokens = new Map<ClientName, string>()

beforeAll(async () => {
  ;({ issuer, replicas, nginx } = await startOAuthCluster())
  for (const client of ['writer', 'reader', 'opaque-writer'] as const)
    tokens.set(client, await issuer.token(client))
})
afterAll(async () => {
  await stopAll()
  await issuer?.close()
})

const token = (client: ClientName): string => {
  const value = tokens.get(client)
  if (!value) throw new Error(`no token for ${client}`)
  return value
}

/** Every replica directly, then nginx: where a request may land. */
const everywhere = (): Array<[string, string]> => [
  ...replicas.map((replica, index): [string, string] => [`replica ${index + 1}`, replica.url]),
  ['nginx', nginx.url],
]

function headers(client: ClientName, session?: string): Record<string, string> {
  return {
    accept: ACCEPT,
    'content-type': 'application/json',
    'mcp-protocol-version': '2025-11-25',
    authorization: `Bearer ${token(client)}`,
    ...(session ? { 'mcp-session-id': session } : {}),
  }
}

/** Opens a 2025-11-25 session as `client` at `url` with a raw initialize; returns its id. */
async function openSession(url: string, client: ClientName): Promise<string> {
  const response = await fetch(url, {
    method: 'POST',
    headers: headers(client),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'wire', version: '1' } },
    }),
  })
  const session = response.headers.get('mcp-session-id')
  const text = await response.text()
  if (response.status !== 200 || !session) throw new Error(`initialize failed: ${response.status} ${text}`)
  const initialized = await post(url, client, session, {
    jsonrpc: '2.0',
    method: 'notifications/initialized',
  })
  expect(initialized.status).toBe(202)
  return session
}

async function post(url: string, client: ClientName, session: string, message: unknown) {
  const response = await fetch(url, {
    method: 'POST',
    headers: headers(client, session),
    body: JSON.stringify(message),
  })
  return { status: response.status, headers: response.headers, text: await response.text() }
}

const call = (
  id: number,
  name: string,
  args: Record<string, unknown> = {},
  meta?: Record<string, unknown>,
) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
})

/** The JSON-RPC messages of a POST answer, whether it came as JSON or as an SSE stream. */
function messagesOf(answer: { headers: Headers; text: string }): Array<Record<string, unknown>> {
  if ((answer.headers.get('content-type') ?? '').includes('application/json'))
    return [JSON.parse(answer.text)].flat()
  return answer.text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line.length > 6)
    .map((line) => JSON.parse(line.slice(6)))
}

/** The structured whoami answer of a call made as `client` in `session` at `url`. */
async function whoami(url: string, client: ClientName, session: string) {
  const answer = await post(url, client, session, call(1, 'whoami'))
  expect(answer.status, answer.text).toBe(200)
  const result = messagesOf(answer).find((message) => 'result' in message)?.result as {
    structuredContent: { pid: number; session: string; subject: string }
  }
  return result.structuredContent
}

/** A GET stream of `session` as `client` at `url`, optionally resuming after `lastEventId`. */
async function stream(url: string, client: ClientName, session: string, lastEventId?: string) {
  const controller = new AbortController()
  const response = await fetch(url, {
    headers: {
      ...headers(client, session),
      accept: 'text/event-stream',
      ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
    },
    signal: controller.signal,
  })
  return { response, close: () => controller.abort() }
}

const notFound = (text: string) => expect(JSON.parse(text).error.code).toBe(-32001)

describe('the SDK v2 client with its own OAuth support, through nginx', () => {
  it('gets a token by client credentials and runs a whole session across all three replicas', async () => {
    const { mcp, transport } = oauthClient(issuer, nginx.url, 'writer', { elicitation: {} })
    const answers: Record<string, Record<string, string>> = {
      'Your name?': { name: 'Ada' },
      'Your colour?': { colour: 'teal' },
    }
    mcp.setRequestHandler('elicitation/create', (request) => ({
      action: 'accept',
      content: answers[request.params.message] ?? {},
    }))
    const tokenRequests = issuer.hits.get('/token') ?? 0
    await mcp.connect(transport)
    try {
      // The client found the issuer through the replicas' metadata and got its own token.
      expect(issuer.hits.get('/token') ?? 0).toBeGreaterThan(tokenRequests)
      const { tools } = await mcp.listTools()
      expect(tools.map((tool) => tool.name)).toContain('tally')
      const seen = []
      for (let index = 0; index < 6; index++) {
        const result = await mcp.callTool({ name: 'whoami' })
        seen.push(result.structuredContent as { pid: number; session: string; subject: string })
      }
      expect(new Set(seen.map((who) => who.pid))).toEqual(new Set(replicas.map((replica) => replica.pid)))
      expect(new Set(seen.map((who) => who.session)).size).toBe(1)
      expect(seen[0]?.session).toMatch(/^[0-9a-f-]{36}$/)
      expect(new Set(seen.map((who) => who.subject))).toEqual(new Set(['writer']))
      // The writer holds the write scope: its writes run, on whichever replica.
      for (let index = 0; index < 3; index++) {
        const result = await mcp.callTool({ name: 'tally' })
        expect(result.isError).toBeFalsy()
        expect((result.content[0] as { text: string }).text).toMatch(/^tally \d+ on \d+$/)
      }
      const progress: number[] = []
      const counted = await mcp.callTool(
        { name: 'count', arguments: { to: 10, step_ms: 5 } },
        { onprogress: (update) => progress.push(update.progress) },
      )
      expect((counted.content[0] as { text: string }).text).toMatch(/^counted to 10 on \d+$/)
      expect(progress).toEqual(Array.from({ length: 10 }, (_, index) => index + 1))
      // Answers to the server's questions reach the replica that asked, whichever replica nginx picks.
      for (let round = 0; round < 3; round++) {
        const named = await mcp.callTool({ name: 'ask_name' }, { timeout: 20_000 })
        expect((named.content[0] as { text: string }).text).toMatch(/^Ada likes teal \(asked by \d+\)$/)
      }
      const logs = replicas.map((replica) => replica.stderr()).join('\n')
      expect(logs).toMatch(/restored a session opened on another replica/)
      expect(logs).toMatch(/relayed an answer to the replica that asked/)
    } finally {
      await mcp.close()
    }
  })
})

describe("another subject's valid token with the first subject's session id", () => {
  it('gets 404 for POST, GET streams and DELETE on every replica, and the owner keeps the session', async () => {
    const session = await openSession(nginx.url, 'writer')
    // The owner's session is in use on all three replicas (each restored it from Redis).
    const pids = new Set<number>()
    for (const replica of replicas) pids.add((await whoami(replica.url, 'writer', session)).pid)
    expect(pids.size).toBe(3)
    // The intruders' tokens are valid: each opens and uses a session of its own.
    for (const intruder of ['reader', 'opaque-writer'] as const) {
      const own = await openSession(nginx.url, intruder)
      expect((await whoami(nginx.url, intruder, own)).subject).toBe(intruder)
    }

    for (const [where, url] of everywhere()) {
      // A reader (JWT) and a client with every scope whose opaque token is introspected.
      for (const intruder of ['reader', 'opaque-writer'] as const) {
        const called = await post(url, intruder, session, call(2, 'whoami'))
        expect(called.status, `${intruder} POST at ${where}`).toBe(404)
        notFound(called.text)
        const listed = await post(url, intruder, session, { jsonrpc: '2.0', id: 3, method: 'tools/list' })
        expect(listed.status, `${intruder} tools/list at ${where}`).toBe(404)
        const { response, close } = await stream(url, intruder, session)
        expect(response.status, `${intruder} GET at ${where}`).toBe(404)
        notFound(await response.text())
        close()
        const deleted = await fetch(url, { method: 'DELETE', headers: headers(intruder, session) })
        expect(deleted.status, `${intruder} DELETE at ${where}`).toBe(404)
        await deleted.text()
      }
    }
    // Still the owner's, on every replica, with any token of the same subject (a fresh one here).
    tokens.set('writer', await issuer.token('writer'))
    for (const replica of replicas) {
      const who = await whoami(replica.url, 'writer', session)
      expect(who.session).toBe(session)
      expect(who.subject).toBe('writer')
    }
    // The owner may end it; then it is gone for the owner too.
    const [first] = replicas as [Replica]
    const ended = await fetch(first.url, { method: 'DELETE', headers: headers('writer', session) })
    expect(ended.status).toBe(200)
    await ended.text()
    for (const replica of replicas)
      expect((await post(replica.url, 'writer', session, call(9, 'whoami'))).status).toBe(404)
  })

  it('gets 404 on replicas that never served the session: they refuse to restore it for another owner', async () => {
    const [first, second, third] = replicas as [Replica, Replica, Replica]
    // Opened on the first replica and used only there: the others have only Redis's record.
    const session = await openSession(first.url, 'writer')
    expect((await whoami(first.url, 'writer', session)).pid).toBe(first.pid)
    for (const replica of [second, third]) {
      const called = await post(replica.url, 'reader', session, call(2, 'whoami'))
      expect(called.status).toBe(404)
      notFound(called.text)
      const { response, close } = await stream(replica.url, 'reader', session)
      expect(response.status).toBe(404)
      await response.text()
      close()
    }
    // The refused restores took nothing from the owner: each of those replicas serves the owner.
    for (const replica of [second, third])
      expect((await whoami(replica.url, 'writer', session)).pid).toBe(replica.pid)
  })

  it('cannot resume the owner’s stream with Last-Event-ID on any replica; the owner can', async () => {
    const session = await openSession(nginx.url, 'writer')
    // A call with progress, answered on an SSE stream whose events are stored in Redis.
    const answer = await fetch(nginx.url, {
      method: 'POST',
      headers: headers('writer', session),
      body: JSON.stringify(call(5, 'count', { to: 4, step_ms: 5 }, { progressToken: 'p' })),
    })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toContain('text/event-stream')
    const events: SseEvent[] = []
    for await (const event of sseEvents(answer)) events.push(event)
    const ids = events.map((event) => event.id).filter((id): id is string => Boolean(id))
    expect(ids.length).toBeGreaterThanOrEqual(5)
    const firstId = ids[0] as string

    for (const [where, url] of everywhere()) {
      const { response, close } = await stream(url, 'reader', session, firstId)
      expect(response.status, `reader resume at ${where}`).toBe(404)
      notFound(await response.text())
      close()
    }
    // Nor with that event id on a session of its own: event ids name streams of one session only.
    const own = await openSession(nginx.url, 'reader')
    for (const [where, url] of everywhere()) {
      const { response, close } = await stream(url, 'reader', own, firstId)
      expect(response.status, `reader resume in its own session at ${where}`).toBe(404)
      notFound(await response.text())
      close()
    }
    // The owner resumes after the first event on every replica and gets the rest, in order.
    for (const [where, url] of everywhere()) {
      const { response, close } = await stream(url, 'writer', session, firstId)
      expect(response.status, `owner resume at ${where}`).toBe(200)
      const replayed: SseEvent[] = []
      const expected = events.length - 1
      for await (const event of sseEvents(response)) {
        replayed.push(event)
        if (replayed.length === expected) break
      }
      close()
      expect(replayed.map((event) => event.data)).toEqual(events.slice(1).map((event) => event.data))
    }
  })
})

describe('a token without the write scope', () => {
  it('gets 403 insufficient_scope for a writing tool on every replica, and reads still work', async () => {
    const session = await openSession(nginx.url, 'reader')
    for (const [where, url] of everywhere()) {
      const refused = await post(url, 'reader', session, call(4, 'tally'))
      expect(refused.status, `tally at ${where}`).toBe(403)
      const challenge = refused.headers.get('www-authenticate') ?? ''
      expect(challenge).toMatch(/^Bearer /)
      expect(challenge).toContain('error="insufficient_scope"')
      expect(challenge).toContain('mcp:write')
      // The read-only tool in the same session still runs there.
      const who = await whoami(url, 'reader', session)
      expect(who.session).toBe(session)
      expect(who.subject).toBe('reader')
    }
    // The SDK client, sent a 403, asks the issuer for the write scope; refused, the call fails and
    // the session goes on.
    const { mcp, transport } = oauthClient(issuer, nginx.url, 'reader')
    await mcp.connect(transport)
    try {
      await expect(mcp.callTool({ name: 'tally' })).rejects.toThrow(/scope/)
      const who = (await mcp.callTool({ name: 'whoami' })).structuredContent as { subject: string }
      expect(who.subject).toBe('reader')
    } finally {
      await mcp.close()
    }
    // Every replica refused some of those calls: the check is each replica's own.
    const logs = replicas.map((replica) => replica.stderr())
    for (const log of logs) expect(log).toMatch(/refused a call that needs the write scope/)
  })

  it("relays a state handle's calls to its replica as its subject's, and refuses them to another subject there", async () => {
    const writer = oauthClient(issuer, nginx.url, 'writer', {}, 'modern')
    const reader = oauthClient(issuer, nginx.url, 'reader', {}, 'modern')
    await writer.mcp.connect(writer.transport)
    await reader.mcp.connect(reader.transport)
    try {
      const opened = (await writer.mcp.callTool({ name: 'open_counter' })).structuredContent as {
        pid: number
        counter: string
      }
      // Round robin: these calls land on every replica, and each is served where the counter is.
      for (let value = 1; value <= 4; value++) {
        const bumped = (await writer.mcp.callTool({ name: 'bump', arguments: { counter: opened.counter } }))
          .structuredContent
        expect(bumped).toMatchObject({ pid: opened.pid, value, subject: 'writer' })
      }
      for (let attempt = 0; attempt < 3; attempt++) {
        const stolen = await reader.mcp.callTool({ name: 'bump', arguments: { counter: opened.counter } })
        expect(stolen.isError).toBe(true)
        expect((stolen.content as Array<{ text: string }>)[0]?.text).toMatch(/belongs to another caller/)
      }
    } finally {
      await writer.mcp.close()
      await reader.mcp.close()
    }
  })

  it('serves the stateful calls of an OAuth session on the replica holding its state, as its owner', async () => {
    const session = await openSession(nginx.url, 'writer')
    const values: number[] = []
    const pids = new Set<number>()
    for (let id = 10; id < 14; id++) {
      const answer = await post(nginx.url, 'writer', session, call(id, 'bump'))
      expect(answer.status, answer.text).toBe(200)
      const result = messagesOf(answer).find((message) => message.id === id)?.result as {
        structuredContent: { pid: number; value: number; subject: string }
      }
      expect(result.structuredContent.subject).toBe('writer')
      values.push(result.structuredContent.value)
      pids.add(result.structuredContent.pid)
    }
    expect(values).toEqual([1, 2, 3, 4])
    expect(pids.size).toBe(1)
  })
})
