import { format } from 'node:util'
import { redactor } from './redact.js'

/** Log levels, lowest first. `silent` turns logging off. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number]

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

/** MCP's logging levels (RFC 5424 names). */
export type McpLogLevel =
  | 'debug'
  | 'info'
  | 'notice'
  | 'warning'
  | 'error'
  | 'critical'
  | 'alert'
  | 'emergency'

const MCP_RANK: Record<McpLogLevel, number> = {
  debug: 10,
  info: 20,
  notice: 25,
  warning: 30,
  error: 40,
  critical: 50,
  alert: 60,
  emergency: 70,
}

/** Maps a Keel level to the MCP level name used in `notifications/message`. */
export function toMcpLevel(level: Exclude<LogLevel, 'silent'>): McpLogLevel {
  return level === 'warn' ? 'warning' : level
}

/** True when `level` is at or above the MCP `threshold`. */
export function mcpLevelAtLeast(level: McpLogLevel, threshold: McpLogLevel): boolean {
  return MCP_RANK[level] >= MCP_RANK[threshold]
}

/** A log record as written in JSON format. */
export interface LogRecord {
  time: string
  level: Exclude<LogLevel, 'silent'>
  logger: string
  msg: string
  [field: string]: unknown
}

/** Where records go besides stderr (MCP log notifications). Redacted before it is called. */
export type LogForwarder = (record: LogRecord) => void

/**
 * Which levels a forwarder takes (asked before a record is built). A forwarder without one takes
 * every level. Lets a record that neither stderr nor any client wants cost nothing: no field
 * copies, no redaction, no timestamp (the per-call debug line at the default level).
 */
export type LogAccepts = (level: Exclude<LogLevel, 'silent'>) => boolean

interface Forwarding {
  forward: LogForwarder
  accepts: LogAccepts | undefined
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Minimum level written to stderr. Default `LOG_LEVEL` env or `info`. */
  level?: LogLevel
  /** `pretty` (default) or `json` (`LOG_FORMAT=json`). */
  format?: 'pretty' | 'json'
  /** Logger name (the server's name). */
  name?: string
  /** Where lines are written. Defaults to `process.stderr`; never stdout (stdout is the protocol). */
  write?: (line: string) => void
}

interface LoggerState {
  level: LogLevel
  format: 'pretty' | 'json'
  write: (line: string) => void
  forwarders: Set<Forwarding>
}

/**
 * Structured logger that writes to stderr only. Every message and field passes through the
 * redactor, so tokens, passwords and URL credentials never reach a log line or a client.
 */
export class Logger {
  readonly #state: LoggerState
  readonly #name: string
  readonly #fields: Record<string, unknown>
  readonly #local: Forwarding | undefined

  /** @internal use {@link createLogger} */
  constructor(state: LoggerState, name: string, fields: Record<string, unknown> = {}, local?: Forwarding) {
    this.#state = state
    this.#name = name
    this.#fields = fields
    this.#local = local
  }

  /** The current minimum level. */
  get level(): LogLevel {
    return this.#state.level
  }

  /** Changes the minimum level for this logger and all its children. */
  setLevel(level: LogLevel): void {
    this.#state.level = level
  }

  /** True when a record at `level` would be written to stderr. */
  enabled(level: Exclude<LogLevel, 'silent'>): boolean {
    return RANK[level] >= RANK[this.#state.level]
  }

  /** A logger with a sub-name and fields added to every record. */
  child(name: string | undefined, fields: Record<string, unknown> = {}): Logger {
    return new Logger(
      this.#state,
      name ? `${this.#name}:${name}` : this.#name,
      { ...this.#fields, ...fields },
      this.#local,
    )
  }

  /**
   * A logger whose records are forwarded to `forwarder` only (not to the process-wide
   * forwarders): a tool call's log lines reach the client that made the call, and no other.
   * `accepts`, when given, says which levels it takes; records no one takes are not built.
   */
  withForwarder(forwarder: LogForwarder, accepts?: LogAccepts): Logger {
    return new Logger(this.#state, this.#name, this.#fields, { forward: forwarder, accepts })
  }

  /**
   * A child logger (see {@link child}) whose records go to `forwarder` only (see
   * {@link withForwarder}), built in one step: one per tool call.
   */
  childWithForwarder(
    name: string,
    fields: Record<string, unknown>,
    forwarder: LogForwarder,
    accepts?: LogAccepts,
  ): Logger {
    return new Logger(
      this.#state,
      `${this.#name}:${name}`,
      { ...this.#fields, ...fields },
      {
        forward: forwarder,
        accepts,
      },
    )
  }

  /**
   * Adds a forwarder (e.g. to MCP `notifications/message`); returns a function that removes it.
   * `accepts`, when given, says which levels it takes; records no one takes are not built.
   */
  addForwarder(forwarder: LogForwarder, accepts?: LogAccepts): () => void {
    const entry: Forwarding = { forward: forwarder, accepts }
    this.#state.forwarders.add(entry)
    return () => this.#state.forwarders.delete(entry)
  }

  /**
   * True when a record at `level` would go anywhere (stderr or a forwarder that takes it): lets a
   * caller skip building the fields of a record no one takes.
   */
  wants(level: Exclude<LogLevel, 'silent'>): boolean {
    return this.#wanted(level)
  }

  /** True when a record at `level` would go anywhere: stderr or a forwarder that takes it. */
  #wanted(level: Exclude<LogLevel, 'silent'>): boolean {
    if (RANK[level] >= RANK[this.#state.level]) return true
    if (this.#local) return this.#local.accepts?.(level) ?? true
    for (const entry of this.#state.forwarders) if (entry.accepts?.(level) ?? true) return true
    return false
  }

  debug(message: string, fields?: Record<string, unknown>): void {
    this.#log('debug', message, fields)
  }
  info(message: string, fields?: Record<string, unknown>): void {
    this.#log('info', message, fields)
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this.#log('warn', message, fields)
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.#log('error', message, fields)
  }

  #log(level: Exclude<LogLevel, 'silent'>, message: string, fields?: Record<string, unknown>): void {
    if (!this.#wanted(level)) return
    const forwarders = this.#local ? [this.#local] : this.#state.forwarders
    const merged = { ...this.#fields, ...fields }
    const record: LogRecord = {
      time: new Date().toISOString(),
      level,
      logger: this.#name,
      msg: redactor.redact(message),
      ...(redactor.redactValue(serializeFields(merged)) as Record<string, unknown>),
    }
    if (this.enabled(level)) {
      try {
        this.#state.write(this.#state.format === 'json' ? `${JSON.stringify(record)}\n` : prettyLine(record))
      } catch {
        // A closed stderr must never take the server down.
      }
    }
    for (const { forward, accepts } of forwarders) {
      if (accepts && !accepts(level)) continue
      try {
        forward(record)
      } catch {
        // forwarding is best effort
      }
    }
  }
}

function serializeFields(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(fields)) {
    if (value instanceof Error) {
      out[key] = {
        name: value.name,
        message: value.message,
        stack: value.stack,
        code: (value as { code?: unknown }).code,
      }
    } else if (value !== undefined) {
      out[key] = value
    }
  }
  return out
}

function prettyLine(record: LogRecord): string {
  const { time, level, logger, msg, ...rest } = record
  const extras = Object.entries(rest)
    .map(([key, value]) => {
      if (value && typeof value === 'object' && 'stack' in value && typeof value.stack === 'string') {
        return `\n  ${value.stack.split('\n').join('\n  ')}`
      }
      return ` ${key}=${typeof value === 'string' ? value : format('%j', value)}`
    })
    .join('')
  return `${time.slice(11, 23)} ${level.toUpperCase().padEnd(5)} [${logger}] ${msg}${extras}\n`
}

function parseLevel(value: string | undefined): LogLevel | undefined {
  if (!value) return undefined
  const lower = value.toLowerCase()
  if (lower === 'warning') return 'warn'
  return (LOG_LEVELS as readonly string[]).includes(lower) ? (lower as LogLevel) : undefined
}

let stderrGuarded = false
/**
 * Writes a log line to stderr. A stderr nobody reads any more (EPIPE: the client that started the
 * server died) loses the line and nothing else: its error is not thrown, so it never reaches the
 * uncaught-exception handler, whose log line would fail on the same pipe, and again, without end.
 */
function writeStderr(line: string): void {
  if (!stderrGuarded) {
    stderrGuarded = true
    process.stderr.on('error', () => undefined)
  }
  process.stderr.write(line)
}

/** Creates the root logger. Reads `LOG_LEVEL` and `LOG_FORMAT` from `env` when not given. */
export function createLogger(options: LoggerOptions = {}, env: NodeJS.ProcessEnv = process.env): Logger {
  const state: LoggerState = {
    level: options.level ?? parseLevel(env.LOG_LEVEL) ?? 'info',
    format: options.format ?? (env.LOG_FORMAT?.toLowerCase() === 'json' ? 'json' : 'pretty'),
    write: options.write ?? writeStderr,
    forwarders: new Set(),
  }
  return new Logger(state, options.name ?? 'keel')
}

export { parseLevel as parseLogLevel }

/** A log record as the data of an MCP `notifications/message`: stacks stay on stderr. */
export function logData(record: LogRecord): unknown {
  const { time: _time, level: _level, logger: _logger, msg, ...fields } = record
  for (const [key, value] of Object.entries(fields)) {
    // Stacks stay on stderr: the client gets the message only.
    if (value && typeof value === 'object' && 'stack' in value) {
      fields[key] = {
        name: (value as { name?: unknown }).name,
        message: (value as { message?: unknown }).message,
      }
    }
  }
  return Object.keys(fields).length ? { message: msg, ...fields } : msg
}
