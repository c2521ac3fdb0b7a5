import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { z } from 'zod'
import {
  AUTH_ENV,
  AUTH_FLAGS,
  AUTH_SETTINGS,
  type AuthConfig,
  authConfigProblem,
  authConfigWarnings,
  type LazySetting,
  once,
} from './auth-config.js'
import { type LogLevel, parseLogLevel } from './logger.js'
import {
  OBSERVE_FLAGS,
  OBSERVE_SETTINGS,
  type ObserveConfig,
  observeConfigProblem,
} from './observe-config.js'

/** One server-specific option: a flag and/or env vars, validated by a zod schema. */
export interface OptionSpec<T> {
  /** Flag name without dashes (`max-rows`). */
  flag: string
  /** Environment variables read when the flag is absent, first match wins. */
  env?: string | string[]
  /** `boolean` flags take no value; env values `1/true/yes/on` are true. */
  type: 'string' | 'boolean'
  /** The flag may repeat; the schema then receives a string array (env values split on commas). */
  multiple?: boolean
  short?: string
  description: string
  /** Validates and converts the raw value (`undefined` when unset: give defaults here). */
  schema: z.ZodType<T>
  /** A secret: redacted everywhere; a warning says argv is visible in process lists. */
  secret?: boolean
  /** Shown in `--help` (`<n>`). */
  placeholder?: string
}

/** A server's options, keyed by the property name the server reads. */
export type OptionSpecs<C> = { [K in keyof C]: OptionSpec<C[K]> }

/** Positional arguments. */
export interface PositionalSpec {
  name: string
  description: string
  /** Receives the list of positionals. */
  schema: z.ZodType<string[]>
}

/** Flags every Keel server understands, with the same meaning everywhere. */
export interface CommonConfig {
  transport: 'stdio' | 'http'
  host: string
  port: number
  /** Bearer token required on HTTP when set. */
  authToken: string | undefined
  /** OAuth 2.1 resource server (on when `auth.issuer` is set). */
  auth: AuthConfig
  /** Metrics, tracing, audit log and rate limits (all off unless set). */
  observe: ObserveConfig
  /** Streamable HTTP without sessions (for replicas behind a load balancer). */
  stateless: boolean
  /** Extra Host header names accepted on HTTP (besides localhost names when bound to loopback). */
  allowedHosts: string[]
  /** Extra Origins accepted on HTTP. */
  allowedOrigins: string[]
  /** Largest accepted HTTP request body in bytes. */
  maxBodyBytes: number
  /** An HTTP session unused this long is closed. */
  sessionIdleMs: number
  /**
   * The key that signs 2026-07-28 `requestState` (`--state-secret`, `--state-secret-file`). Replicas
   * behind a load balancer share it; unset, each process draws a random one.
   */
  stateSecret: string | undefined
  /** Redis URL for sessions and events shared by replicas (`--redis-url`); unset, all is in memory. */
  redisUrl: string | undefined
  /** Removes every tool that is not read-only. */
  readOnly: boolean
  /** Enabled toolsets (`['all']` for all). */
  toolsets: string[]
  /** Allow-list of tool names (empty: all). */
  tools: string[]
  /** Deny-list of tool names. */
  excludeTools: string[]
  /** Default per-call time limit in ms. */
  toolTimeoutMs: number
  logLevel: LogLevel
}

/** The parsed configuration a server receives. */
export type ParsedConfig<C> = CommonConfig & { options: C; positionals: string[] }

/**
 * A configuration problem: printed as one line. Exit code 1, or 2 for a usage error the command
 * line alone shows (a toolset or tool name that does not exist).
 */
export class ConfigError extends Error {
  override name = 'ConfigError'

  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message)
  }
}

const list = (value: string | string[] | undefined): string[] =>
  (Array.isArray(value) ? value : value === undefined ? [] : [value])
    .flatMap((item) => item.split(','))
    .map((item) => item.trim())
    .filter(Boolean)

const truthy = (value: string | undefined): boolean | undefined =>
  value === undefined || value === '' ? undefined : /^(1|true|yes|on)$/i.test(value)

interface CommonFlag {
  flag: string
  type: 'string' | 'boolean'
  env?: string[]
  multiple?: boolean
  placeholder?: string
  description: string
  secret?: boolean
}

const COMMON_FLAGS: CommonFlag[] = [
  {
    flag: 'transport',
    type: 'string',
    env: ['MCP_TRANSPORT'],
    placeholder: 'stdio|http',
    description: 'Transport (default stdio).',
  },
  {
    flag: 'host',
    type: 'string',
    env: ['MCP_HOST'],
    placeholder: 'addr',
    description: 'HTTP bind address (default 127.0.0.1).',
  },
  {
    flag: 'port',
    type: 'string',
    env: ['MCP_PORT', 'PORT'],
    placeholder: 'n',
    description: 'HTTP port (default 3000; 0 picks a free port).',
  },
  {
    flag: 'auth-token',
    type: 'string',
    env: ['MCP_AUTH_TOKEN'],
    placeholder: 'token',
    secret: true,
    description: 'Require this bearer token on HTTP (prefer the MCP_AUTH_TOKEN env var).',
  },
  {
    flag: 'stateless',
    type: 'boolean',
    env: ['MCP_STATELESS'],
    description: 'HTTP without sessions (for replicas).',
  },
  {
    flag: 'allowed-hosts',
    type: 'string',
    multiple: true,
    env: ['MCP_ALLOWED_HOSTS'],
    placeholder: 'a,b',
    description: 'Extra Host names accepted on HTTP.',
  },
  {
    flag: 'allowed-origins',
    type: 'string',
    multiple: true,
    env: ['MCP_ALLOWED_ORIGINS'],
    placeholder: 'a,b',
    description: 'Extra Origins accepted on HTTP.',
  },
  {
    flag: 'max-body',
    type: 'string',
    env: ['MCP_MAX_BODY_BYTES'],
    placeholder: 'bytes',
    description: 'Largest HTTP request body (default 4 MiB).',
  },
  {
    flag: 'session-idle-ms',
    type: 'string',
    env: ['MCP_SESSION_IDLE_MS'],
    placeholder: 'ms',
    description: 'Close an HTTP session unused this long (default 600000, 10 min).',
  },
  {
    flag: 'state-secret',
    type: 'string',
    env: ['MCP_STATE_SECRET'],
    placeholder: 'secret',
    secret: true,
    description: 'Key (32+ chars) signing multi-round call state; the same on every replica.',
  },
  {
    flag: 'state-secret-file',
    type: 'string',
    env: ['MCP_STATE_SECRET_FILE'],
    placeholder: 'path',
    description: 'Read the state secret from this file.',
  },
  {
    flag: 'redis-url',
    type: 'string',
    env: ['REDIS_URL'],
    placeholder: 'url',
    secret: true,
    description: 'Keep HTTP sessions and events in Redis so any replica serves any request.',
  },
  { flag: 'read-only', type: 'boolean', env: ['MCP_READ_ONLY'], description: 'Expose only read-only tools.' },
  {
    flag: 'toolsets',
    type: 'string',
    multiple: true,
    env: ['MCP_TOOLSETS'],
    placeholder: 'all|a,b',
    description: 'Enable these toolsets.',
  },
  {
    flag: 'tools',
    type: 'string',
    multiple: true,
    env: ['MCP_TOOLS'],
    placeholder: 'a,b',
    description: 'Expose only these tools.',
  },
  {
    flag: 'exclude-tools',
    type: 'string',
    multiple: true,
    env: ['MCP_EXCLUDE_TOOLS'],
    placeholder: 'a,b',
    description: 'Hide these tools.',
  },
  {
    flag: 'tool-timeout',
    type: 'string',
    env: ['MCP_TOOL_TIMEOUT_MS'],
    placeholder: 'ms',
    description: 'Default per-call time limit (default 60000).',
  },
  {
    flag: 'log-level',
    type: 'string',
    env: ['LOG_LEVEL'],
    placeholder: 'level',
    description: 'debug|info|warn|error|silent (default info). LOG_FORMAT=json for JSON lines.',
  },
  { flag: 'help', type: 'boolean', description: 'Show this help.' },
  { flag: 'version', type: 'boolean', description: 'Print the version.' },
]

/**
 * Validates `raw` setting by setting, in the order of `settings` (the first problem is reported,
 * as one object schema over all of them would). Unset settings take their `unset` value.
 */
export function validateSettings(
  settings: Record<string, LazySetting>,
  raw: Record<string, unknown>,
): { success: true; data: Record<string, unknown> } | { success: false; key: string; message: string } {
  const data: Record<string, unknown> = {}
  for (const [key, setting] of Object.entries(settings)) {
    const value = raw[key]
    if (value === undefined) {
      data[key] = Array.isArray(setting.unset) ? [...setting.unset] : setting.unset
      continue
    }
    const result = setting.schema().safeParse(value)
    if (!result.success) {
      const issue = result.error.issues[0]
      const where = [key, ...(issue?.path ?? [])].join('.')
      return { success: false, key, message: `${issue?.message ?? 'invalid value'} (${where})` }
    }
    data[key] = result.data
  }
  return { success: true, data }
}

const number = () => z.coerce.number({ error: 'must be a number' }).int()

/** The common flags' settings, in the order their problems are reported. */
export const COMMON_SETTINGS: Record<string, LazySetting> = {
  transport: {
    schema: once(() => z.enum(['stdio', 'http'], { error: 'must be "stdio" or "http"' }).default('stdio')),
    unset: 'stdio',
  },
  host: { schema: once(() => z.string().min(1).default('127.0.0.1')), unset: '127.0.0.1' },
  port: { schema: once(() => number().min(0).max(65535).default(3000)), unset: 3000 },
  authToken: {
    schema: once(() => z.string().min(16, 'must be at least 16 characters').optional()),
    unset: undefined,
  },
  stateless: { schema: once(() => z.boolean().default(false)), unset: false },
  allowedHosts: { schema: once(() => z.array(z.string()).default([])), unset: [] },
  allowedOrigins: { schema: once(() => z.array(z.string()).default([])), unset: [] },
  maxBodyBytes: {
    schema: once(() =>
      number()
        .min(1024)
        .default(4 * 1024 * 1024),
    ),
    unset: 4 * 1024 * 1024,
  },
  sessionIdleMs: {
    schema: once(() =>
      number()
        .min(1000, 'must be at least 1000')
        .default(10 * 60 * 1000),
    ),
    unset: 10 * 60 * 1000,
  },
  stateSecret: {
    schema: once(() => z.string().min(32, 'must be at least 32 characters').optional()),
    unset: undefined,
  },
  stateSecretFile: { schema: once(() => z.string().min(1).optional()), unset: undefined },
  redisUrl: {
    schema: once(() =>
      z
        .string()
        .regex(/^rediss?:\/\/[^\s]+$/, 'must be a redis:// or rediss:// URL')
        .optional(),
    ),
    unset: undefined,
  },
  readOnly: { schema: once(() => z.boolean().default(false)), unset: false },
  toolsets: { schema: once(() => z.array(z.string()).default([])), unset: [] },
  tools: { schema: once(() => z.array(z.string()).default([])), unset: [] },
  excludeTools: { schema: once(() => z.array(z.string()).default([])), unset: [] },
  toolTimeoutMs: { schema: once(() => number().min(100).default(60_000)), unset: 60_000 },
  logLevel: { schema: once(() => z.string().optional()), unset: undefined },
}

/** The common settings once validated: the config's fields, with the raw log level and the secret file. */
type CommonData = Omit<CommonConfig, 'auth' | 'logLevel'> & {
  stateSecretFile: string | undefined
  logLevel: string | undefined
}

const COMMON_KEYS = {
  transport: 'transport',
  host: 'host',
  port: 'port',
  'auth-token': 'authToken',
  stateless: 'stateless',
  'allowed-hosts': 'allowedHosts',
  'allowed-origins': 'allowedOrigins',
  'max-body': 'maxBodyBytes',
  'session-idle-ms': 'sessionIdleMs',
  'state-secret': 'stateSecret',
  'state-secret-file': 'stateSecretFile',
  'redis-url': 'redisUrl',
  'read-only': 'readOnly',
  toolsets: 'toolsets',
  tools: 'tools',
  'exclude-tools': 'excludeTools',
  'tool-timeout': 'toolTimeoutMs',
  'log-level': 'logLevel',
} as const satisfies Record<string, keyof CommonData>

/** The name of a common flag as core defines it. */
export type CommonFlagName = keyof typeof COMMON_KEYS

/** The common flags as `source` names them, each with the setting it fills. */
function commonFlagsOf(source: { renameFlags?: Partial<Record<CommonFlagName, string>> }) {
  const renames: Partial<Record<string, string>> = source.renameFlags ?? {}
  return COMMON_FLAGS.map((flag) => ({
    ...flag,
    key: COMMON_KEYS[flag.flag as CommonFlagName] as keyof CommonData | undefined,
    flag: renames[flag.flag] ?? flag.flag,
  }))
}

/** What {@link parseConfig} needs to know about the server. */
export interface ConfigSource<C> {
  name: string
  bin?: string
  description: string
  version: string
  options?: OptionSpecs<C>
  positionals?: PositionalSpec
  toolsets?: Record<string, string>
  helpFooter?: string
  /**
   * Common flags this server names differently because it needs their name for its own option,
   * e.g. the browser server's `--allowed-origins` (sites the browser may reach) moves core's HTTP
   * Origin check to `--http-allowed-origins`. Env vars are unchanged.
   */
  renameFlags?: Partial<Record<CommonFlagName, string>>
}

/** The outcome of parsing: a config, or a request for help/version text. */
export type ParseOutcome<C> =
  | { kind: 'config'; config: ParsedConfig<C>; secrets: string[]; warnings: string[] }
  | { kind: 'help'; text: string }
  | { kind: 'version'; text: string }

function readEnv(
  env: NodeJS.ProcessEnv,
  names: string | string[] | undefined,
): { name: string; value: string } | undefined {
  for (const name of typeof names === 'string' ? [names] : (names ?? [])) {
    const value = env[name]
    if (value !== undefined && value !== '') return { name, value }
  }
  return undefined
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0]
  if (!issue) return 'invalid value'
  const where = issue.path.length ? ` (${issue.path.join('.')})` : ''
  return `${issue.message}${where}`
}

/**
 * Parses argv and env into a validated configuration. Flags win over env vars. Throws
 * {@link ConfigError} with a one-line message that names the flag or variable and the problem.
 */
export function parseConfig<C>(
  source: ConfigSource<C>,
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
): ParseOutcome<C> {
  const serverOptions = (source.options ?? {}) as Record<string, OptionSpec<unknown>>
  const argOptions: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = {}
  const commonFlags = commonFlagsOf(source)
  for (const flag of [...commonFlags, ...AUTH_FLAGS, ...OBSERVE_FLAGS])
    argOptions[flag.flag] = {
      type: flag.type,
      ...('multiple' in flag && flag.multiple ? { multiple: true } : {}),
    }
  for (const spec of Object.values(serverOptions)) {
    if (argOptions[spec.flag]) throw new Error(`option --${spec.flag} is defined twice`)
    argOptions[spec.flag] = {
      type: spec.type,
      ...(spec.multiple ? { multiple: true } : {}),
      ...(spec.short ? { short: spec.short } : {}),
    }
  }
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({ args: argv, options: argOptions, allowPositionals: true, strict: true })
  } catch (error) {
    const message = (error as Error).message.replace(/\. To specify a positional.*$/s, '')
    throw new ConfigError(`${message}. Run with --help to see the options.`)
  }
  const values = parsed.values as Record<string, string | boolean | string[] | undefined>
  if (values.help) return { kind: 'help', text: helpText(source) }
  if (values.version) return { kind: 'version', text: source.version }

  const secrets: string[] = []
  const warnings: string[] = []
  const raw: Record<string, unknown> = {}
  for (const flag of commonFlags) {
    const key = flag.key
    if (!key) continue
    const fromArgv = values[flag.flag]
    const fromEnv = fromArgv === undefined ? readEnv(env, flag.env) : undefined
    if (flag.type === 'boolean') raw[key] = fromArgv ?? truthy(fromEnv?.value)
    else if (flag.multiple)
      raw[key] =
        fromArgv !== undefined || fromEnv ? list((fromArgv as string[]) ?? fromEnv?.value) : undefined
    else raw[key] = fromArgv ?? fromEnv?.value
    if (flag.secret && typeof raw[key] === 'string') {
      secrets.push(raw[key] as string)
      if (fromArgv !== undefined)
        warnings.push(
          `--${flag.flag} on the command line is visible in process lists; prefer ${flag.env?.[0]}`,
        )
    }
  }
  const validated = validateSettings(COMMON_SETTINGS, raw)
  if (!validated.success) {
    const flag = commonFlags.find((candidate) => candidate.key === validated.key)
    throw new ConfigError(
      `Invalid ${flag ? `--${flag.flag}${flag.env ? ` (env ${flag.env.join('/')})` : ''}` : validated.key}: ${validated.message}`,
    )
  }
  const common = validated.data as unknown as CommonData
  const auth = parseAuth(values, env, secrets)
  const authProblem = authConfigProblem(auth, common.authToken)
  if (authProblem) throw new ConfigError(authProblem)
  warnings.push(...authConfigWarnings(auth, common.transport, common.host))
  const observe = parseObserve(values, env)
  const observeProblem = observeConfigProblem(observe, common.transport)
  if (observeProblem) throw new ConfigError(observeProblem)
  let logLevel: LogLevel = 'info'
  if (common.logLevel !== undefined) {
    const level = parseLogLevel(common.logLevel)
    if (!level)
      throw new ConfigError(
        `Invalid --log-level (env LOG_LEVEL): "${common.logLevel}" is not one of debug, info, warn, error, silent`,
      )
    logLevel = level
  }
  if (common.transport === 'http' && !isLoopback(common.host) && !common.authToken && !auth.issuer) {
    warnings.push(
      `HTTP bound to ${common.host} without --auth-token or --auth-issuer: anyone who can reach it can use this server`,
    )
  }
  if (common.stateless && common.redisUrl)
    warnings.push('--redis-url has no effect with --stateless: there are no sessions to share')
  // Replicas behind a load balancer: each would name its own address as the resource otherwise.
  else if (common.redisUrl && auth.issuer && auth.resource === undefined && common.transport === 'http')
    warnings.push(
      '--redis-url with --auth-issuer but no --auth-resource: each replica names its own address as the resource; set --auth-resource to the URL clients reach (the load balancer), the same on every replica',
    )
  checkToolsets(source.toolsets, common.toolsets)

  const options: Record<string, unknown> = {}
  for (const [key, spec] of Object.entries(serverOptions)) {
    const fromArgv = values[spec.flag]
    const fromEnv = fromArgv === undefined ? readEnv(env, spec.env) : undefined
    let value: unknown
    if (spec.type === 'boolean') value = fromArgv ?? truthy(fromEnv?.value)
    else if (spec.multiple)
      value = fromArgv !== undefined || fromEnv ? list((fromArgv as string[]) ?? fromEnv?.value) : undefined
    else value = fromArgv ?? fromEnv?.value
    const result = spec.schema.safeParse(value)
    if (!result.success) {
      const envNames = typeof spec.env === 'string' ? [spec.env] : spec.env
      const origin = fromEnv
        ? `env ${fromEnv.name}`
        : `--${spec.flag}${envNames?.length ? ` (env ${envNames.join('/')})` : ''}`
      throw new ConfigError(`Invalid ${origin}: ${describeIssue(result.error)}`)
    }
    options[key] = result.data
    if (spec.secret && typeof value === 'string') {
      secrets.push(value)
      if (fromArgv !== undefined) {
        const envName = typeof spec.env === 'string' ? spec.env : spec.env?.[0]
        warnings.push(
          `--${spec.flag} on the command line is visible in process lists${envName ? `; prefer ${envName}` : ''}`,
        )
      }
    }
  }
  let positionals = parsed.positionals
  if (source.positionals) {
    const result = source.positionals.schema.safeParse(positionals)
    if (!result.success)
      throw new ConfigError(`Invalid <${source.positionals.name}>: ${describeIssue(result.error)}`)
    positionals = result.data
  } else if (positionals.length) {
    throw new ConfigError(`Unexpected argument "${positionals[0]}". Run with --help to see the options.`)
  }

  const { logLevel: _ignored, stateSecretFile, ...rest } = common
  const stateSecret = readStateSecret(rest.stateSecret, stateSecretFile)
  if (stateSecretFile && stateSecret) secrets.push(stateSecret)
  return {
    kind: 'config',
    config: {
      ...rest,
      authToken: rest.authToken,
      auth,
      observe,
      stateSecret,
      redisUrl: rest.redisUrl,
      logLevel,
      options: options as C,
      positionals,
    },
    secrets,
    warnings,
  }
}

function parseAuth(
  values: Record<string, string | boolean | string[] | undefined>,
  env: NodeJS.ProcessEnv,
  secrets: string[],
): AuthConfig {
  const raw: Record<string, unknown> = {}
  for (const flag of AUTH_FLAGS) {
    const fromArgv = values[flag.flag] as string | string[] | undefined
    const fromEnv = fromArgv === undefined ? readEnv(env, flag.env) : undefined
    raw[flag.key] = flag.multiple
      ? fromArgv !== undefined || fromEnv
        ? list(fromArgv ?? fromEnv?.value)
        : undefined
      : (fromArgv ?? fromEnv?.value)
  }
  raw.clientId = readEnv(env, AUTH_ENV.clientId)?.value
  raw.clientSecret = readEnv(env, AUTH_ENV.clientSecret)?.value
  if (typeof raw.clientSecret === 'string') secrets.push(raw.clientSecret)
  const parsed = validateSettings(AUTH_SETTINGS, raw)
  if (!parsed.success) {
    const flag = AUTH_FLAGS.find((candidate) => candidate.key === parsed.key)
    const where = flag
      ? `--${flag.flag} (env ${flag.env.join('/')})`
      : `env ${AUTH_ENV[parsed.key as keyof typeof AUTH_ENV] ?? parsed.key}`
    throw new ConfigError(`Invalid ${where}: ${parsed.message}`)
  }
  return parsed.data as unknown as AuthConfig
}

function parseObserve(
  values: Record<string, string | boolean | string[] | undefined>,
  env: NodeJS.ProcessEnv,
): ObserveConfig {
  const raw: Record<string, unknown> = {}
  for (const flag of OBSERVE_FLAGS) {
    const fromArgv = values[flag.flag]
    const fromEnv = fromArgv === undefined ? readEnv(env, flag.env)?.value : undefined
    raw[flag.key] = flag.type === 'boolean' ? (fromArgv ?? truthy(fromEnv)) : (fromArgv ?? fromEnv)
  }
  const parsed = validateSettings(OBSERVE_SETTINGS, raw)
  if (!parsed.success) {
    const flag = OBSERVE_FLAGS.find((candidate) => candidate.key === parsed.key)
    throw new ConfigError(`Invalid --${flag?.flag} (env ${flag?.env.join('/')}): ${parsed.message}`)
  }
  return parsed.data as unknown as ObserveConfig
}

/** The state secret from the flag or env var, or read from a file (one trailing newline dropped). */
function readStateSecret(value: string | undefined, file: string | undefined): string | undefined {
  if (value !== undefined && file !== undefined)
    throw new ConfigError('Give either --state-secret or --state-secret-file, not both')
  if (file === undefined) return value
  let text: string
  try {
    text = readFileSync(file, 'utf8').replace(/\r?\n$/, '')
  } catch (error) {
    throw new ConfigError(
      `Invalid --state-secret-file (env MCP_STATE_SECRET_FILE): cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    )
  }
  if (text.length < 32)
    throw new ConfigError(
      'Invalid --state-secret-file (env MCP_STATE_SECRET_FILE): the secret must be at least 32 characters',
    )
  return text
}

/** True for loopback addresses and names. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host)
}

function flagLine(
  flag: string,
  type: 'string' | 'boolean',
  placeholder: string | undefined,
  env: string[] | string | undefined,
  description: string,
) {
  const left = `  --${flag}${type === 'string' ? ` <${placeholder ?? 'value'}>` : ''}`
  const envs = typeof env === 'string' ? [env] : (env ?? [])
  const right = `${description}${envs.length ? ` [env ${envs.join(', ')}]` : ''}`
  return left.length >= 30 ? `${left}\n${' '.repeat(30)}${right}` : `${left.padEnd(30)}${right}`
}

/**
 * Refuses toolset names the server does not have (exit 2): a typo would otherwise start a server
 * with no tools and say nothing. `all` is accepted everywhere, also where there are no toolsets.
 */
function checkToolsets(known: Record<string, string> | undefined, asked: string[]): void {
  const unknown = asked.filter((name) => name !== 'all' && !(known && name in known))
  if (!unknown.length) return
  const names = unknown.map((name) => `"${name}"`).join(', ')
  if (!known)
    throw new ConfigError(
      `Invalid --toolsets: unknown toolset ${names}; this server has no toolsets (all its tools are served): choose tools with --tools or --exclude-tools`,
      2,
    )
  throw new ConfigError(
    `Invalid --toolsets: unknown toolset ${names}; known: all, ${Object.keys(known).join(', ')}`,
    2,
  )
}

/** The `--help` text of a server. */
export function helpText<C>(source: ConfigSource<C>): string {
  const bin = source.bin ?? `mcp-server-${source.name}`
  const usage = `Usage: ${bin}${source.positionals ? ` [${source.positionals.name}...]` : ''} [options]`
  const lines = [`${bin} ${source.version} — ${source.description}`, '', usage]
  if (source.positionals) lines.push('', `  ${source.positionals.name}: ${source.positionals.description}`)
  const serverOptions = Object.values((source.options ?? {}) as Record<string, OptionSpec<unknown>>)
  if (serverOptions.length) {
    lines.push('', 'Server options:')
    for (const spec of serverOptions)
      lines.push(flagLine(spec.flag, spec.type, spec.placeholder, spec.env, spec.description))
  }
  if (source.toolsets) {
    lines.push('', 'Toolsets:')
    for (const [name, description] of Object.entries(source.toolsets))
      lines.push(`  ${name.padEnd(28)}${description}`)
  } else {
    lines.push('', 'Toolsets: none (all tools are served); choose tools with --tools and --exclude-tools.')
  }
  lines.push('', 'Common options:')
  for (const flag of commonFlagsOf(source)) {
    // A server without toolsets does not offer --toolsets as if it had some.
    if (flag.key === 'toolsets' && !source.toolsets) continue
    lines.push(flagLine(flag.flag, flag.type, flag.placeholder, flag.env, flag.description))
  }
  lines.push('', 'OAuth 2.1 resource server (HTTP):')
  for (const flag of AUTH_FLAGS)
    lines.push(flagLine(flag.flag, flag.type, flag.placeholder, flag.env, flag.description))
  lines.push('', 'Operations (off unless set):')
  for (const flag of OBSERVE_FLAGS)
    lines.push(flagLine(flag.flag, flag.type, flag.placeholder, flag.env, flag.description))
  lines.push('', 'HTTP serves MCP at /mcp, a health check at /healthz and readiness at /readyz.')
  if (source.helpFooter) lines.push('', source.helpFooter)
  return `${lines.join('\n')}\n`
}
