import { describe, expect, it } from 'vitest'
import { createLogger } from '../src/logger.js'
import { Redactor, redactor } from '../src/redact.js'

function capture(options: Parameters<typeof createLogger>[0] = {}, env: NodeJS.ProcessEnv = {}) {
  const lines: string[] = []
  const logger = createLogger({ ...options, write: (line) => lines.push(line) }, env)
  return { logger, lines }
}

describe('Redactor', () => {
  const cases: Array<[string, string, string]> = [
    ['URL password', 'postgres://app:s3cretpass@db:5432/x', 'postgres://app:[redacted]@db:5432/x'],
    ['bearer header', 'Authorization: Bearer abc.def.ghi', 'Authorization: Bearer [redacted]'],
    ['password pair', 'host=db password=hunter2 user=x', 'host=db password=[redacted] user=x'],
    ['json secret', '{"token":"abc123","ok":1}', '{"token":"[redacted]","ok":1}'],
    ['github token', 'token ghp_0123456789abcdefghijABCDEFGHIJ012345 used', 'token [redacted] used'],
    ['slack token', 'xoxb-1234567890-abcdefghij', '[redacted]'],
    ['URL password with an empty user', 'redis://:s3cretpass@cache:6379', 'redis://:[redacted]@cache:6379'],
    ['URL password after letters', 'at xhttps://u:s3cretpass@h', 'at xhttps://u:[redacted]@h'],
  ]
  it.each(cases)('redacts a %s', (_label, input, output) => {
    expect(new Redactor().redact(input)).toBe(output)
  })

  it('redacts a 4 MiB run of letters (a path in a tool error) in linear time', () => {
    // The URL pattern used to restart at every letter of a run: quadratic, hours for this input.
    const text = `${'A'.repeat(4 * 1024 * 1024)} https://u:s3cretpass@h`
    expect(new Redactor().redact(text).endsWith('https://u:[redacted]@h')).toBe(true)
  })

  it('redacts registered secret values, also URL-encoded', () => {
    const local = new Redactor()
    local.addSecret('p@ss w0rd!')
    expect(local.redact('x p@ss w0rd! y p%40ss%20w0rd! z')).toBe('x [redacted] y [redacted] z')
  })

  it('ignores secrets too short to redact safely', () => {
    const local = new Redactor()
    local.addSecret('abc')
    expect(local.redact('abcdef')).toBe('abcdef')
  })

  it('redacts secret-named keys in structured values', () => {
    expect(new Redactor().redactValue({ password: 'x', nested: { apiKey: 'y', name: 'n' } })).toEqual({
      password: '[redacted]',
      nested: { apiKey: '[redacted]', name: 'n' },
    })
  })
})

describe('Logger', () => {
  it('writes pretty lines at or above its level', () => {
    const { logger, lines } = capture({ level: 'info', name: 'srv' })
    logger.debug('hidden')
    logger.info('shown', { count: 2 })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/INFO {2}\[srv\] shown count=2\n$/)
  })

  it('writes JSON lines with LOG_FORMAT=json', () => {
    const { logger, lines } = capture({ name: 'srv' }, { LOG_FORMAT: 'json', LOG_LEVEL: 'debug' })
    logger.child('tool', { tool: 'echo' }).debug('call', { durationMs: 3 })
    const record = JSON.parse(lines[0]!)
    expect(record).toMatchObject({
      level: 'debug',
      logger: 'srv:tool',
      msg: 'call',
      tool: 'echo',
      durationMs: 3,
    })
  })

  it('redacts messages and fields', () => {
    redactor.addSecret('registered-secret-value')
    const { logger, lines } = capture({ format: 'json' })
    logger.warn('connect to postgres://u:pw123456@h/db failed', {
      token: 'abc',
      detail: 'used registered-secret-value',
    })
    const record = JSON.parse(lines[0]!)
    expect(record.msg).toBe('connect to postgres://u:[redacted]@h/db failed')
    expect(record.token).toBe('[redacted]')
    expect(record.detail).toBe('used [redacted]')
  })

  it('serialises errors with their stack', () => {
    const { logger, lines } = capture({ format: 'json' })
    logger.error('boom', { error: new Error('bad') })
    expect(JSON.parse(lines[0]!).error).toMatchObject({
      name: 'Error',
      message: 'bad',
      stack: expect.stringContaining('Error: bad'),
    })
  })

  it('forwards records to forwarders, and a scoped forwarder only to itself', () => {
    const { logger } = capture({ level: 'silent' })
    const global: string[] = []
    const scoped: string[] = []
    const remove = logger.addForwarder((record) => global.push(record.msg))
    logger.warn('to everyone')
    logger.withForwarder((record) => scoped.push(record.msg)).warn('to one call')
    remove()
    logger.warn('after removal')
    expect(global).toEqual(['to everyone'])
    expect(scoped).toEqual(['to one call'])
  })

  it('gives a forwarder only the levels it accepts, and builds no record that nothing takes', () => {
    const { logger, lines } = capture({ level: 'warn' })
    const forwarded: string[] = []
    let fieldReads = 0
    const fields = {
      get costly() {
        fieldReads++
        return 'value'
      },
    }
    const remove = logger.addForwarder(
      (record) => forwarded.push(`${record.level} ${record.msg}`),
      (level) => level === 'error' || level === 'info',
    )
    logger.debug('taken by no one', fields)
    expect(fieldReads).toBe(0)
    logger.info('to the forwarder only', fields)
    logger.warn('to stderr only')
    logger.error('to both')
    remove()
    expect(forwarded).toEqual(['info to the forwarder only', 'error to both'])
    expect(lines.map((line) => line.includes('to stderr only') || line.includes('to both'))).toEqual([
      true,
      true,
    ])
    expect(fieldReads).toBe(1)

    const call: string[] = []
    const scoped = logger.childWithForwarder(
      'read_text_file',
      { tool: 'read_text_file' },
      (record) => call.push(`${record.logger} ${record.msg} ${String(record.tool)}`),
      (level) => level !== 'debug',
    )
    scoped.debug('below the call threshold', fields)
    scoped.info('a call line')
    expect(fieldReads).toBe(1)
    expect(call).toEqual(['keel:read_text_file a call line read_text_file'])
  })

  it('survives a write that throws', () => {
    const logger = createLogger({
      write: () => {
        throw new Error('EPIPE')
      },
    })
    expect(() => logger.error('x')).not.toThrow()
  })
})
