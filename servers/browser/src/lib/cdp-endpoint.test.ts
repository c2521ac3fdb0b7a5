import { describe, expect, it } from 'vitest'
import { parseCdpEndpoint } from './cdp-endpoint.js'

describe('parseCdpEndpoint', () => {
  it('takes a loopback WebSocket or HTTP endpoint', () => {
    expect(parseCdpEndpoint('ws://127.0.0.1:9222/devtools/browser/abc', false)).toEqual({
      browserWSEndpoint: 'ws://127.0.0.1:9222/devtools/browser/abc',
    })
    expect(parseCdpEndpoint('http://localhost:9222/json/version', false)).toEqual({
      browserURL: 'http://localhost:9222',
    })
    expect(parseCdpEndpoint('ws://[::1]:9222/devtools/browser/x', false)).toHaveProperty('browserWSEndpoint')
    expect(parseCdpEndpoint('http://127.5.6.7:9222', false)).toEqual({ browserURL: 'http://127.5.6.7:9222' })
  })

  it('refuses another machine, a private address or any other name unless remote endpoints are allowed', () => {
    for (const endpoint of [
      'ws://10.0.0.5:9222/devtools/browser/abc',
      'http://192.168.1.2:9222',
      'http://example.com:9222',
      'ws://localhost.evil.test:9222/devtools/browser/x',
      'http://0.0.0.0:9222',
    ])
      expect(() => parseCdpEndpoint(endpoint, false), endpoint).toThrow(
        /not this machine's loopback.*--allow-remote-cdp/,
      )
    expect(parseCdpEndpoint('ws://10.0.0.5:9222/devtools/browser/abc', true)).toHaveProperty(
      'browserWSEndpoint',
    )
  })

  it('refuses what is not a DevTools URL', () => {
    expect(() => parseCdpEndpoint('127.0.0.1:9222', false)).toThrow(/scheme|not a URL/)
    expect(() => parseCdpEndpoint('file:///tmp/x', false)).toThrow(/not a DevTools endpoint scheme/)
    expect(() => parseCdpEndpoint('not a url', false)).toThrow(/not a URL/)
  })
})
