import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it, vi } from 'vitest'
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
