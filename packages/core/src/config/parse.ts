import { parseArgs } from 'node:util'
import type { z } from 'zod'
import {
  AUTH_ENV,
  AUTH_FLAGS,
  AUTH_SETTINGS,
  type AuthConfig,
  authConfigProblem,
  authConfigWarnings,
} from '../auth-config.js'
import {
  OBSERVE_FLAGS,
  OBSERVE_SETTINGS,
  type ObserveConfig,
  type OtelExports,
  observeConfigProblem,
  otelConfigured,
  otelExports,
  otlpUrls,
} from '../observe-config.js'
import { type CommonData, commonFlagsOf } from './flags.js'
import { helpText } from './help.js'
import {
  ConfigError,
  type ConfigSource,
  type OptionSpec,
  type ParseOutcome,
  type PositionalSpec,
} from './types.js'
import {
  COMMON_SETTINGS,
  checkToolsets,
  commonWarnings,
  readStateSecret,
  resolveLogLevel,
  validateSettings,
} from './validate.js'

// Parsing: argv (node:util parseArgs, strict) and env into raw values, flags winning over env
// vars, each group handed to its validation; every problem becomes one ConfigError line that
// names the flag or variable.

type Values = Record<string, string | boolean | string[] | undefined>
type ArgOptions = Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>

const list = (value: string | string[] | undefined): string[] =>
  (Array.isArray(value) ? value : value === undefined ? [] : [value])
    .flatMap((item) => item.split(','))
    .map((item) => item.trim())
    .filter(Boolean)

const truthy = (value: string | undefined): boolean | undefined =>
  value === undefined || value === '' ? undefined : /^(1|true|yes|on)$/i.test(value)

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

/** A flag's raw value: argv first, else its env vars (`1/true/yes/on` for booleans, commas for lists). */
function readRaw(
  values: Values,
  env: NodeJS.ProcessEnv,
  flag: { flag: string; type: 'string' | 'boolean'; multiple?: boolean; env?: string | string[] },
): { value: unknown; fromArgv: boolean; fromEnv: { name: string; value: string } | undefined } {
  const fromArgv = values[flag.flag]
  const fromEnv = fromArgv === undefined ? readEnv(env, flag.env) : undefined
  let value: unknown
  if (flag.type === 'boolean') value = fromArgv ?? truthy(fromEnv?.value)
  else if (flag.multiple)
    value = fromArgv !== undefined || fromEnv ? list((fromArgv as string[]) ?? fromEnv?.value) : undefined
  else value = fromArgv ?? fromEnv?.value
  return { value, fromArgv: fromArgv !== undefined, fromEnv }
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0]
  if (!issue) return 'invalid value'
  const where = issue.path.length ? ` (${issue.path.join('.')})` : ''
  return `${issue.message}${where}`
}

/** The parseArgs options of every flag: common, OAuth, operations, then the server's own. */
function argOptionsOf(
  commonFlags: ReturnType<typeof commonFlagsOf>,
  serverOptions: Record<string, OptionSpec<unknown>>,
): ArgOptions {
  const argOptions: ArgOptions = {}
  for (const flag of [...commonFlags, ...AUTH_FLAGS, ...OBSERVE_FLAGS])
    argOptions[flag.flag] = {
      type: flag.type,
      ...('multiple' in flag && flag.multiple ? { multiple: true } : {}),
    }
  for (const spec of Object.values(serverOptions)) {
    if (argOptions[spec.flag]) throw new Error(`option --${spec.flag} is defined twice`)
    // parseArgs would refuse it, but only when there are arguments to parse (see readArgv).
    if (spec.short !== undefined && spec.short.length !== 1)
      throw new Error(`option --${spec.flag}: short must be one character, got "${spec.short}"`)
    argOptions[spec.flag] = {
      type: spec.type,
      ...(spec.multiple ? { multiple: true } : {}),
      ...(spec.short ? { short: spec.short } : {}),
    }
  }
  return argOptions
}

function readArgv(argv: string[], options: ArgOptions): { values: Values; positionals: string[] } {
  // What parseArgs gives for no arguments (no option has a default), without its cost at every
  // start of a server run with none (about 1 ms: a client usually passes nothing, config is in env).
  if (argv.length === 0) return { values: Object.create(null) as Values, positionals: [] }
  try {
    const parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true })
    return { values: parsed.values as Values, positionals: parsed.positionals }
  } catch (error) {
    const message = (error as Error).message.replace(/\. To specify a positional.*$/s, '')
    throw new ConfigError(`${message}. Run with --help to see the options.`)
  }
}

/** The common settings, validated; a secret given on argv adds a warning. */
function readCommon(
  commonFlags: ReturnType<typeof commonFlagsOf>,
  values: Values,
  env: NodeJS.ProcessEnv,
  secrets: string[],
  warnings: string[],
): CommonData {
  const raw: Record<string, unknown> = {}
  for (const flag of commonFlags) {
    const key = flag.key
    if (!key) continue
    const { value, fromArgv } = readRaw(values, env, flag)
    raw[key] = value
    if (flag.secret && typeof value === 'string') {
      secrets.push(value)
      if (fromArgv)
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
  return validated.data as unknown as CommonData
}

function parseAuth(values: Values, env: NodeJS.ProcessEnv, secrets: string[]): AuthConfig {
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

function parseObserve(values: Values, env: NodeJS.ProcessEnv): ObserveConfig {
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

/** Schemas of options given as functions, built once per process. */
const optionSchemas = new WeakMap<OptionSpec<unknown>, z.ZodType>()

function optionSchema(spec: OptionSpec<unknown>): z.ZodType {
  if (typeof spec.schema !== 'function') return spec.schema
  let schema = optionSchemas.get(spec)
  if (!schema) {
    schema = spec.schema()
    optionSchemas.set(spec, schema)
  }
  return schema
}

/**
 * The server's own options, each through its schema (an unset option with an `unset` value takes
 * it without one); the error names where the value came from.
 */
function readServerOptions(
  serverOptions: Record<string, OptionSpec<unknown>>,
  values: Values,
  env: NodeJS.ProcessEnv,
  secrets: string[],
  warnings: string[],
): Record<string, unknown> {
  const options: Record<string, unknown> = {}
  for (const [key, spec] of Object.entries(serverOptions)) {
    const { value, fromArgv, fromEnv } = readRaw(values, env, spec)
    if (value === undefined && 'unset' in spec) {
      options[key] = Array.isArray(spec.unset) ? [...spec.unset] : spec.unset
      continue
    }
    const result = optionSchema(spec).safeParse(value)
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
      if (fromArgv) {
        const envName = typeof spec.env === 'string' ? spec.env : spec.env?.[0]
        warnings.push(
          `--${spec.flag} on the command line is visible in process lists${envName ? `; prefer ${envName}` : ''}`,
        )
      }
    }
  }
  return options
}

function readPositionals(spec: PositionalSpec | undefined, positionals: string[]): string[] {
  if (spec) {
    const result = spec.schema.safeParse(positionals)
    if (!result.success) throw new ConfigError(`Invalid <${spec.name}>: ${describeIssue(result.error)}`)
    return result.data
  }
  if (positionals.length)
    throw new ConfigError(`Unexpected argument "${positionals[0]}". Run with --help to see the options.`)
  return positionals
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
  const commonFlags = commonFlagsOf(source)
  const parsed = readArgv(argv, argOptionsOf(commonFlags, serverOptions))
  const { values } = parsed
  if (values.help) return { kind: 'help', text: helpText(source) }
  if (values.version) return { kind: 'version', text: source.version }

  // Checked in this order, so the first problem reported is the same whatever else is wrong.
  const secrets: string[] = []
  const warnings: string[] = []
  const common = readCommon(commonFlags, values, env, secrets, warnings)
  const auth = parseAuth(values, env, secrets)
  const authProblem = authConfigProblem(auth, common.authToken)
  if (authProblem) throw new ConfigError(authProblem)
  warnings.push(...authConfigWarnings(auth, common.transport, common.host))
  const observe = parseObserve(values, env)
  const observeProblem = observeConfigProblem(observe, common.transport)
  if (observeProblem) throw new ConfigError(observeProblem)
  if (otelConfigured(observe)) {
    // The standard OpenTelemetry variables (observe-config.ts): what Keel cannot export to is a
    // configuration error; an export they switch off entirely leaves the SDK unloaded.
    let exports: OtelExports
    try {
      exports = otelExports(env, otlpUrls(observe))
    } catch (error) {
      throw new ConfigError((error as Error).message)
    }
    if (exports.off) {
      warnings.push(`${exports.off}: OpenTelemetry export is off, its endpoints are not used`)
      observe.otelEndpoint = undefined
      observe.otelTracesEndpoint = undefined
      observe.otelMetricsEndpoint = undefined
    }
  }
  const logLevel = resolveLogLevel(common.logLevel)
  warnings.push(...commonWarnings(common, auth))
  checkToolsets(source.toolsets, common.toolsets)
  const options = readServerOptions(serverOptions, values, env, secrets, warnings)
  const positionals = readPositionals(source.positionals, parsed.positionals)

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
