import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import { gzipSync } from 'node:zlib'
import { agentOptions, connectionNeverMade, createHttpFetch, httpFetch } from '@keel-mcp/core'
import { selfSignedCertificate } from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { toToolError } from '../errors.js'
import {
  GitHubClients,
  isGitHubRead,
  isReadEndpoint,
  isUnconfirmedWrite,
  MalformedResponseError,
  READ_KEEP_ALIVE_MS,
} from './client.js'
import { classifyGitHubError } from './errors.js'

interface Seen {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
  socket: Socket
}

const servers: Server[] = []
afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    server.close()
  }
})

/** A loopback server answering with `reply`; records every request it got, body included. */
async function serve(reply: (request: IncomingMessage, response: ServerResponse, seen: Seen) => void) {
  const seen: Seen[] = []
  const server = createServer((request, response) => {
    let body = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => {
      body += chunk
    })
    request.on('end', () => {
      const entry = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body,
        socket: request.socket,
      }
      seen.push(entry)
      reply(request, response, entry)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  servers.push(server)
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server }
}

const json = (
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) => {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers })
  response.end(JSON.stringify(body))
}

describe('httpFetch', () => {
  it('sends the method, headers and body, and answers status, URL, headers and body as fetch would', async () => {
    const api = await serve((_request, response) => {
      response.setHeader('link', ['<a>; rel="next"', '<b>; rel="last"'])
      response.setHeader('X-OAuth-Scopes', 'repo')
      json(response, 201, { ok: true })
    })
    const response = await httpFetch(`${api.url}/repos/o/r/issues?x=1`, {
      method: 'POST',
      headers: { Authorization: 'token t', 'content-type': 'application/json' },
      body: '{"title":"é"}',
    })
    expect(api.seen[0]).toMatchObject({
      method: 'POST',
      url: '/repos/o/r/issues?x=1',
      body: '{"title":"é"}',
      headers: { authorization: 'token t', 'content-length': '14' },
    })
    expect(response.status).toBe(201)
    expect(response.ok).toBe(true)
    expect(response.url).toBe(`${api.url}/repos/o/r/issues?x=1`)
    // Repeated headers are joined, names are in lower case, as fetch's Headers iterate them.
    expect(Object.fromEntries(response.headers)).toMatchObject({
      link: '<a>; rel="next", <b>; rel="last"',
      'x-oauth-scopes': 'repo',
    })
    expect(response.headers.get('Content-Type')).toBe('application/json; charset=utf-8')
    expect(await response.json()).toEqual({ ok: true })
  })

  it('reuses one kept-alive connection for consecutive requests', async () => {
    const api = await serve((_request, response) => json(response, 200, {}))
    for (let index = 0; index < 3; index++) await (await httpFetch(`${api.url}/x`)).text()
    expect(api.seen).toHaveLength(3)
    expect(new Set(api.seen.map((request) => request.socket)).size).toBe(1)
  })

  it('keeps a connection for reads longer than for writes when asked to', async () => {
    const api = await serve((_request, response) => json(response, 200, {}))
    const send = createHttpFetch({ keepAliveMs: 100, readKeepAliveMs: 10_000 })
    const pause = () => new Promise((resolve) => setTimeout(resolve, 400))
    await (await send(`${api.url}/a`)).text()
    await pause()
    await (await send(`${api.url}/b`, { method: 'HEAD' })).text()
    await (await send(`${api.url}/c`, { method: 'POST', body: '{}' })).text()
    await pause()
    await (await send(`${api.url}/d`, { method: 'POST', body: '{}' })).text()
    const [a, b, c, d] = api.seen.map((request) => request.socket)
    // The reads share one connection across the pause; each write after a pause gets a new one.
    expect(b).toBe(a)
    expect(c).not.toBe(a)
    expect(d).not.toBe(c)
    expect(d).not.toBe(a)
  })

  it('sends a GET again once when its kept connection closes under it, and never a write', async () => {
    // The second request on any connection meets the connection's close: as when the server closes
    // an idle connection while a request is on its way.
    const perSocket = new Map<Socket, number>()
    const api = await serve((_request, response, seen) => {
      const count = (perSocket.get(seen.socket) ?? 0) + 1
      perSocket.set(seen.socket, count)
      if (count === 2) seen.socket.destroy()
      else json(response, 200, { n: api.seen.length })
    })
    await (await httpFetch(`${api.url}/first`)).text()
    const again = await httpFetch(`${api.url}/read`)
    expect(again.status).toBe(200)
    expect(api.seen.map((request) => request.url)).toEqual(['/first', '/read', '/read'])
    expect(api.seen[2]?.socket).not.toBe(api.seen[1]?.socket)
    // A write on a kept connection (the one the read was sent again on) that closes under it
    // fails, sent once.
    const error = await httpFetch(`${api.url}/write`, { method: 'POST', body: '{}' }).catch(
      (caught) => caught,
    )
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toBe('fetch failed')
    expect(api.seen.filter((request) => request.url === '/write')).toHaveLength(1)
  })

  it('takes what isRead names as a read: kept as long, and sent again once on a closed connection', async () => {
    let dropNext = false
    const api = await serve((_request, response, seen) => {
      if (!dropNext) return json(response, 200, {})
      dropNext = false
      seen.socket.destroy()
    })
    const send = createHttpFetch({
      keepAliveMs: 100,
      readKeepAliveMs: 10_000,
      isRead: (method, url) => method === 'POST' && url.pathname.startsWith('/read/'),
    })
    const post = (path: string) => send(`${api.url}${path}`, { method: 'POST', body: '{}' })
    await (await post('/read/a')).text()
    await new Promise((resolve) => setTimeout(resolve, 400))
    await (await post('/read/b')).text()
    // A GET is a read whatever isRead says; a POST it does not name is a write.
    await (await send(`${api.url}/get`)).text()
    await (await post('/other')).text()
    const [a, b, get, other] = api.seen.map((request) => request.socket)
    expect(b).toBe(a)
    expect(get).toBe(a)
    expect(other).not.toBe(a)
    // The read's kept connection closes under the next request.
    dropNext = true
    expect((await post('/read/c')).status).toBe(200)
    expect(api.seen.slice(4).map((request) => request.url)).toEqual(['/read/c', '/read/c'])
    expect(api.seen[4]?.socket).toBe(a)
    dropNext = true
    await expect(post('/write')).rejects.toThrow('fetch failed')
    expect(api.seen.slice(6).map((request) => request.url)).toEqual(['/write'])
  })

  it('decodes a gzip answer, having asked for one', async () => {
    const api = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' })
      response.end(gzipSync('line 1\nline 2\n'))
    })
    const response = await httpFetch(`${api.url}/logs`)
    expect(api.seen[0]?.headers['accept-encoding']).toContain('gzip')
    expect(await response.text()).toBe('line 1\nline 2\n')
  })

  it('gives bytes as an ArrayBuffer of their own', async () => {
    const api = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/octet-stream' })
      response.end(Buffer.from([0, 1, 2, 255]))
    })
    const bytes = await (await httpFetch(`${api.url}/zip`)).arrayBuffer()
    expect([...new Uint8Array(bytes)]).toEqual([0, 1, 2, 255])
  })

  it('follows a redirect to another origin without the token, and on the same origin with it', async () => {
    const storage = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' })
      response.end('log')
    })
    const api = await serve((request, response) => {
      if (request.url === '/logs') {
        response.writeHead(302, { location: '/logs/here' })
        response.end()
      } else {
        response.writeHead(302, { location: `${storage.url}/signed?sig=1` })
        response.end()
      }
    })
    const response = await httpFetch(`${api.url}/logs`, {
      headers: { authorization: 'token secret', 'user-agent': 'keel' },
    })
    expect(await response.text()).toBe('log')
    expect(response.url).toBe(`${storage.url}/signed?sig=1`)
    expect(response.redirected).toBe(true)
    expect(api.seen.map((request) => [request.url, request.headers.authorization])).toEqual([
      ['/logs', 'token secret'],
      ['/logs/here', 'token secret'],
    ])
    expect(storage.seen[0]?.headers.authorization).toBeUndefined()
    expect(storage.seen[0]?.headers['user-agent']).toBe('keel')
  })

  it('turns a POST answered with 303 into a GET without a body; keeps both on 307', async () => {
    const api = await serve((request, response) => {
      if (request.url === '/see-other') response.writeHead(303, { location: '/done' })
      else if (request.url === '/temporary') response.writeHead(307, { location: '/done' })
      else response.writeHead(200, { 'content-type': 'text/plain' })
      response.end('ok')
    })
    const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' }
    await (await httpFetch(`${api.url}/see-other`, init)).text()
    await (await httpFetch(`${api.url}/temporary`, init)).text()
    expect(
      api.seen.map((request) => [request.method, request.url, request.body, request.headers['content-type']]),
    ).toEqual([
      ['POST', '/see-other', '{"a":1}', 'application/json'],
      ['GET', '/done', '', undefined],
      ['POST', '/temporary', '{"a":1}', 'application/json'],
      ['POST', '/done', '{"a":1}', 'application/json'],
    ])
  })

  it("answers the redirect itself with redirect: 'manual', refuses it with 'error', and stops after 20", async () => {
    const api = await serve((request, response) => {
      const hop = Number(request.url?.slice(1))
      response.writeHead(302, { location: `/${hop + 1}` })
      response.end()
    })
    const manual = await httpFetch(`${api.url}/0`, { redirect: 'manual' })
    expect([manual.status, manual.headers.get('location')]).toEqual([302, '/1'])
    await expect(httpFetch(`${api.url}/0`, { redirect: 'error' })).rejects.toMatchObject({
      name: 'TypeError',
      message: 'fetch failed',
      cause: { message: 'unexpected redirect' },
    })
    const before = api.seen.length
    await expect(httpFetch(`${api.url}/0`)).rejects.toMatchObject({
      message: 'fetch failed',
      cause: { message: 'redirect count exceeded' },
    })
    expect(api.seen.length - before).toBe(21)
  })

  it('sends nothing for a signal already aborted, and rejects with its reason', async () => {
    const api = await serve((_request, response) => json(response, 200, {}))
    const reason = new DOMException('gone', 'AbortError')
    await expect(httpFetch(`${api.url}/x`, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
    expect(api.seen).toHaveLength(0)
  })

  it('rejects at the abort while the answer is awaited, and closes that connection', async () => {
    let closed: Promise<void> | undefined
    const api = await serve((request) => {
      closed = new Promise((resolve) => request.socket.once('close', () => resolve()))
    })
    const controller = new AbortController()
    const pending = httpFetch(`${api.url}/slow`, { signal: controller.signal })
    while (api.seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
    await closed
  })

  it('ends a body being read at the abort, with its reason', async () => {
    const api = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' })
      response.write('partial')
    })
    const controller = new AbortController()
    const response = await httpFetch(`${api.url}/x`, { signal: controller.signal })
    const reason = new Error('the call was cancelled')
    controller.abort(reason)
    await expect(response.text()).rejects.toBe(reason)
  })

  it("fails as fetch does when nothing listens: TypeError('fetch failed') with the cause", async () => {
    const api = await serve(() => {})
    const url = api.url
    await new Promise((resolve) => api.server.close(resolve))
    await expect(httpFetch(`${url}/x`)).rejects.toMatchObject({
      name: 'TypeError',
      message: 'fetch failed',
      cause: { code: 'ECONNREFUSED' },
    })
  })

  it('reaches an https API root (GitHub Enterprise Server) with the CA the process trusts', async () => {
    const tls = await selfSignedCertificate()
    try {
      const server = createHttpsServer({ key: tls.key, cert: tls.cert }, (_request, response) =>
        json(response, 200, { enterprise: true }),
      )
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      servers.push(server)
      const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/api/v3/meta`
      // A certificate no CA the process trusts has signed is refused, as fetch refuses it.
      await expect(httpFetch(url)).rejects.toMatchObject({
        message: 'fetch failed',
        cause: { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' },
      })
      // The same server once certificates are not checked (NODE_TLS_REJECT_UNAUTHORIZED, read at
      // each connection; NODE_EXTRA_CA_CERTS, the way to trust a company CA, is read at start-up).
      process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0'
      try {
        const response = await httpFetch(url)
        expect([response.status, await response.json()]).toEqual([200, { enterprise: true }])
      } finally {
        delete process.env.NODE_TLS_REJECT_UNAUTHORIZED
      }
    } finally {
      await tls.close()
    }
  })
})

describe('agentOptions', () => {
  it('keeps connections alive, and takes the proxy from the environment only when Node is asked to', () => {
    const env = { HTTPS_PROXY: 'http://proxy.example:3128' }
    expect(agentOptions(env, [])).toEqual({ keepAlive: true, scheduling: 'lifo', timeout: 4000 })
    expect(agentOptions({ ...env, NODE_USE_ENV_PROXY: '1' }, []).proxyEnv).toMatchObject(env)
    expect(agentOptions(env, ['--use-env-proxy']).proxyEnv).toBe(env)
    expect(
      agentOptions({ ...env, NODE_OPTIONS: '--max-old-space-size=512 --use-env-proxy' }, []).proxyEnv,
    ).toMatchObject(env)
    expect(agentOptions({ ...env, NODE_OPTIONS: '--use-env-proxy-not' }, []).proxyEnv).toBeUndefined()
  })
})

describe('httpFetch under Octokit', () => {
  const clientsFor = (baseUrl: string) => new GitHubClients({ baseUrl, userAgent: 'test', log: () => {} })

  it('reports a body that breaks off (the connection closed mid-answer) as the API failing', async () => {
    const api = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' })
      response.write('{"login":"oc')
      setTimeout(() => response.socket?.destroy(), 10)
    })
    const octokit = await clientsFor(api.url).get('token')
    const error = await octokit.request('GET /user').catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(MalformedResponseError)
    expect(classifyGitHubError(error)).toMatchObject({
      kind: 'unavailable',
      message: "GitHub's answer (HTTP 200) broke off before its end: terminated",
    })
  })

  it('gives an error answer to Octokit with its status, message and headers', async () => {
    const api = await serve((_request, response) =>
      json(
        response,
        404,
        { message: 'Not Found', documentation_url: 'https://docs.github.com' },
        { 'x-github-request-id': 'ABC' },
      ),
    )
    const octokit = await clientsFor(api.url).get('token')
    await expect(octokit.request('GET /repos/o/r')).rejects.toMatchObject({
      status: 404,
      message: 'Not Found - https://docs.github.com',
      response: { headers: { 'x-github-request-id': 'ABC' }, data: { message: 'Not Found' } },
    })
  })

  it('aborts a request through Octokit with the signal it was given', async () => {
    const api = await serve(() => {})
    const octokit = await clientsFor(api.url).get('token')
    const controller = new AbortController()
    const pending = octokit.request('GET /user', { request: { signal: controller.signal } })
    while (api.seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
  })

  it('reads over the connection of the last read after a pause longer than 4 s, and writes over a new one', async () => {
    const api = await serve((_request, response) => json(response, 200, { login: 'octocat' }))
    // The server keeps an idle connection longer than the client (GitHub is reported at 60 s).
    api.server.keepAliveTimeout = 60_000
    const octokit = await clientsFor(api.url).get('token')
    await octokit.request('GET /user')
    await new Promise((resolve) => setTimeout(resolve, 4_500))
    await octokit.request('GET /user')
    await octokit.request('POST /user/emails', { emails: ['a@example.com'] })
    await new Promise((resolve) => setTimeout(resolve, 4_500))
    await octokit.request('POST /user/emails', { emails: ['b@example.com'] })
    // GraphQL: a query is a read and goes over the read's connection; a mutation over the write's.
    await octokit.graphql('query($login: String!) { user(login: $login) { name } }', { login: 'octocat' })
    await octokit.graphql('mutation { addStar(input: { starrableId: "x" }) { clientMutationId } }')
    const [read, readAgain, write, writeAgain, query, mutation] = api.seen.map((request) => request.socket)
    expect(api.seen.map((request) => `${request.method} ${request.url}`)).toEqual([
      'GET /user',
      'GET /user',
      'POST /user/emails',
      'POST /user/emails',
      'POST /graphql',
      'POST /graphql',
    ])
    expect(READ_KEEP_ALIVE_MS).toBeGreaterThan(4_500)
    expect(readAgain).toBe(read)
    expect(writeAgain).not.toBe(write)
    expect(query).toBe(read)
    expect(mutation).toBe(writeAgain)
  }, 20_000)

  it('takes a GraphQL document for a read only when it cannot hold a mutation', () => {
    const api = new URL('https://api.github.com/graphql')
    const enterprise = new URL('https://github.example.com/api/graphql')
    const post = (query: unknown, url = api) => isGitHubRead('POST', url, JSON.stringify({ query }))
    expect(post('query { viewer { login } }')).toBe(true)
    expect(post('{ viewer { login } }')).toBe(true)
    expect(post('query($n: Int!) { viewer { repositories(first: $n) { totalCount } } }', enterprise)).toBe(
      true,
    )
    expect(isGitHubRead('POST', api, Buffer.from(JSON.stringify({ query: '{ viewer { login } }' })))).toBe(
      true,
    )
    // Writes, or taken for them.
    expect(post('mutation { addStar(input: {starrableId: "x"}) { clientMutationId } }')).toBe(false)
    expect(post('query A { viewer { login } } mutation B { x }')).toBe(false)
    expect(post('query { viewer { login } } # not a mutation')).toBe(false)
    expect(post('query { search(query: "MUTATION") { issueCount } }')).toBe(false)
    expect(post('subscription { x }')).toBe(false)
    expect(post(42)).toBe(false)
    expect(isGitHubRead('POST', api, '{ not json')).toBe(false)
    expect(isGitHubRead('POST', api, 'null')).toBe(false)
    expect(isGitHubRead('POST', api, undefined)).toBe(false)
    expect(isGitHubRead('POST', new URL('https://api.github.com/user/emails'), '{"query":"{ a }"}')).toBe(
      false,
    )
    expect(isGitHubRead('PATCH', api, JSON.stringify({ query: '{ a }' }))).toBe(false)
  })
})

// A write GitHub may have received is never sent again: POST /issues twice is two issues.
describe('writes are sent once', () => {
  const quick = (baseUrl: string) =>
    new GitHubClients({
      baseUrl,
      userAgent: 'test',
      log: () => {},
      retryAfterBaseMs: 1,
      spaceRequests: false,
    })
  const gone = { message: 'Something went wrong while executing your query. Please try again.' }

  it('retries a read after a 5xx, a lost connection or GraphQL’s "went wrong"; a write never', async () => {
    // Each request's first attempt fails in the way its path names; the next is answered.
    const failed = new Set<string>()
    const api = await serve((request, response, seen) => {
      const kind = `${request.method} ${request.url} ${seen.body.includes('mutation') ? 'mutation' : ''}`
      const first = !failed.has(kind)
      failed.add(kind)
      if (first && request.url?.includes('drop')) return void response.socket?.destroy()
      if (first && request.url?.includes('cut')) {
        response.writeHead(201, { 'content-type': 'application/json', 'content-length': '100' })
        response.write('{"id":')
        return void setTimeout(() => response.socket?.destroy(), 10)
      }
      if (first && request.url === '/graphql') return json(response, 200, { data: null, errors: [gone] })
      if (first) return json(response, 502, { message: 'Server Error' })
      json(response, request.method === 'POST' ? 201 : 200, { id: 1 })
    })
    const octokit = await quick(api.url).get('token')
    const count = (method: string, url: string) =>
      api.seen.filter((request) => request.method === method && request.url === url).length

    // Reads: sent again, and answered.
    await octokit.request('GET /repos/o/r/issues/1')
    await octokit.request('GET /drop/read')
    await octokit.graphql('query { viewer { login } }')
    expect(count('GET', '/repos/o/r/issues/1')).toBe(2)
    expect(count('GET', '/drop/read')).toBe(2)
    expect(count('POST', '/graphql')).toBe(2)

    // Writes: sent once; the failure says they may have been applied.
    const writes = [
      () => octokit.request('POST /repos/o/r/issues', { title: 'once' }),
      () => octokit.request('PATCH /repos/o/r/issues/1', { state: 'closed' }),
      () => octokit.request('PUT /drop/write', { x: 1 }),
      () => octokit.request('POST /cut/write', { x: 1 }),
      () => octokit.graphql('mutation { addStar(input: { starrableId: "x" }) { clientMutationId } }'),
    ]
    for (const write of writes) {
      const before = api.seen.length
      const error = await write().catch((caught: unknown) => caught)
      expect(api.seen.length - before, String(write)).toBe(1)
      expect(classifyGitHubError(error), String(write)).toMatchObject({
        kind: 'unavailable',
        unconfirmed: true,
        message: expect.stringMatching(/^GitHub did not confirm the write \(.+\); it may have been applied$/),
      })
      // What reaches the client's `_meta["keel/error"]`, GraphQL's (no status) included.
      expect(toToolError(error)?.details, String(write)).toMatchObject({ unconfirmed: true })
    }
    expect(
      api.seen
        .filter((request) => request.method !== 'GET' && !request.body.includes('viewer'))
        .map((request) => `${request.method} ${request.url}`),
    ).toEqual([
      'POST /repos/o/r/issues',
      'PATCH /repos/o/r/issues/1',
      'PUT /drop/write',
      'POST /cut/write',
      'POST /graphql',
    ])
    // A read whose answer broke off is not a write: nothing unconfirmed about it.
    const cutRead = await octokit.request('GET /cut/read').catch((caught: unknown) => caught)
    expect(isUnconfirmedWrite(cutRead)).toBe(false)
    expect(classifyGitHubError(cutRead)).toMatchObject({ kind: 'unavailable' })
    expect(classifyGitHubError(cutRead)?.unconfirmed).toBeUndefined()
    // The model's own second call goes through.
    expect((await octokit.request('POST /repos/o/r/issues', { title: 'once' })).status).toBe(201)
    expect(count('POST', '/repos/o/r/issues')).toBe(2)
  })

  it('answers a write refused or rate-limited as an answer: nothing unconfirmed, a rate limit waited out', async () => {
    let limited = false
    const api = await serve((request, response) => {
      if (request.url === '/repos/o/r/issues' && !limited) {
        limited = true
        return json(
          response,
          403,
          { message: 'You have exceeded a secondary rate limit.' },
          { 'retry-after': '1', 'x-ratelimit-remaining': '4000' },
        )
      }
      if (request.url === '/repos/o/r/labels') return json(response, 422, { message: 'Validation Failed' })
      json(response, 201, { id: 1 })
    })
    const octokit = await quick(api.url).get('token')
    expect((await octokit.request('POST /repos/o/r/issues', { title: 'x' })).status).toBe(201)
    expect(api.seen.filter((request) => request.url === '/repos/o/r/issues')).toHaveLength(2)
    const refused = await octokit
      .request('POST /repos/o/r/labels', { name: 'x' })
      .catch((caught: unknown) => caught)
    expect(isUnconfirmedWrite(refused)).toBe(false)
    expect(classifyGitHubError(refused)).toMatchObject({ kind: 'invalid_argument' })
  })

  it('sends a write again when its connection was never made', async () => {
    const probe = await serve(() => {})
    const url = probe.url
    const port = (probe.server.address() as AddressInfo).port
    await new Promise((resolve) => probe.server.close(resolve))
    const received: string[] = []
    const late = createServer((request, response) => {
      received.push(`${request.method} ${request.url}`)
      request.resume()
      request.on('end', () => json(response, 201, { id: 7 }))
    })
    servers.push(late)
    const octokit = await new GitHubClients({
      baseUrl: url,
      userAgent: 'test',
      log: () => {},
      retryAfterBaseMs: 150,
      spaceRequests: false,
    }).get('token')
    const pending = octokit.request('POST /repos/o/r/issues', { title: 'after a refusal' })
    await new Promise((resolve) => setTimeout(resolve, 50))
    await new Promise<void>((resolve) => late.listen(port, '127.0.0.1', resolve))
    expect((await pending).data).toEqual({ id: 7 })
    expect(received).toEqual(['POST /repos/o/r/issues'])
  })

  it('knows a connection never made from one lost after the request left', async () => {
    const api = await serve((_request, response) => response.socket?.destroy())
    const lost = await httpFetch(`${api.url}/x`, { method: 'POST', body: '{}' }).catch(
      (caught: unknown) => caught,
    )
    expect(connectionNeverMade(lost)).toBe(false)
    await new Promise((resolve) => api.server.close(resolve))
    const refused = await httpFetch(`${api.url}/x`, { method: 'POST', body: '{}' }).catch(
      (caught: unknown) => caught,
    )
    expect(connectionNeverMade(refused)).toBe(true)
    // Through a client's wrappers (Octokit's RequestError, @slack/web-api's request error).
    expect(connectionNeverMade({ status: 500, cause: { cause: { code: 'ENOTFOUND' } } })).toBe(true)
    expect(connectionNeverMade({ cause: { code: 'UND_ERR_CONNECT_TIMEOUT' } })).toBe(true)
    expect(connectionNeverMade({ cause: { code: 'ECONNRESET' } })).toBe(false)
    expect(connectionNeverMade(undefined)).toBe(false)
  })

  it('takes GET, HEAD and GraphQL queries for reads before they are sent', () => {
    expect(isReadEndpoint({ method: 'GET', url: '/user' })).toBe(true)
    expect(isReadEndpoint({ method: 'HEAD', url: '/user' })).toBe(true)
    expect(isReadEndpoint({ method: 'POST', url: '/graphql', query: '{ viewer { login } }' })).toBe(true)
    expect(isReadEndpoint({ method: 'POST', url: '/graphql', query: 'mutation { x }' })).toBe(false)
    expect(isReadEndpoint({ method: 'POST', url: '/repos/o/r/issues' })).toBe(false)
    expect(isReadEndpoint({ method: 'DELETE', url: '/repos/o/r/issues/1/lock' })).toBe(false)
  })
})
