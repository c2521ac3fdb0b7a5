import { describe, expect, it } from 'vitest'
import { recordingEnv, requestKey, secretPieces, startInputs, templateOf } from '../src/replay.js'

// The bin's launcher matches a start against these records (tools/bundle/launcher.cjs); the
// example server's e2e tests run the whole round trip on its built bin.

describe('what a record keeps of a start', () => {
  it('leaves every secret out as a gap, and keeps a URL but its password', () => {
    const secrets = secretPieces(['xoxb-123-secret', 'postgres://app:pa%40ss@db.internal:5432/shop', 'abc'])
    expect(templateOf('xoxb-123-secret', secrets)).toEqual({ pieces: ['', ''] })
    expect(templateOf('Bearer xoxb-123-secret!', secrets)).toEqual({ pieces: ['Bearer ', '!'] })
    expect(templateOf('postgres://app:pa%40ss@db.internal:5432/shop', secrets)).toEqual({
      pieces: ['postgres://app:', '@db.internal:5432/shop'],
    })
    // A secret shorter than the redactor's minimum is left out too.
    expect(templateOf('--password=abc', secrets)).toEqual({ pieces: ['--password=', ''] })
    // A URL's password is a gap even when it was never registered as a secret.
    expect(templateOf('https://user:hunter22@proxy.example/', [])).toEqual({
      pieces: ['https://user:', '@proxy.example/'],
    })
    expect(templateOf('plain value', secrets)).toBe('plain value')
  })

  it('records each environment variable read, unset ones as null, and notes a listing of them all', () => {
    const { env, read, whole } = recordingEnv({ A: 'one', TOKEN: 'token-value-1', OTHER: 'unread' })
    expect(env.A).toBe('one')
    expect(env.TOKEN).toBe('token-value-1')
    expect('MISSING' in env).toBe(false)
    expect(whole()).toBe(false)
    const inputs = startInputs(['--flag', 'token-value-1'], '/work', read, secretPieces(['token-value-1']))
    expect(inputs).toEqual({
      argv: ['--flag', { pieces: ['', ''] }],
      cwd: '/work',
      env: [
        ['A', 'one'],
        ['TOKEN', { pieces: ['', ''] }],
        ['MISSING', null],
      ],
    })
    expect(JSON.stringify(inputs)).not.toContain('token-value-1')
    expect(Object.keys(env)).toContain('OTHER')
    expect(whole()).toBe(true)
  })

  it('keys a request by everything but its id', () => {
    expect(requestKey({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} })).toBe(
      requestKey({ jsonrpc: '2.0', id: 'x', method: 'tools/list', params: {} }),
    )
    expect(requestKey({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).not.toBe(
      requestKey({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor: 'a' } }),
    )
  })
})
