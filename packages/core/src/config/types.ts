import type { z } from 'zod'
import type { AuthConfig } from '../auth-config.js'
import type { LogLevel } from '../logger.js'
import type { ObserveConfig } from '../observe-config.js'
import type { CommonFlagName } from './flags.js'

// What a configuration is: the server's own options as it declares them, the common config every
// server gets, and what parsing returns.

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
  /**
   * Validates and converts the raw value (`undefined` when unset: give defaults here). A function
   * that returns the schema is called on the first value there is to check, once per process: with
   * {@link OptionSpec.unset}, a start that is not given the option builds no schema for it.
   */
  schema: z.ZodType<T> | (() => z.ZodType<T>)
  /**
   * The option's value when neither its flag nor its env vars are set, taken without running the
   * schema: it must be exactly what the schema gives for `undefined` (test that, as the servers
   * do). Left out, an unset option goes through the schema like any value.
   */
  unset?: T
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

/** What `parseConfig` and `helpText` need to know about the server. */
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
