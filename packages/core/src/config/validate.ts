import { readFileSync } from 'node:fs'
import { z } from 'zod'
import { type AuthConfig, type LazySetting, once } from '../auth-config.js'
import { type LogLevel, parseLogLevel } from '../logger.js'
import type { CommonData } from './flags.js'
import { ConfigError } from './types.js'

// Validation of the common settings: one lazily built schema per setting, then the checks that
// need more than a schema (the log level, the state secret file, toolset names) and the warnings
// about settings that work but are risky.

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

/** The log level of `--log-level` / `LOG_LEVEL` (default `info`). */
export function resolveLogLevel(value: string | undefined): LogLevel {
  if (value === undefined) return 'info'
  const level = parseLogLevel(value)
  if (!level)
    throw new ConfigError(
      `Invalid --log-level (env LOG_LEVEL): "${value}" is not one of debug, info, warn, error, silent`,
    )
  return level
}

/** Warnings about settings that work but expose the server, or do nothing. */
export function commonWarnings(common: CommonData, auth: AuthConfig): string[] {
  const warnings: string[] = []
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
  return warnings
}

/** The state secret from the flag or env var, or read from a file (one trailing newline dropped). */
export function readStateSecret(value: string | undefined, file: string | undefined): string | undefined {
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

/**
 * Refuses toolset names the server does not have (exit 2): a typo would otherwise start a server
 * with no tools and say nothing. `all` is accepted everywhere, also where there are no toolsets.
 */
export function checkToolsets(known: Record<string, string> | undefined, asked: string[]): void {
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
