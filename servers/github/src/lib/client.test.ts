import { describe, expect, it } from 'vitest'
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
})
