import { z } from 'zod'

// The OAuth 2.1 resource-server options (`--auth-issuer` and friends). Only flag definitions and
// their validation live here: config parsing stays free of anything heavy. The verifier itself
// (jose, discovery, introspection) is in auth/ and is loaded only when HTTP serves with an issuer.

/** OAuth resource-server settings; `issuer` undefined means OAuth is off. */
export interface AuthConfig {
  /** The authorization server's issuer URL (HTTPS, or HTTP on loopback). */
  issuer: string | undefined
  /** The public URL of `/mcp` as clients reach it: the resource in the metadata, and the default audience. */
  resource: string | undefined
  /** The `aud` a token must carry (default: the resource URL). */
  audience: string | undefined
  /** Scopes every request's token must carry. */
  scopes: string[]
  /** The extra scope that tools which write need. */
  writeScope: string
  /** RFC 7662 introspection endpoint for opaque tokens. */
  introspectionUrl: string | undefined
  /** Client credentials for the introspection endpoint (env only). */
  clientId: string | undefined
  clientSecret: string | undefined
}

/** One flag (the same shape as config/flags.ts's common flags) and the config key it fills. */
export interface AuthFlag {
  flag: string
  key: keyof AuthConfig
  type: 'string'
  env: string[]
  multiple?: boolean
  placeholder?: string
  description: string
  secret?: boolean
}

export const AUTH_FLAGS: AuthFlag[] = [
  {
    flag: 'auth-issuer',
    key: 'issuer',
    type: 'string',
    env: ['MCP_AUTH_ISSUER'],
    placeholder: 'url',
    description:
      'OAuth 2.1: accept access tokens from this authorization server (HTTPS; HTTP on loopback only).',
  },
  {
    flag: 'auth-resource',
    key: 'resource',
    type: 'string',
    env: ['MCP_AUTH_RESOURCE'],
    placeholder: 'url',
    description: "OAuth: this server's public /mcp URL (default http://<host>:<port>/mcp).",
  },
  {
    flag: 'auth-audience',
    key: 'audience',
    type: 'string',
    env: ['MCP_AUTH_AUDIENCE'],
    placeholder: 'aud',
    description: 'OAuth: the token audience required (default: the resource URL).',
  },
  {
    flag: 'auth-scopes',
    key: 'scopes',
    type: 'string',
    multiple: true,
    env: ['MCP_AUTH_SCOPES'],
    placeholder: 'a,b',
    description: 'OAuth: scopes every request needs (default none).',
  },
  {
    flag: 'auth-write-scope',
    key: 'writeScope',
    type: 'string',
    env: ['MCP_AUTH_WRITE_SCOPE'],
    placeholder: 'scope',
    description: 'OAuth: the extra scope tools that write need (default mcp:write).',
  },
  {
    flag: 'auth-introspection-url',
    key: 'introspectionUrl',
    type: 'string',
    env: ['MCP_AUTH_INTROSPECTION_URL'],
    placeholder: 'url',
    description:
      'OAuth: RFC 7662 endpoint for opaque tokens; client credentials from MCP_AUTH_CLIENT_ID and MCP_AUTH_CLIENT_SECRET.',
  },
]

// RFC 6749 scope-token: printable ASCII except space, `"` and `\`.
const scopeToken = () => z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'is not a valid OAuth scope')
const url = () => z.string().url('must be a URL').optional()

/**
 * A setting validated on its own, its schema built on first use: zod schemas are costly to build
 * and every start builds what it holds, so a start builds only the schemas of the settings it is
 * given (config/validate.ts's `validateSettings`). An unset setting takes `unset`, which is what its schema
 * gives for `undefined` (a test holds the two together).
 */
export interface LazySetting {
  schema: () => z.ZodType
  unset: unknown
}

/** A schema built once per process, on first use. */
export function once(build: () => z.ZodType): () => z.ZodType {
  let schema: z.ZodType | undefined
  return () => {
    schema ??= build()
    return schema
  }
}

/** The auth settings in the order their problems are reported, and what each is when unset. */
export const AUTH_SETTINGS: Record<keyof AuthConfig, LazySetting> = {
  issuer: { schema: once(url), unset: undefined },
  resource: { schema: once(url), unset: undefined },
  audience: { schema: once(() => z.string().min(1).optional()), unset: undefined },
  scopes: { schema: once(() => z.array(scopeToken()).default([])), unset: [] },
  writeScope: { schema: once(() => scopeToken().default('mcp:write')), unset: 'mcp:write' },
  introspectionUrl: { schema: once(url), unset: undefined },
  clientId: { schema: once(() => z.string().min(1).optional()), unset: undefined },
  clientSecret: { schema: once(() => z.string().min(1).optional()), unset: undefined },
}

/** Env-only settings (a client secret never belongs on argv). */
export const AUTH_ENV = { clientId: 'MCP_AUTH_CLIENT_ID', clientSecret: 'MCP_AUTH_CLIENT_SECRET' } as const

function loopbackUrl(value: URL): boolean {
  const host = value.hostname.replace(/^\[|\]$/g, '')
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host)
}

/**
 * What is wrong with an auth configuration, as a one-line message naming the flag, or undefined.
 * The issuer and the introspection endpoint must be HTTPS except on loopback: tokens and client
 * secrets travel to them.
 */
export function authConfigProblem(auth: AuthConfig, staticToken: string | undefined): string | undefined {
  const enabled = auth.issuer !== undefined
  if (!enabled) {
    const stray = AUTH_FLAGS.find(
      (flag) =>
        flag.key !== 'issuer' &&
        flag.key !== 'scopes' &&
        flag.key !== 'writeScope' &&
        auth[flag.key] !== undefined,
    )
    if (stray) return `Invalid --${stray.flag}: it needs --auth-issuer (env MCP_AUTH_ISSUER)`
    if (auth.scopes.length) return 'Invalid --auth-scopes: it needs --auth-issuer (env MCP_AUTH_ISSUER)'
    return undefined
  }
  if (staticToken !== undefined)
    return 'Invalid --auth-token: use either a static --auth-token or --auth-issuer (OAuth), not both'
  for (const [flag, value] of [
    ['auth-issuer', auth.issuer],
    ['auth-introspection-url', auth.introspectionUrl],
  ] as const) {
    if (value === undefined) continue
    const parsed = new URL(value)
    if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && loopbackUrl(parsed)))
      return `Invalid --${flag}: must be an https:// URL (plain http is allowed on loopback only)`
    if (parsed.hash || (flag === 'auth-issuer' && parsed.search))
      return `Invalid --${flag}: must not have a query or fragment`
  }
  if (auth.resource !== undefined && !/^https?:$/.test(new URL(auth.resource).protocol))
    return 'Invalid --auth-resource: must be an http(s) URL'
  if (auth.introspectionUrl !== undefined && (!auth.clientId || !auth.clientSecret))
    return 'Invalid --auth-introspection-url: set MCP_AUTH_CLIENT_ID and MCP_AUTH_CLIENT_SECRET for it'
  return undefined
}

/** Auth settings that work but are probably not what was meant. */
export function authConfigWarnings(auth: AuthConfig, transport: string, host: string): string[] {
  if (!auth.issuer) return []
  if (transport !== 'http')
    return ['--auth-issuer applies to --transport http only; stdio is not authenticated']
  if (
    auth.resource === undefined &&
    !loopbackUrl(new URL(`http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}`))
  )
    return [
      `--auth-issuer without --auth-resource: clients are told the resource is http://${host}:<port>/mcp; set --auth-resource to the public URL`,
    ]
  return []
}
