import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ConfigError, type OptionSpecs, parseConfig } from '../src/config.js'
import { fixture } from './fixture.js'

const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseConfig(fixture, argv, env)
const config = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
  const outcome = parse(argv, env)
  if (outcome.kind !== 'config') throw new Error(`expected a config, got ${outcome.kind}`)
  return outcome
}

describe('parseConfig', () => {
  it('gives every common flag its default', () => {
    const { config: parsed } = config([])
    expect(parsed).toMatchObject({
      transport: 'stdio',
      host: '127.0.0.1',
      port: 3000,
      stateless: false,
      readOnly: false,
      toolsets: [],
      tools: [],
      excludeTools: [],
      toolTimeoutMs: 60_000,
      logLevel: 'info',
      maxBodyBytes: 4 * 1024 * 1024,
      options: { apiUrl: 'https://api.example.com' },
      positionals: [],
    })
  })

  it('reads flags before env vars', () => {
    const { config: parsed } = config(['--transport', 'http', '--port', '0'], {
      MCP_TRANSPORT: 'stdio',
      MCP_PORT: '7',
      FIXTURE_API_URL: 'http://127.0.0.1:1',
    })
    expect(parsed.transport).toBe('http')
    expect(parsed.port).toBe(0)
    expect(parsed.options.apiUrl).toBe('http://127.0.0.1:1')
  })

  it('splits comma lists and repeated flags', () => {
    const { config: parsed } = config(['--tools', 'echo,fail', '--tools', 'slow', '--read-only'], {
      MCP_EXCLUDE_TOOLS: 'hang, slow',
    })
    expect(parsed.tools).toEqual(['echo', 'fail', 'slow'])
    expect(parsed.excludeTools).toEqual(['hang', 'slow'])
    expect(parsed.readOnly).toBe(true)
  })

  it('reads boolean env vars', () => {
    expect(config([], { MCP_READ_ONLY: 'true' }).config.readOnly).toBe(true)
    expect(config([], { MCP_READ_ONLY: '0' }).config.readOnly).toBe(false)
  })

  it.each([
    [
      ['--transport', 'carrier-pigeon'],
      {},
      /Invalid --transport \(env MCP_TRANSPORT\): must be "stdio" or "http"/,
    ],
    [['--port', 'eighty'], {}, /Invalid --port .*must be a number/],
    [['--port', '70000'], {}, /Invalid --port/],
    [[], { FIXTURE_API_URL: 'not a url' }, /Invalid env FIXTURE_API_URL: must be a URL/],
    [['--frobnicate'], {}, /Unknown option '--frobnicate'.*--help/],
    [['stray'], {}, /Unexpected argument "stray"/],
    [['--log-level', 'loud'], {}, /Invalid --log-level .*"loud" is not one of/],
    [['--toolsets', 'basic,nope'], {}, /unknown toolset "nope"; known: all, basic, faults/],
    [['--auth-token', 'short'], {}, /Invalid --auth-token .*at least 16 characters/],
  ])('refuses %j %j with a message naming the option', (argv, env, message) => {
    expect(() => parse(argv, env)).toThrow(ConfigError)
    expect(() => parse(argv, env)).toThrow(message)
  })

  it('refuses unknown toolsets as a usage error (exit 2), naming every unknown one and the known ones', () => {
    const error = captured(() => parse(['--toolsets', 'nope,basic,also-nope']))
    expect(error).toBeInstanceOf(ConfigError)
    expect(error.exitCode).toBe(2)
    expect(error.message).toBe(
      'Invalid --toolsets: unknown toolset "nope", "also-nope"; known: all, basic, faults',
    )
    expect(captured(() => parse(['--frobnicate'])).exitCode).toBe(1)
  })

  it('on a server without toolsets, refuses --toolsets names saying so, accepts "all", and leaves the flag out of --help', () => {
    const { toolsets: _none, ...plain } = fixture
    const error = captured(() => parseConfig(plain, ['--toolsets', 'files'], {}))
    expect(error.exitCode).toBe(2)
    expect(error.message).toMatch(
      /unknown toolset "files"; this server has no toolsets .*--tools or --exclude-tools/,
    )
    expect(captured(() => parseConfig(plain, [], { MCP_TOOLSETS: 'files' })).exitCode).toBe(2)
    expect(parseConfig(plain, ['--toolsets', 'all'], {}).kind).toBe('config')
    const help = parseConfig(plain, ['--help'], {})
    const text = help.kind === 'help' ? help.text : ''
    expect(text).not.toContain('--toolsets')
    expect(text).toContain('Toolsets: none (all tools are served)')
    const withToolsets = parse(['--help'])
    expect(withToolsets.kind === 'help' ? withToolsets.text : '').toContain('--toolsets <all|a,b>')
  })

  it('returns help text listing server and common options', () => {
    const outcome = parse(['--help'])
    expect(outcome.kind).toBe('help')
    const text = outcome.kind === 'help' ? outcome.text : ''
    expect(text).toContain('Usage: mcp-server-fixture [options]')
    expect(text).toContain('--api-url <value>')
    expect(text).toContain('[env FIXTURE_API_URL]')
    expect(text).toContain('--read-only')
    expect(text).toContain('basic')
  })

  it('lets a server rename a common flag whose name it needs, keeping the env var', () => {
    const renamed = {
      ...fixture,
      renameFlags: { 'allowed-origins': 'http-allowed-origins' },
      options: {
        ...fixture.options,
        sites: {
          flag: 'allowed-origins',
          type: 'string' as const,
          multiple: true,
          schema: z.array(z.string()).default([]),
          description: 'Sites the server may reach.',
        },
      },
    }
    const outcome = parseConfig(
      renamed,
      ['--http-allowed-origins', 'https://app.test', '--allowed-origins', 'a,b'],
      {},
    )
    if (outcome.kind !== 'config') throw new Error(outcome.kind)
    expect(outcome.config.allowedOrigins).toEqual(['https://app.test'])
    expect((outcome.config.options as Record<string, unknown>).sites).toEqual(['a', 'b'])
    const fromEnv = parseConfig(renamed, [], { MCP_ALLOWED_ORIGINS: 'https://env.test' })
    expect(fromEnv.kind === 'config' && fromEnv.config.allowedOrigins).toEqual(['https://env.test'])
    const help = parseConfig(renamed, ['--help'], {})
    const text = help.kind === 'help' ? help.text : ''
    expect(text).toMatch(
      /--http-allowed-origins <a,b>\s+Extra Origins accepted on HTTP\. \[env MCP_ALLOWED_ORIGINS\]/,
    )
    expect(text).toMatch(/--allowed-origins <value>\s+Sites the server may reach\./)
    // Without the rename the two would collide.
    expect(() => parseConfig({ ...renamed, renameFlags: {} }, [], {})).toThrow(
      /--allowed-origins is defined twice/,
    )
  })

  it('returns the version', () => {
    expect(parse(['--version'])).toEqual({ kind: 'version', text: '9.9.9' })
  })

  it('collects secrets and warns when one is given on argv', () => {
    const outcome = config(['--api-token', 'supersecretvalue', '--auth-token', '0123456789abcdef0'])
    expect(outcome.secrets).toEqual(expect.arrayContaining(['supersecretvalue', '0123456789abcdef0']))
    expect(outcome.warnings.join('\n')).toMatch(
      /--api-token on the command line is visible in process lists; prefer FIXTURE_TOKEN/,
    )
    expect(outcome.warnings.join('\n')).toMatch(/--auth-token .* prefer MCP_AUTH_TOKEN/)
  })

  it('does not warn about secrets from env vars', () => {
    expect(config([], { FIXTURE_TOKEN: 'supersecretvalue' }).warnings).toEqual([])
  })

  it('warns when HTTP is bound beyond loopback without a token', () => {
    expect(config(['--transport', 'http', '--host', '0.0.0.0']).warnings.join()).toMatch(
      /without --auth-token/,
    )
  })
})

function captured(work: () => unknown): ConfigError {
  try {
    work()
  } catch (error) {
    if (error instanceof ConfigError) return error
    throw error
  }
  throw new Error('expected a ConfigError')
}

describe('parseConfig at start', () => {
  it('gives for no arguments exactly what parseArgs gives for none', () => {
    // `--` alone makes parseArgs run and yield no values and no positionals.
    expect(config([])).toEqual(config(['--']))
    expect(config([], { MCP_TRANSPORT: 'http', FIXTURE_TOKEN: 'supersecretvalue' })).toEqual(
      config(['--'], { MCP_TRANSPORT: 'http', FIXTURE_TOKEN: 'supersecretvalue' }),
    )
  })

  it('refuses an option whose short name is not one character, with or without arguments', () => {
    const options: OptionSpecs<{ x: boolean }> = {
      x: { flag: 'x-ray', type: 'boolean', short: 'xr', description: 'X.', schema: z.boolean() },
    }
    const source = { name: 'short', description: 'Short flags.', version: '1.0.0', options }
    expect(() => parseConfig(source, [])).toThrow('option --x-ray: short must be one character, got "xr"')
    expect(() => parseConfig(source, ['--x-ray'])).toThrow('short must be one character')
  })

  it('builds an option schema given as a function on the first value to check, once, and none for an unset option with an unset value', () => {
    let built = 0
    const count =
      <T>(schema: z.ZodType<T>) =>
      () => {
        built++
        return schema
      }
    const options: OptionSpecs<{ limit: number; tags: string[]; mode: 'a' | 'b' }> = {
      limit: {
        flag: 'limit',
        env: 'LIMIT',
        type: 'string',
        description: 'A limit.',
        schema: count(z.coerce.number().int().min(1).default(10)),
        unset: 10,
      },
      tags: {
        flag: 'tag',
        type: 'string',
        multiple: true,
        description: 'Tags.',
        schema: count(z.array(z.string()).default([])),
        unset: [],
      },
      mode: {
        flag: 'mode',
        type: 'string',
        description: 'No unset value: undefined goes through the schema.',
        schema: count(z.enum(['a', 'b']).default('a')),
      },
    }
    const source = { name: 'lazy', description: 'Lazy schemas.', version: '1.0.0', options }
    const first = parseConfig(source, [], {})
    expect(first.kind === 'config' && first.config.options).toEqual({ limit: 10, tags: [], mode: 'a' })
    expect(built).toBe(1) // mode's only
    // An unset array is a fresh copy each time, as a schema's default is.
    const second = parseConfig(source, [], {})
    if (first.kind !== 'config' || second.kind !== 'config') throw new Error('expected configs')
    expect(second.config.options.tags).not.toBe(first.config.options.tags)
    expect(built).toBe(1)
    const given = parseConfig(source, ['--limit', '5', '--tag', 'x'], {})
    expect(given.kind === 'config' && given.config.options).toEqual({ limit: 5, tags: ['x'], mode: 'a' })
    expect(built).toBe(3)
    expect(() => parseConfig(source, [], { LIMIT: '0' })).toThrow(
      /^Invalid env LIMIT: Too small: expected number to be >=1$/,
    )
    expect(built).toBe(3)
  })
})
