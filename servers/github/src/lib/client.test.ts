import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { GitHubClients, MAX_CACHED_CLIENTS, tokenKey } from './client.js'

describe('GitHubClients', () => {
  const clients = () =>
    new GitHubClients({ baseUrl: 'https://api.github.com', userAgent: 'test', log: () => {} })

  it('keeps one client per token and never shares one between tokens', async () => {
    const cache = clients()
    const a = await cache.get('token-a')
    expect(await cache.get('token-a')).toBe(a)
    expect(await cache.get('token-b')).not.toBe(a)
  })

  it('keeps at most MAX_CACHED_CLIENTS clients', async () => {
    const cache = clients()
    const first = await cache.get('token-0')
    for (let index = 1; index <= MAX_CACHED_CLIENTS; index++) await cache.get(`token-${index}`)
    expect(cache.size).toBe(MAX_CACHED_CLIENTS)
    expect(await cache.get('token-0')).not.toBe(first)
  })

  it('keys by a hash, never the token', () => {
    expect(tokenKey('ghp_secret')).not.toContain('secret')
    expect(tokenKey('ghp_secret')).toHaveLength(32)
  })

  it('sends a warm request through the retry and throttling plugins without a zero-delay timer', async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end('{"login":"octocat"}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const port = (server.address() as AddressInfo).port
      const cache = new GitHubClients({
        baseUrl: `http://127.0.0.1:${port}`,
        userAgent: 'test',
        log: () => {},
      })
      const octokit = await cache.get('token')
      await octokit.rest.users.getAuthenticated()
      // Each 0 ms setTimeout costs at least 1 ms (Node clamps it): Bottleneck used several a request.
      const timers = vi.spyOn(globalThis, 'setTimeout')
      try {
        for (let index = 0; index < 5; index++) {
          expect((await octokit.rest.users.getAuthenticated()).data.login).toBe('octocat')
        }
        expect(timers.mock.calls.filter(([, delay]) => !delay).length).toBe(0)
      } finally {
        timers.mockRestore()
      }
    } finally {
      server.close()
    }
  })
})

describe('scheduling through the plugins', () => {
  it('lets 8 concurrent reads reach the API together: none waits for another to be answered', async () => {
    // Answers nothing until 8 requests are open at once: serialised reads would never get there.
    const waiting: Array<import('node:http').ServerResponse> = []
    const { url } = await api((response) => {
      waiting.push(response)
      if (waiting.length < 8) return
      for (const held of waiting.splice(0)) {
        held.writeHead(200, { 'content-type': 'application/json' })
        held.end('{"number":1}')
      }
    })
    const octokit = await clientsFor(url).get('token')
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => octokit.rest.issues.get({ owner: 'o', repo: 'r', issue_number: 1 })),
    )
    expect(answers.map((answer) => answer.data.number)).toEqual(Array(8).fill(1))
  })

  it('still sends one token’s writes one at a time, as GitHub asks (plugin-throttling’s write limiter)', async () => {
    let open = 0
    let overlapped = false
    const { url, paths } = await api((response) => {
      open++
      if (open > 1) overlapped = true
      // Answered after 20 ms, as across a network: a second write sent meanwhile would overlap.
      setTimeout(() => {
        open--
        response.writeHead(201, { 'content-type': 'application/json' })
        response.end('{"number":2}')
      }, 20)
    })
    const octokit = await clientsFor(url).get('token')
    await Promise.all(
      [1, 2].map((index) => octokit.rest.issues.create({ owner: 'o', repo: 'r', title: `t${index}` })),
    )
    expect(paths).toHaveLength(2)
    expect(overlapped).toBe(false)
  })
})

/** A loopback API answering every request with `reply`; records the paths it was asked for. */
async function api(reply: (response: import('node:http').ServerResponse) => void) {
  const paths: string[] = []
  const server = createServer((request, response) => {
    paths.push(request.url ?? '')
    reply(response)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  opened.push(server)
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths }
}
const opened: ReturnType<typeof createServer>[] = []
afterEach(() => {
  for (const server of opened.splice(0)) server.close()
})
const clientsFor = (baseUrl: string) => new GitHubClients({ baseUrl, userAgent: 'test', log: () => {} })

describe('failure logging', () => {
  it('logs a failed request once, with its method, expanded path, status and request id', async () => {
    const { url } = await api((response) => {
      response.writeHead(404, { 'content-type': 'application/json', 'x-github-request-id': 'ABCD:1' })
      response.end('{"message":"Not Found"}')
    })
    const lines: Array<[string, Record<string, unknown> | undefined]> = []
    const clients = new GitHubClients({
      baseUrl: url,
      userAgent: 'test',
      log: (message, fields) => lines.push([message, fields]),
    })
    const octokit = await clients.get('token')
    await expect(octokit.rest.issues.get({ owner: 'o', repo: 'r', issue_number: 7 })).rejects.toThrow()
    expect(lines).toEqual([
      [
        'GitHub request failed',
        { method: 'GET', path: '/repos/o/r/issues/7', status: 404, requestId: 'ABCD:1' },
      ],
    ])
  })
})

describe('response bodies', () => {
  it.each([
    [
      'JSON',
      'application/json; charset=utf-8',
      '{"id":12345678901,"name":"x"}',
      { id: 12345678901, name: 'x' },
    ],
    ['a diff', 'application/vnd.github.diff; charset=utf-8', 'diff --git a/x b/x\n', 'diff --git a/x b/x\n'],
    ['plain text', 'text/plain', 'log line\n', 'log line\n'],
  ])('reads %s as Octokit would', async (_what, type, body, expected) => {
    const fake = await api((response) => {
      response.writeHead(200, { 'content-type': type })
      response.end(body)
    })
    const octokit = await clientsFor(fake.url).get('token')
    expect((await octokit.request('GET /anything')).data).toEqual(expected)
  })

  it('reads bytes as an ArrayBuffer', async () => {
    const fake = await api((response) => {
      response.writeHead(200, { 'content-type': 'application/octet-stream' })
      response.end(Buffer.from([0, 1, 2, 255]))
    })
    const octokit = await clientsFor(fake.url).get('token')
    const data = (await octokit.request('GET /anything')).data as ArrayBuffer
    expect(data).toBeInstanceOf(ArrayBuffer)
    expect([...new Uint8Array(data)]).toEqual([0, 1, 2, 255])
  })

  it('refuses a JSON body that does not parse as the API failing', async () => {
    const fake = await api((response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end('{"login": "octo')
    })
    const octokit = await clientsFor(fake.url).get('token')
    await expect(octokit.request('GET /user')).rejects.toThrow(
      /answered HTTP 200 with a body that is not JSON/,
    )
  })
})

describe('the token-host check', () => {
  it('refuses a route sent to another API root', async () => {
    const fake = await api((response) => response.end('{}'))
    const elsewhere = await api((response) => response.end('{}'))
    const octokit = await clientsFor(fake.url).get('token')
    await expect(octokit.request('GET /user', { baseUrl: elsewhere.url })).rejects.toThrow(
      'only the configured API host receives the token',
    )
    expect(elsewhere.paths).toHaveLength(0)
  })

  it('keeps a route on the configured host whatever its parameters hold', async () => {
    const fake = await api((response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end('{"ok":true}')
    })
    const octokit = await clientsFor(fake.url).get('token')
    await octokit.request('GET /repos/{owner}/{repo}/contents/{+path}', {
      owner: 'octo',
      repo: 'demo',
      path: '@evil.example/x',
    })
    expect(fake.paths).toEqual(['/repos/octo/demo/contents/@evil.example/x'])
  })
})
