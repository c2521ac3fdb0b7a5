import { describe, expect, it } from 'vitest'
import { AUTH_SETTINGS } from '../src/auth-config.js'
import { COMMON_SETTINGS, validateSettings } from '../src/config.js'

// Settings are validated one by one, each schema built only when its setting is given; an unset
// setting takes its `unset` value without building anything. These hold that shortcut to exactly
// what the schemas give.
describe.each([
  ['common', COMMON_SETTINGS],
  ['auth', AUTH_SETTINGS],
] as const)('the %s settings', (_, settings) => {
  it.each(Object.keys(settings))('%s: unset is what the schema gives for undefined', (key) => {
    const setting = settings[key as keyof typeof settings]
    expect(setting.unset).toEqual(setting.schema().parse(undefined))
  })

  it('validate as one object schema over all of them would, when nothing is set', async () => {
    const { z } = await import('zod')
    const raw = Object.fromEntries(Object.keys(settings).map((key) => [key, undefined]))
    const whole = z.object(
      Object.fromEntries(Object.entries(settings).map(([key, setting]) => [key, setting.schema()])),
    )
    const result = validateSettings(settings, raw)
    expect(result).toEqual({ success: true, data: whole.parse(raw) })
    // Same keys in the same order.
    expect(Object.keys(result.success ? result.data : {})).toEqual(Object.keys(whole.parse(raw)))
  })
})

const CASES: Array<[string, Record<string, unknown>]> = [
  [
    'valid common values',
    { transport: 'http', port: '8080', tools: ['a', 'b'], stateless: true, logLevel: 'debug' },
  ],
  ['a bad port after a good transport', { transport: 'http', port: '70000' }],
  ['two problems', { host: '', port: 'x' }],
  ['a bad enum', { transport: 'udp' }],
  ['a short secret', { stateSecret: 'short', toolTimeoutMs: '50' }],
  ['a bad redis URL', { redisUrl: 'http://x' }],
  ['valid auth values', { issuer: 'https://a.example', scopes: ['x', 'y'], writeScope: 'w' }],
  ['a bad scope', { scopes: ['fine', 'not fine'] }],
  ['a bad issuer', { issuer: 'not a url', audience: '' }],
]

describe('validateSettings against one object schema over all settings', () => {
  it.each(CASES)('%s', async (_, raw) => {
    const { z } = await import('zod')
    const settings = { ...COMMON_SETTINGS, ...AUTH_SETTINGS }
    const given = Object.fromEntries(Object.keys(settings).map((key) => [key, raw[key]]))
    const whole = z.object(
      Object.fromEntries(Object.entries(settings).map(([key, setting]) => [key, setting.schema()])),
    )
    const expected = whole.safeParse(given)
    const actual = validateSettings(settings, given)
    if (expected.success) expect(actual).toEqual({ success: true, data: expected.data })
    else {
      const issue = expected.error.issues[0]
      expect(actual).toEqual({
        success: false,
        key: String(issue?.path[0]),
        message: `${issue?.message} (${issue?.path.join('.')})`,
      })
    }
  })
})

describe('validateSettings', () => {
  it('reports the first problem in the order of the settings, with its path', () => {
    const result = validateSettings(COMMON_SETTINGS, { port: 'x', toolTimeoutMs: '5' })
    expect(result).toEqual({ success: false, key: 'port', message: 'must be a number (port)' })
    const nested = validateSettings(AUTH_SETTINGS, { scopes: ['ok', 'not ok'] })
    expect(nested).toEqual({
      success: false,
      key: 'scopes',
      message: 'is not a valid OAuth scope (scopes.1)',
    })
  })

  it('gives each call its own arrays', () => {
    const first = validateSettings(COMMON_SETTINGS, {})
    const second = validateSettings(COMMON_SETTINGS, {})
    if (!first.success || !second.success) throw new Error('expected success')
    expect(first.data.tools).toEqual([])
    expect(first.data.tools).not.toBe(second.data.tools)
  })
})
