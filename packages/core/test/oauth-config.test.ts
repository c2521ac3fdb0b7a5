import { describe, expect, it } from 'vitest'
import { assertWriteScope, lacksWriteScope } from '../src/auth/context.js'
import { metadataUrls } from '../src/auth/discovery.js'
import { ConfigError, parseConfig } from '../src/config.js'
import { CLIENTS } from './oauth-issuer.js'

// OAuth settings: flags and env, the start-up rules, warnings, the write-scope rule where a call
// is served, and where issuer metadata is looked for.

const INTROSPECTION_ENV = {
  MCP_AUTH_CLIENT_ID: 'resource-server',
  MCP_AUTH_CLIENT_SECRET: CLIENTS['resource-server'].secret,
}

describe('OAuth configuration', () => {
  const source = { name: 'demo', description: 'demo', version: '1.0.0' }
  const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseConfig(source, argv, env)

  it('reads the issuer and scopes from flags or env, with mcp:write as the default write scope', () => {
    const outcome = parse([
      '--auth-issuer',
      'https://auth.example.com',
      '--auth-scopes',
      'mcp:read,mcp:tools',
    ])
    if (outcome.kind !== 'config') throw new Error('expected a config')
    expect(outcome.config.auth).toMatchObject({
      issuer: 'https://auth.example.com',
      scopes: ['mcp:read', 'mcp:tools'],
      writeScope: 'mcp:write',
    })
    const fromEnv = parse([], {
      MCP_AUTH_ISSUER: 'https://auth.example.com',
      MCP_AUTH_WRITE_SCOPE: 'repo:write',
    })
    if (fromEnv.kind !== 'config') throw new Error('expected a config')
    expect(fromEnv.config.auth).toMatchObject({
      issuer: 'https://auth.example.com',
      writeScope: 'repo:write',
    })
  })

  it.each([
    [['--auth-issuer', 'http://auth.example.com'], {}, /--auth-issuer: must be an https:\/\/ URL/],
    [['--auth-issuer', 'not a url'], {}, /--auth-issuer.*must be a URL/],
    [
      ['--auth-issuer', 'https://auth.example.com', '--auth-token', 'x'.repeat(20)],
      {},
      /either a static --auth-token or --auth-issuer/,
    ],
    [['--auth-audience', 'api'], {}, /--auth-audience: it needs --auth-issuer/],
    [['--auth-scopes', 'mcp:read'], {}, /--auth-scopes: it needs --auth-issuer/],
    [
      [
        '--auth-issuer',
        'https://auth.example.com',
        '--auth-introspection-url',
        'https://auth.example.com/introspect',
      ],
      {},
      /MCP_AUTH_CLIENT_ID and MCP_AUTH_CLIENT_SECRET/,
    ],
    [
      [
        '--auth-issuer',
        'https://auth.example.com',
        '--auth-introspection-url',
        'http://auth.example.com/introspect',
      ],
      INTROSPECTION_ENV,
      /--auth-introspection-url: must be an https/,
    ],
    [
      ['--auth-issuer', 'https://auth.example.com', '--auth-scopes', 'bad"scope'],
      {},
      /not a valid OAuth scope/,
    ],
  ])('refuses %j', (argv, env, message) => {
    expect(() => parse(argv, env)).toThrow(ConfigError)
    expect(() => parse(argv, env)).toThrow(message)
  })

  it('allows plain http for a loopback issuer', () => {
    for (const issuer of ['http://127.0.0.1:9000', 'http://localhost:9000/realms/x', 'http://[::1]:9000']) {
      expect(parse(['--auth-issuer', issuer]).kind).toBe('config')
    }
  })

  it('redacts the introspection client secret', () => {
    const outcome = parse(
      ['--auth-issuer', 'https://a.example.com', '--auth-introspection-url', 'https://a.example.com/i'],
      INTROSPECTION_ENV,
    )
    if (outcome.kind !== 'config') throw new Error('expected a config')
    expect(outcome.secrets).toContain(INTROSPECTION_ENV.MCP_AUTH_CLIENT_SECRET)
  })

  it('lists the OAuth options in --help', () => {
    const outcome = parse(['--help'])
    if (outcome.kind !== 'help') throw new Error('expected help')
    for (const flag of [
      '--auth-issuer',
      '--auth-resource',
      '--auth-audience',
      '--auth-scopes',
      '--auth-write-scope',
      '--auth-introspection-url',
    ])
      expect(outcome.text).toContain(flag)
  })
})

describe('the write-scope rule where a call is served', () => {
  const auth = {
    issuer: 'https://a.example.com',
    resource: undefined,
    audience: undefined,
    scopes: [],
    writeScope: 'mcp:write',
    introspectionUrl: undefined,
    clientId: undefined,
    clientSecret: undefined,
  }
  const writer = { name: 'add_note', annotations: { readOnlyHint: false } }
  const reader = { name: 'whoami', annotations: { readOnlyHint: true } }
  const unannotated = { name: 'legacy', annotations: {} }

  it.each([
    ['a read-only tool, any token', reader, { authInfo: { scopes: [] } }, false],
    ['a tool that writes, with the write scope', writer, { authInfo: { scopes: ['mcp:write'] } }, false],
    ['a tool that writes, without it', writer, { authInfo: { scopes: ['mcp:read'] } }, true],
    [
      'a tool without readOnlyHint counts as writing',
      unannotated,
      { authInfo: { scopes: ['mcp:read'] } },
      true,
    ],
    ['no HTTP request (stdio, in memory): not checked', writer, undefined, false],
  ])('%s', (_label, tool, http, refused) => {
    expect(lacksWriteScope(auth, tool, http)).toBe(refused)
    if (refused) expect(() => assertWriteScope(auth, tool, http)).toThrow(/needs the mcp:write scope/)
    else expect(() => assertWriteScope(auth, tool, http)).not.toThrow()
  })

  it('does nothing without an issuer', () => {
    expect(lacksWriteScope({ ...auth, issuer: undefined }, writer, { authInfo: { scopes: [] } })).toBe(false)
  })
})

function source() {
  return { name: 'demo', description: 'demo', version: '1.0.0' }
}

describe('OAuth configuration warnings', () => {
  const warnings = (argv: string[]) => {
    const outcome = parseConfig(source(), argv, {})
    if (outcome.kind !== 'config') throw new Error('expected a config')
    return outcome.warnings
  }

  it('warns that stdio is not authenticated', () => {
    expect(warnings(['--auth-issuer', 'https://a.example.com'])).toEqual([
      expect.stringContaining('applies to --transport http only'),
    ])
  })

  it('warns when a non-loopback bind has no --auth-resource, and not otherwise', () => {
    const base = ['--transport', 'http', '--auth-issuer', 'https://a.example.com']
    expect(warnings([...base, '--host', '0.0.0.0'])).toEqual([expect.stringContaining('set --auth-resource')])
    expect(
      warnings([...base, '--host', '0.0.0.0', '--auth-resource', 'https://mcp.example.com/mcp']),
    ).toEqual([])
    expect(warnings(base)).toEqual([])
  })
})

describe('issuer metadata locations', () => {
  it('tries RFC 8414 first, then OpenID discovery, with the path of the issuer', () => {
    expect(metadataUrls('https://auth.example.com')).toEqual([
      'https://auth.example.com/.well-known/oauth-authorization-server',
      'https://auth.example.com/.well-known/openid-configuration',
    ])
    expect(metadataUrls('https://auth.example.com/realms/mcp/')).toEqual([
      'https://auth.example.com/.well-known/oauth-authorization-server/realms/mcp',
      'https://auth.example.com/.well-known/openid-configuration/realms/mcp',
      'https://auth.example.com/realms/mcp/.well-known/openid-configuration',
    ])
  })
})
