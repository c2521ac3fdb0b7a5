import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../src/config.js'
import { fixture } from './fixture.js'

// The scale-out options: --state-secret / --state-secret-file and --redis-url.

const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseConfig(fixture, argv, env)
const SECRET = 'state-secret-for-the-tests-0123456789'

describe('scale-out configuration', () => {
  it('leaves the state secret and Redis unset by default (random per process, all in memory)', () => {
    const outcome = parse([])
    expect(outcome.kind).toBe('config')
    if (outcome.kind !== 'config') return
    expect(outcome.config.stateSecret).toBeUndefined()
    expect(outcome.config.redisUrl).toBeUndefined()
  })

  it('takes the state secret from MCP_STATE_SECRET and registers it for redaction', () => {
    const outcome = parse([], { MCP_STATE_SECRET: SECRET })
    if (outcome.kind !== 'config') throw new Error('expected a config')
    expect(outcome.config.stateSecret).toBe(SECRET)
    expect(outcome.secrets).toContain(SECRET)
    expect(outcome.warnings).toEqual([])
  })

  it('warns that --state-secret on the command line is visible in process lists', () => {
    const outcome = parse(['--state-secret', SECRET])
    if (outcome.kind !== 'config') throw new Error('expected a config')
    expect(outcome.warnings.join('\n')).toMatch(
      /--state-secret .*visible in process lists; prefer MCP_STATE_SECRET/,
    )
  })

  it('refuses a state secret shorter than 32 characters as a configuration error', () => {
    expect(() => parse([], { MCP_STATE_SECRET: 'short' })).toThrow(
      /Invalid --state-secret \(env MCP_STATE_SECRET\): must be at least 32 characters/,
    )
  })

  it('reads the state secret from a file, dropping one trailing newline, and redacts it', async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'keel-config-')), 'secret')
    await writeFile(file, `${SECRET}\n`)
    const outcome = parse(['--state-secret-file', file])
    if (outcome.kind !== 'config') throw new Error('expected a config')
    expect(outcome.config.stateSecret).toBe(SECRET)
    expect(outcome.secrets).toContain(SECRET)
  })

  it('refuses an unreadable or too short secret file, and a secret given both ways', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-config-'))
    expect(() => parse(['--state-secret-file', join(dir, 'missing')])).toThrow(
      /Invalid --state-secret-file \(env MCP_STATE_SECRET_FILE\): cannot read .*missing \(ENOENT\)/,
    )
    await writeFile(join(dir, 'short'), 'short\n')
    expect(() => parse([], { MCP_STATE_SECRET_FILE: join(dir, 'short') })).toThrow(/at least 32 characters/)
    expect(() => parse(['--state-secret-file', join(dir, 'short')], { MCP_STATE_SECRET: SECRET })).toThrow(
      /either --state-secret or --state-secret-file, not both/,
    )
  })

  it('takes --redis-url (env REDIS_URL), redacts it (it may hold a password) and refuses other schemes', () => {
    const outcome = parse([], { REDIS_URL: 'redis://:pw-123456789@127.0.0.1:6379/0' })
    if (outcome.kind !== 'config') throw new Error('expected a config')
    expect(outcome.config.redisUrl).toBe('redis://:pw-123456789@127.0.0.1:6379/0')
    expect(outcome.secrets).toContain('redis://:pw-123456789@127.0.0.1:6379/0')
    expect(parse([], { REDIS_URL: 'rediss://cache.internal:6380' }).kind).toBe('config')
    expect(() => parse(['--redis-url', 'http://127.0.0.1:6379'])).toThrow(
      /Invalid --redis-url \(env REDIS_URL\): must be a redis:\/\/ or rediss:\/\/ URL/,
    )
  })

  it('warns that --redis-url does nothing with --stateless', () => {
    const outcome = parse(['--stateless'], { REDIS_URL: 'redis://127.0.0.1:6379' })
    if (outcome.kind !== 'config') throw new Error('expected a config')
    expect(outcome.warnings).toContain(
      '--redis-url has no effect with --stateless: there are no sessions to share',
    )
  })

  it('warns that replicas with OAuth need --auth-resource, and is quiet once it is set', () => {
    const env = { REDIS_URL: 'redis://127.0.0.1:6379' }
    const oauth = ['--transport', 'http', '--auth-issuer', 'http://127.0.0.1:9000']
    const without = parse(oauth, env)
    if (without.kind !== 'config') throw new Error('expected a config')
    expect(without.warnings).toEqual([
      '--redis-url with --auth-issuer but no --auth-resource: each replica names its own address as the resource; set --auth-resource to the URL clients reach (the load balancer), the same on every replica',
    ])
    const set = parse([...oauth, '--auth-resource', 'https://mcp.example.com/mcp'], env)
    if (set.kind !== 'config') throw new Error('expected a config')
    expect(set.warnings).toEqual([])
    const single = parse(oauth)
    if (single.kind !== 'config') throw new Error('expected a config')
    expect(single.warnings).toEqual([])
  })

  it('lists the scale-out options in --help', () => {
    const outcome = parse(['--help'])
    if (outcome.kind !== 'help') throw new Error('expected help')
    expect(outcome.text).toMatch(/--state-secret <secret>.*\[env MCP_STATE_SECRET\]/)
    expect(outcome.text).toMatch(/--state-secret-file <path>.*\[env MCP_STATE_SECRET_FILE\]/)
    expect(outcome.text).toMatch(/--redis-url <url>.*\[env REDIS_URL\]/)
  })
})
