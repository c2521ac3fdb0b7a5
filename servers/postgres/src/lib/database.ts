/**
 * The connection to PostgreSQL: a lazily created pg.Pool, a read-only executor with row caps,
 * timeouts and real server-side cancellation, EXPLAIN, and catalog queries.
 *
 * Security invariants (each enforced here, independent of the parser gate in sql-guard.ts):
 * - every connection starts with `default_transaction_read_only = on`, the string rules the parser
 *   gate assumes (`standard_conforming_strings = on`, set in the startup packet so that no database
 *   or role default can change them) and the configured role;
 * - every function, operator, cast and view a statement reaches is judged by the catalog before it
 *   runs (function-policy.ts);
 * - after every call the session is reset (ROLLBACK, DISCARD ALL: advisory locks, LISTEN, prepared
 *   statements, cursors, settings) and set up again, or the connection is destroyed;
 * - the bytes a call receives are counted as they arrive; past the budget the backend is cancelled
 *   and the connection destroyed, so no result can exhaust the process's memory;
 * - every statement runs in `BEGIN … READ ONLY` and is always rolled back, never committed;
 * - statements go through the extended query protocol, which refuses multiple statements;
 * - only maxRows + 1 rows are fetched (through a cursor), whatever the query returns;
 * - catalog SQL is parameterised: no identifier or value from a caller is concatenated into SQL.
 */
import { connect as netConnect } from 'node:net'
import type { ConnectionOptions } from 'node:tls'
import type { FieldDef, Pool, PoolClient, PoolConfig } from 'pg'
import type Cursor from 'pg-cursor'
import {
  DatabaseConfigError,
  isConnectionError,
  QueryCancelledError,
  QueryTimeoutError,
  ResultTooLargeError,
  SqlRefusedError,
} from './errors.js'
import type { ResultField } from './format.js'
import { assertReferencesAllowed } from './function-policy.js'
import { loadDependency } from './load.js'
import { checkReadOnlySql, type SqlReferences } from './sql-guard.js'

export interface SslOptions {
  /**
   * `disable`: plain TCP. `require`: TLS without certificate checks. `verify-ca`: TLS, the server
   * certificate must chain to `ca` (host name not checked). `verify-full`: also checks the host name.
   */
  readonly mode: 'disable' | 'require' | 'verify-ca' | 'verify-full'
  /** PEM text of the CA certificate(s) to trust (contents, not a path). */
  readonly ca?: string
  /** PEM text of a client certificate and its key, for certificate authentication. */
  readonly cert?: string
  readonly key?: string
}

export interface QueryLimits {
  /** Rows returned at most; one more is fetched to tell whether there were more. Default 1,000. */
  readonly maxRows: number
  /** statement_timeout of each call, in ms. Default 30,000. */
  readonly timeoutMs: number
  /** lock_timeout of each call, in ms (never more than timeoutMs). Default 5,000. */
  readonly lockTimeoutMs: number
  /** idle_in_transaction_session_timeout of each call, in ms. Default 60,000. */
  readonly idleInTransactionTimeoutMs: number
}

export interface DatabaseOptions {
  /** A postgres:// URL (DATABASE_URL). Without one, node-postgres reads the standard PG* variables. */
  readonly connectionString?: string
  /** TLS settings, used when the connection string has no `sslmode`/`ssl` parameter of its own. */
  readonly ssl?: SslOptions
  /** Connections in the pool. Default 5. */
  readonly poolSize?: number
  /** Role to `SET ROLE` to on every connection: an identifier, matched exactly (case-sensitive). */
  readonly role?: string
  /** Allow-list of schemas for the catalog methods (listSchemas, listTables, describeTable). */
  readonly schemas?: readonly string[]
  /** Default 'keel-mcp-postgres'. */
  readonly applicationName?: string
  /** Time to establish a connection, in ms. Default 10,000. */
  readonly connectionTimeoutMs?: number
  /** Idle connections are closed after this many ms. Default 10,000. */
  readonly idleTimeoutMs?: number
  /** Defaults for every call; each call may pass its own maxRows and timeoutMs. */
  readonly limits?: Partial<QueryLimits>
  /**
   * Bytes one call may receive from PostgreSQL (rows as sent on the wire). Past it the statement is
   * cancelled and the call fails with {@link ResultTooLargeError}. Default 32 MiB.
   */
  readonly maxResultBytes?: number
  /** Errors that happen outside any call (an idle connection dropped by a server restart, …). */
  readonly onBackgroundError?: (error: Error) => void
}

export interface QueryOptions {
  readonly maxRows?: number
  readonly timeoutMs?: number
  /** Aborting cancels the statement on the server (pg_cancel_backend) and rejects the call. */
  readonly signal?: AbortSignal
}

export type CallOptions = Pick<QueryOptions, 'timeoutMs' | 'signal'>

export interface QueryResult {
  readonly fields: ResultField[]
  /** One array per row, values in field order (duplicate column names stay distinct). */
  readonly rows: unknown[][]
  /** Number of rows returned (≤ maxRows). */
  readonly rowCount: number
  /** True when the query had more rows than maxRows. */
  readonly truncated: boolean
}

export interface ExplainResult {
  /** PostgreSQL's JSON plan: the object with `Plan`, `Planning Time`, and with analyze `Execution Time`. */
  readonly plan: Record<string, unknown>
  readonly analyzed: boolean
}

export interface SchemaInfo {
  readonly name: string
  readonly owner: string
  readonly comment: string | null
  /** pg_catalog, information_schema and other pg_* schemas. */
  readonly system: boolean
  /** Whether the current role has USAGE on the schema. */
  readonly accessible: boolean
  /** Tables, views, materialized views and foreign tables (partitions not counted). */
  readonly tableCount: number
}

export type TableKind = 'table' | 'view' | 'materialized_view' | 'foreign_table'

export interface ListTablesOptions extends CallOptions {
  /** Only this schema. Without it, all non-system schemas (within the allow-list). */
  readonly schema?: string
  /**
   * Case-insensitive name filter: a substring, or a pattern where `*` matches any characters and
   * `?` one character. `%`, `_` and `\` match themselves.
   */
  readonly pattern?: string
  readonly kinds?: readonly TableKind[]
  /** Default 100, at most 1,000. */
  readonly limit?: number
  readonly offset?: number
}

export interface TableSummary {
  readonly schema: string
  readonly name: string
  readonly kind: TableKind
  /** From pg_class.reltuples: null when never analysed, or for views. */
  readonly estimatedRows: number | null
  readonly comment: string | null
}

export interface TablePage {
  readonly tables: TableSummary[]
  /** All matches, across pages. */
  readonly total: number
  readonly limit: number
  readonly offset: number
  /** Offset of the next page, or null on the last page. */
  readonly nextOffset: number | null
}

export interface ColumnInfo {
  readonly name: string
  /** format_type, e.g. `character varying(80)`, `numeric(10,2)`, `text[]`. */
  readonly type: string
  readonly nullable: boolean
  /** Default expression, or the generation expression of a generated column. */
  readonly default: string | null
  readonly comment: string | null
  readonly identity: 'always' | 'by_default' | null
  readonly generated: 'stored' | 'virtual' | null
}

export type ReferentialAction = 'no_action' | 'restrict' | 'cascade' | 'set_null' | 'set_default'

export interface ForeignKeyInfo {
  readonly name: string
  readonly columns: string[]
  readonly referencedSchema: string
  readonly referencedTable: string
  readonly referencedColumns: string[]
  readonly onUpdate: ReferentialAction
  readonly onDelete: ReferentialAction
  readonly definition: string
}

export interface IncomingForeignKeyInfo {
  readonly name: string
  /** The referencing table. */
  readonly schema: string
  readonly table: string
  readonly columns: string[]
  /** Columns of the described table. */
  readonly referencedColumns: string[]
  readonly definition: string
}

export interface ConstraintInfo {
  readonly name: string
  readonly type: 'unique' | 'check' | 'exclusion'
  readonly columns: string[]
  readonly definition: string
}

export interface IndexInfo {
  readonly name: string
  readonly definition: string
  readonly method: string
  readonly unique: boolean
  readonly primary: boolean
  readonly valid: boolean
}

export interface TableDescription {
  readonly schema: string
  readonly name: string
  readonly kind: TableKind
  readonly comment: string | null
  readonly estimatedRows: number | null
  /** Table + indexes + TOAST, in bytes. */
  readonly totalBytes: number
  /** SELECT of a view or materialized view. */
  readonly viewDefinition: string | null
  readonly columns: ColumnInfo[]
  readonly primaryKey: { readonly name: string; readonly columns: string[] } | null
  readonly foreignKeys: ForeignKeyInfo[]
  readonly referencedBy: IncomingForeignKeyInfo[]
  readonly constraints: ConstraintInfo[]
  readonly indexes: IndexInfo[]
}

export interface HealthInfo {
  readonly database: string
  readonly user: string
  readonly serverVersion: string
  readonly serverVersionNum: number
  /** transaction_read_only inside the call: always true unless something is badly wrong. */
  readonly readOnly: boolean
  readonly inRecovery: boolean
  readonly latencyMs: number
}

const defaultLimits: QueryLimits = {
  maxRows: 1_000,
  timeoutMs: 30_000,
  lockTimeoutMs: 5_000,
  idleInTransactionTimeoutMs: 60_000,
}

/** The client-side deadline trails the server's statement_timeout, so the server normally wins. */
const clientDeadlineGraceMs = 500
/** After a cancel, how long to wait for the statement to stop before dropping the connection. */
const cancelGraceMs = 2_000
/** How long one cancel gets to take effect before it is sent again. */
const cancelRetryMs = 100
const rollbackDeadlineMs = 5_000
const defaultMaxResultBytes = 32 * 1024 * 1024

/**
 * Set in the startup packet of every connection: a client setting there outranks database and role
 * defaults (ALTER DATABASE/ROLE … SET), and RESET/DISCARD ALL return to it. The parser gate reads
 * string literals as PostgreSQL does only under these rules: with standard_conforming_strings off,
 * `'x\' , '` would be one literal to the gate and a literal plus code to the server.
 */
const startupSettings = [
  'standard_conforming_strings=on',
  'backslash_quote=safe_encoding',
  'default_transaction_read_only=on',
]

/**
 * Splits the connection string's own `options` startup parameter off (pg would let it replace
 * ours), so that it can be sent before ours.
 */
function splitStartupOptions(connectionString: string): { connectionString: string; options?: string } {
  try {
    const url = new URL(connectionString)
    const options = url.searchParams.get('options')
    if (options === null) return { connectionString }
    url.searchParams.delete('options')
    return { connectionString: url.toString(), options }
  } catch {
    return { connectionString }
  }
}

const identifierPattern = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/

/** Quotes an SQL identifier (doubling embedded quotes). Only for values already validated. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

/**
 * Turns a user's table-name pattern into an ILIKE pattern: LIKE's own wildcards and the escape
 * character are escaped; `*` and `?` become `%` and `_`; without a wildcard it is a substring match.
 */
export function toLikePattern(pattern: string): string {
  const escaped = pattern.replace(/[\\%_]/g, (character) => `\\${character}`)
  if (!/[*?]/.test(pattern)) return `%${escaped}%`
  return escaped.replace(/\*/g, '%').replace(/\?/g, '_')
}

/** The node TLS options for an sslmode, with libpq's meaning of each mode. */
export function tlsOptions(ssl: SslOptions): false | ConnectionOptions {
  const client = {
    ...(ssl.cert === undefined ? {} : { cert: ssl.cert }),
    ...(ssl.key === undefined ? {} : { key: ssl.key }),
  }
  const ca = ssl.ca === undefined ? {} : { ca: ssl.ca }
  switch (ssl.mode) {
    case 'disable':
      return false
    case 'require':
      return { rejectUnauthorized: false, ...client }
    case 'verify-ca':
      return { rejectUnauthorized: true, checkServerIdentity: () => undefined, ...ca, ...client }
    case 'verify-full':
      return { rejectUnauthorized: true, ...ca, ...client }
  }
}

function positiveInteger(name: string, value: number, { allowZero = false } = {}): number {
  if (!Number.isInteger(value) || value < (allowZero ? 0 : 1)) {
    throw new DatabaseConfigError(`${name} must be ${allowZero ? 'a non-negative' : 'a positive'} integer`)
  }
  return value
}

const kindByRelkind: Readonly<Record<string, TableKind>> = {
  r: 'table',
  p: 'table',
  v: 'view',
  m: 'materialized_view',
  f: 'foreign_table',
}
const relkindsByKind: Readonly<Record<TableKind, readonly string[]>> = {
  table: ['r', 'p'],
  view: ['v'],
  materialized_view: ['m'],
  foreign_table: ['f'],
}
const referentialActions: Readonly<Record<string, ReferentialAction>> = {
  a: 'no_action',
  r: 'restrict',
  c: 'cascade',
  n: 'set_null',
  d: 'set_default',
}

const toNumberOrNull = (value: unknown): number | null =>
  value === null || value === undefined ? null : Number(value)

/** pg-cursor's read with the field list, which the promise form of read() drops. */
function readCursor(cursor: Cursor, rows: number): Promise<{ rows: unknown[][]; fields: FieldDef[] }> {
  return new Promise((resolve, reject) => {
    cursor.read(rows, (error, result, info) => {
      if (error) reject(error)
      else resolve({ rows: result as unknown[][], fields: info?.fields ?? [] })
    })
  })
}

/** Resolves when `promise` settles or `ms` pass, whichever is first; never rejects. */
async function settleWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms)
  })
  const settled = promise.then(
    () => true,
    () => true,
  )
  try {
    return await Promise.race([settled, deadline])
  } finally {
    clearTimeout(timer)
  }
}

interface ClientInternals {
  processID: number
  secretKey: number
  host: string
  port: number
}

type CursorClass = typeof Cursor
type PgModule = typeof import('pg')

/**
 * One database connection configuration and its pool. Nothing is loaded or connected until the
 * first call. All methods are safe to call concurrently.
 */
export class Database {
  readonly #options: DatabaseOptions
  readonly #limits: QueryLimits
  readonly #poolSize: number
  readonly #schemas: string[] | null
  #pool: Promise<{ pool: Pool; Cursor: CursorClass }> | undefined
  #closed = false
  readonly #typeNames = new Map<number, string>()
  /** Clients that emitted an error while checked out: destroyed on release, never reused. */
  readonly #broken = new WeakSet<object>()
  readonly #maxResultBytes: number
  /**
   * Run on every new connection and again after every call's DISCARD ALL, before anything else.
   * Repeats the startup settings, in case a connection string's own options replaced them.
   */
  readonly #sessionSetup: string

  constructor(options: DatabaseOptions = {}) {
    if (options.role !== undefined && !identifierPattern.test(options.role)) {
      throw new DatabaseConfigError(
        'The role must be a plain identifier: letters, digits, _ and $, starting with a letter or _, at most 63 characters.',
      )
    }
    if (options.schemas?.some((schema) => typeof schema !== 'string' || schema === '')) {
      throw new DatabaseConfigError('Schema names in the allow-list must be non-empty strings.')
    }
    const limits = { ...defaultLimits, ...options.limits }
    positiveInteger('limits.maxRows', limits.maxRows, { allowZero: true })
    positiveInteger('limits.timeoutMs', limits.timeoutMs)
    positiveInteger('limits.lockTimeoutMs', limits.lockTimeoutMs)
    positiveInteger('limits.idleInTransactionTimeoutMs', limits.idleInTransactionTimeoutMs)
    this.#poolSize = positiveInteger('poolSize', options.poolSize ?? 5)
    this.#maxResultBytes = positiveInteger('maxResultBytes', options.maxResultBytes ?? defaultMaxResultBytes)
    this.#sessionSetup = [
      'SET standard_conforming_strings = on',
      'SET backslash_quote = safe_encoding',
      'SET default_transaction_read_only = on',
      ...(options.role === undefined ? [] : [`SET ROLE ${quoteIdentifier(options.role)}`]),
    ].join('; ')
    this.#limits = limits
    this.#schemas = options.schemas === undefined ? null : [...options.schemas]
    this.#options = options
  }

  /** The schema allow-list, or null when every schema is visible. */
  get schemas(): readonly string[] | null {
    return this.#schemas
  }

  /** The default limits applied to each call. */
  get limits(): QueryLimits {
    return this.#limits
  }

  #getPool(): Promise<{ pool: Pool; Cursor: CursorClass }> {
    if (this.#closed) return Promise.reject(new Error('The database connection pool is closed.'))
    this.#pool ??= this.#createPool().catch((error: unknown) => {
      this.#pool = undefined
      throw error
    })
    return this.#pool
  }

  async #createPool(): Promise<{ pool: Pool; Cursor: CursorClass }> {
    // Loaded on first use: start-up of the server must not pay for pg.
    const pg = loadDependency<PgModule>('pg')
    const CursorClass = loadDependency<CursorClass>('pg-cursor')
    // Dates and timestamps stay PostgreSQL's text: a JS Date would shift `timestamp without time
    // zone` into the process time zone and drop microseconds. Intervals stay text too.
    const textArrayOid: number = 1009 // text[]: not among pg-types' named builtins
    const textArray = pg.types.getTypeParser(textArrayOid, 'text')
    // int8 (20) arrives as text too: pg's default parser returns the same string after a regex test
    // per value, a cost that shows at 100,000 rows.
    const rawText = new Set([20, 1082, 1114, 1184, 1186])
    const rawTextArrays = new Set([1182, 1115, 1185, 1187])
    const getTypeParser = ((oid: number, format?: 'text' | 'binary') => {
      if (format !== 'binary' && rawText.has(oid)) return (value: string) => value
      if (format !== 'binary' && rawTextArrays.has(oid)) return textArray
      return pg.types.getTypeParser(oid, format)
    }) as typeof pg.types.getTypeParser
    const sessionSetup = this.#sessionSetup
    const connection =
      this.#options.connectionString === undefined
        ? undefined
        : splitStartupOptions(this.#options.connectionString)
    // Ours come last: for a repeated -c the last one wins.
    const configured = connection === undefined ? process.env.PGOPTIONS : connection.options
    const options = [configured, ...startupSettings.map((setting) => `-c ${setting}`)]
      .filter((part) => part !== undefined && part !== '')
      .join(' ')
    const config: PoolConfig = {
      options,
      max: this.#poolSize,
      application_name: this.#options.applicationName ?? 'keel-mcp-postgres',
      connectionTimeoutMillis: this.#options.connectionTimeoutMs ?? 10_000,
      idleTimeoutMillis: this.#options.idleTimeoutMs ?? 10_000,
      allowExitOnIdle: true,
      keepAlive: true,
      types: { getTypeParser },
      // Awaited by pg-pool before the client is handed out; if it fails the client is discarded,
      // so no statement can ever run on a connection without these settings.
      onConnect: async (client) => {
        // Errors while idle reach the pool's 'error' event (reported below); errors while checked
        // out surface through the running statement. Either way the client is never reused.
        client.on('error', () => {
          this.#broken.add(client)
        })
        try {
          await client.query(sessionSetup)
        } catch (error) {
          // A missing role or one the login may not switch to is a configuration problem, not
          // something the caller of a query can fix.
          const code = (error as { code?: unknown }).code
          if (code === '22023' || code === '42704' || code === '42501') {
            throw new DatabaseConfigError(
              `Cannot switch to the configured role: ${(error as Error).message}`,
              {
                cause: error,
              },
            )
          }
          throw error
        }
      },
    }
    if (connection !== undefined) config.connectionString = connection.connectionString
    if (this.#options.ssl !== undefined) config.ssl = tlsOptions(this.#options.ssl)
    const pool = new pg.Pool(config)
    // Without a listener, an idle connection dropped by the server (restart, admin shutdown,
    // idle timeout) would crash the process. pg-pool has already removed the client.
    pool.on('error', (error) => this.#options.onBackgroundError?.(error))
    return { pool, Cursor: CursorClass }
  }

  #resolveLimits(options: QueryOptions): QueryLimits {
    const maxRows = positiveInteger('maxRows', options.maxRows ?? this.#limits.maxRows, { allowZero: true })
    const timeoutMs = positiveInteger('timeoutMs', options.timeoutMs ?? this.#limits.timeoutMs)
    return {
      maxRows,
      timeoutMs,
      lockTimeoutMs: Math.min(this.#limits.lockTimeoutMs, timeoutMs),
      idleInTransactionTimeoutMs: Math.max(this.#limits.idleInTransactionTimeoutMs, timeoutMs),
    }
  }

  /** Checks out a client and opens the read-only transaction; retries once on a dead connection. */
  async #begin(limits: QueryLimits): Promise<PoolClient> {
    // Integers validated by #resolveLimits: nothing from a caller is spliced in as text.
    const begin = [
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
      `SET LOCAL statement_timeout = ${limits.timeoutMs}`,
      `SET LOCAL lock_timeout = ${limits.lockTimeoutMs}`,
      `SET LOCAL idle_in_transaction_session_timeout = ${limits.idleInTransactionTimeoutMs}`,
    ].join('; ')
    for (let attempt = 0; ; attempt++) {
      const { pool } = await this.#getPool()
      const client = await pool.connect()
      try {
        await client.query(begin)
        return client
      } catch (error) {
        client.release(true)
        // An idle connection may have died with a server restart before the pool noticed.
        // Nothing has run yet, so one retry on a fresh connection is safe.
        if (attempt === 0 && isConnectionError(error)) continue
        throw error
      }
    }
  }

  /**
   * Runs `work` inside a READ ONLY transaction that is always rolled back, with statement, lock and
   * idle timeouts. On abort or client-side deadline the statement is cancelled on the server and
   * the connection is dropped rather than reused.
   */
  async #inReadOnlyTransaction<T>(
    limits: QueryLimits,
    signal: AbortSignal | undefined,
    work: (client: PoolClient) => Promise<T>,
  ): Promise<T> {
    if (signal?.aborted) throw new QueryCancelledError({ cause: signal.reason })
    const client = await this.#begin(limits)
    if (signal?.aborted) {
      // Aborted while waiting for a connection: nothing ran yet.
      const rolledBack = await client.query('ROLLBACK').then(
        () => true,
        () => false,
      )
      client.release(rolledBack ? undefined : true)
      throw new QueryCancelledError({ cause: signal.reason })
    }
    let destroy = false
    let interruption: Error | undefined
    let timer: NodeJS.Timeout | undefined
    let onAbort: (() => void) | undefined
    let stopCounting: (() => void) | undefined
    const interrupted = new Promise<never>((_, reject) => {
      const interrupt = (error: Error) => {
        interruption ??= error
        reject(interruption)
      }
      stopCounting = this.#countReceivedBytes(client, () =>
        interrupt(new ResultTooLargeError(this.#maxResultBytes)),
      )
      timer = setTimeout(
        () => interrupt(new QueryTimeoutError(limits.timeoutMs)),
        limits.timeoutMs + clientDeadlineGraceMs,
      )
      onAbort = () => interrupt(new QueryCancelledError({ cause: signal?.reason }))
      if (signal?.aborted) onAbort()
      else signal?.addEventListener('abort', onAbort, { once: true })
    })
    interrupted.catch(() => undefined)
    const running = work(client)
    running.catch(() => undefined)
    try {
      return await Promise.race([running, interrupted])
    } catch (error) {
      if (interruption === undefined) throw error
      // The statement may still be running on the server: cancel it there, then never reuse this
      // connection (a late cancel could otherwise hit the next statement run on it).
      destroy = true
      await this.#cancelUntilStopped(client, running)
      throw interruption
    } finally {
      clearTimeout(timer)
      stopCounting?.()
      if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort)
      if (this.#broken.has(client)) destroy = true
      if (!destroy) destroy = !(await this.#resetSession(client))
      client.release(destroy ? true : undefined)
    }
  }

  /**
   * Returns the connection to a fresh session: the transaction rolled back, then DISCARD ALL
   * (session-level advisory locks, LISTEN, prepared statements, cursors, temporary tables,
   * settings: whatever a function or view did that a rollback keeps) and the session setup again.
   * The parser gate cannot see into function and view bodies, so this does not depend on it.
   * False when any step fails or stalls: the connection must then be destroyed.
   */
  async #resetSession(client: PoolClient): Promise<boolean> {
    const reset = (async () => {
      await client.query('ROLLBACK')
      await client.query('DISCARD ALL')
      await client.query(this.#sessionSetup)
    })()
    reset.catch(() => undefined)
    if (!(await settleWithin(reset, rollbackDeadlineMs))) return false
    return reset.then(
      () => true,
      () => false,
    )
  }

  /**
   * Counts the bytes `client` receives from now on; past the budget, stops the inflow at once
   * (destroying the socket, so pg's parser stops buffering) and calls `exceeded`. The caller then
   * cancels the backend and drops the connection. Returns the function that stops counting.
   */
  #countReceivedBytes(client: PoolClient, exceeded: () => void): () => void {
    const stream = (
      client as unknown as { connection?: { stream?: NodeJS.ReadableStream & { destroy(): void } } }
    ).connection?.stream
    if (stream === undefined) return () => undefined
    let received = 0
    const onData = (chunk: Buffer | string) => {
      received += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length
      if (received <= this.#maxResultBytes) return
      stream.removeListener('data', onData)
      this.#broken.add(client)
      stream.destroy()
      exceeded()
    }
    stream.on('data', onData)
    return () => stream.removeListener('data', onData)
  }

  /**
   * Cancels the statement running on `target` and waits (at most cancelGraceMs) for it to stop.
   * PostgreSQL ignores a cancel that arrives while the backend waits for the next protocol message,
   * as it does between pg-cursor's Parse/Bind/Describe and its Execute; the statement would then
   * run on after the connection is dropped (until its statement_timeout). So the cancel is sent
   * again until the statement has really ended.
   */
  async #cancelUntilStopped(target: PoolClient, running: Promise<unknown>): Promise<void> {
    const deadline = performance.now() + cancelGraceMs
    do {
      await this.#cancelBackend(target)
      if (await settleWithin(running, cancelRetryMs)) return
    } while (performance.now() < deadline)
  }

  /**
   * Cancels the statement running on `target`: pg_cancel_backend from another pool connection when
   * the pool has room; otherwise, or when that is not permitted (a SET ROLE session may not signal
   * its own login role's backends), the protocol-level CancelRequest with the backend's secret key.
   */
  async #cancelBackend(target: PoolClient): Promise<void> {
    const { processID } = target as unknown as ClientInternals
    try {
      const { pool } = await this.#getPool()
      if (pool.idleCount > 0 || pool.totalCount < this.#poolSize) {
        const other = await pool.connect()
        let failed = false
        try {
          const result = await other.query<{ cancelled: boolean }>(
            'SELECT pg_catalog.pg_cancel_backend($1) AS cancelled',
            [processID],
          )
          if (result.rows[0]?.cancelled === true) return
        } catch (error) {
          failed = isConnectionError(error)
          throw error
        } finally {
          other.release(failed || this.#broken.has(other) ? true : undefined)
        }
      }
    } catch {
      // Fall through to the protocol-level cancel.
    }
    await this.#cancelViaProtocol(target)
  }

  #cancelViaProtocol(target: PoolClient): Promise<void> {
    const { processID, secretKey, host, port } = target as unknown as ClientInternals
    return new Promise<void>((resolve) => {
      const socket = host.startsWith('/') ? netConnect(`${host}/.s.PGSQL.${port}`) : netConnect(port, host)
      const packet = Buffer.alloc(16)
      packet.writeInt32BE(16, 0)
      packet.writeInt32BE(80877102, 4) // CancelRequest code
      packet.writeInt32BE(processID, 8)
      packet.writeInt32BE(secretKey, 12)
      socket.setTimeout(cancelGraceMs, () => socket.destroy())
      socket.once('connect', () => socket.end(packet))
      socket.once('close', () => resolve())
      socket.once('error', () => resolve())
    })
  }

  async #describeFields(client: PoolClient, fields: readonly FieldDef[]): Promise<ResultField[]> {
    const unknown = [...new Set(fields.map((field) => field.dataTypeID))].filter(
      (oid) => !this.#typeNames.has(oid),
    )
    if (unknown.length > 0) {
      const result = await client.query<{ oid: number; name: string }>(
        'SELECT oid::int4 AS oid, pg_catalog.format_type(oid, NULL) AS name FROM pg_catalog.pg_type WHERE oid = ANY($1::oid[])',
        [unknown],
      )
      for (const row of result.rows) this.#typeNames.set(row.oid, row.name)
    }
    return fields.map((field) => ({
      name: field.name,
      dataTypeID: field.dataTypeID,
      type: this.#typeNames.get(field.dataTypeID) ?? 'unknown',
    }))
  }

  /**
   * The executor: runs `sql` with `params` in a read-only, rolled-back transaction and returns at
   * most maxRows rows. It does NOT run the parser gate: use it for SQL written by this server, and
   * {@link query} for SQL that comes from a model or a user.
   */
  readQuery(sql: string, params: readonly unknown[] = [], options: QueryOptions = {}): Promise<QueryResult> {
    return this.#execute(sql, params, options, undefined)
  }

  /** The executor; with `references`, the function policy judges them first, in the same transaction. */
  async #execute(
    sql: string,
    params: readonly unknown[],
    options: QueryOptions,
    references: SqlReferences | undefined,
  ): Promise<QueryResult> {
    const limits = this.#resolveLimits(options)
    const { Cursor: CursorClass } = await this.#getPool()
    return this.#inReadOnlyTransaction(limits, options.signal, async (client) => {
      if (references !== undefined) await assertReferencesAllowed(client, references)
      // Extended protocol (Parse/Bind/Execute): PostgreSQL itself refuses a second statement here.
      const cursor = client.query(new CursorClass(sql, [...params], { rowMode: 'array' }))
      const { rows, fields } = await readCursor(cursor, limits.maxRows + 1)
      await cursor.close()
      const truncated = rows.length > limits.maxRows
      const kept = truncated ? rows.slice(0, limits.maxRows) : rows
      return {
        fields: await this.#describeFields(client, fields),
        rows: kept,
        rowCount: kept.length,
        truncated,
      }
    })
  }

  /**
   * The entry point for untrusted SQL: the parser gate first (throws {@link SqlRefusedError}, and
   * nothing reaches the database), then {@link readQuery}.
   */
  async query(
    sql: string,
    params: readonly unknown[] = [],
    options: QueryOptions = {},
  ): Promise<QueryResult> {
    const verdict = await checkReadOnlySql(sql)
    if (!verdict.ok) throw new SqlRefusedError(verdict.code, verdict.message, verdict.position)
    return this.#execute(sql, params, options, verdict.references)
  }

  /**
   * The JSON plan of one read-only query (pass the query itself, without EXPLAIN). With `analyze`
   * the query really runs (inside the read-only transaction, rolled back), so it is gated first
   * like {@link query}; so is the plain plan, for one rule in both cases. `params` are the values of
   * the query's `$n` placeholders (bound, never spliced into the text).
   */
  async explain(
    sql: string,
    options: CallOptions & { readonly analyze?: boolean; readonly params?: readonly unknown[] } = {},
  ): Promise<ExplainResult> {
    const verdict = await checkReadOnlySql(sql)
    if (!verdict.ok) throw new SqlRefusedError(verdict.code, verdict.message, verdict.position)
    if (verdict.statement !== 'select') {
      throw new SqlRefusedError(
        'not_read_only',
        verdict.statement === 'explain'
          ? 'Pass the query itself, without EXPLAIN: explain adds it.'
          : 'Only queries can be explained.',
      )
    }
    const analyze = options.analyze === true
    const prefix = `EXPLAIN (FORMAT JSON${analyze ? ', ANALYZE, BUFFERS' : ''}) `
    const statement = `${prefix}${sql}`
    // The composed text is gated again: it must still be one EXPLAIN of the same kind of query.
    const composed = await checkReadOnlySql(statement)
    if (!composed.ok || composed.statement !== 'explain' || composed.analyze !== analyze) {
      throw new SqlRefusedError('not_read_only', 'This query cannot be explained.')
    }
    let result: QueryResult
    try {
      result = await this.#execute(
        statement,
        options.params ?? [],
        { ...options, maxRows: 1 },
        composed.references,
      )
    } catch (error) {
      // PostgreSQL (and the function policy) count positions in the composed statement; the
      // caller wrote only `sql`.
      if (error instanceof SqlRefusedError) {
        const shifted = error.position === undefined ? undefined : error.position - prefix.length
        throw new SqlRefusedError(
          error.code,
          error.message,
          shifted !== undefined && shifted > 0 ? shifted : undefined,
        )
      }
      const pgError = error as { position?: unknown }
      const position = Number(pgError.position)
      if (Number.isInteger(position) && position > prefix.length)
        pgError.position = String(position - prefix.length)
      throw error
    }
    const plans = result.rows[0]?.[0]
    const plan = Array.isArray(plans) ? (plans[0] as Record<string, unknown> | undefined) : undefined
    if (plan === undefined) throw new Error('EXPLAIN returned no plan')
    return { plan, analyzed: analyze }
  }

  /** Runs catalog SQL (ours, parameterised) in the same read-only transaction machinery. */
  #catalog<T>(options: CallOptions, work: (client: PoolClient) => Promise<T>): Promise<T> {
    return this.#inReadOnlyTransaction(this.#resolveLimits(options), options.signal, work)
  }

  #schemaAllowed(schema: string): boolean {
    return this.#schemas === null || this.#schemas.includes(schema)
  }

  /** Schemas (without pg_toast and temporary schemas), system schemas flagged and listed last. */
  listSchemas(options: CallOptions = {}): Promise<SchemaInfo[]> {
    return this.#catalog(options, async (client) => {
      const result = await client.query<{
        name: string
        owner: string
        comment: string | null
        system: boolean
        accessible: boolean
        table_count: number
      }>(
        `SELECT n.nspname AS name,
                pg_catalog.pg_get_userbyid(n.nspowner) AS owner,
                pg_catalog.obj_description(n.oid, 'pg_namespace') AS comment,
                (n.nspname = 'information_schema' OR n.nspname LIKE 'pg\\_%') AS system,
                pg_catalog.has_schema_privilege(n.oid, 'USAGE') AS accessible,
                (SELECT count(*)::int4 FROM pg_catalog.pg_class c
                  WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
                    AND NOT c.relispartition) AS table_count
           FROM pg_catalog.pg_namespace n
          WHERE n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'
            AND ($1::text[] IS NULL OR n.nspname = ANY($1::text[]))
          ORDER BY 4, 1`,
        [this.#schemas],
      )
      return result.rows.map((row) => ({
        name: row.name,
        owner: row.owner,
        comment: row.comment,
        system: row.system,
        accessible: row.accessible,
        tableCount: row.table_count,
      }))
    })
  }

  /** Tables, views, materialized views and foreign tables, paginated, with estimated row counts. */
  listTables(options: ListTablesOptions = {}): Promise<TablePage> {
    const limit = Math.min(positiveInteger('limit', options.limit ?? 100), 1_000)
    const offset = positiveInteger('offset', options.offset ?? 0, { allowZero: true })
    const kinds = options.kinds ?? (Object.keys(relkindsByKind) as TableKind[])
    const relkinds = kinds.flatMap((kind) => relkindsByKind[kind] ?? [])
    if (options.schema !== undefined && !this.#schemaAllowed(options.schema)) {
      return Promise.resolve({ tables: [], total: 0, limit, offset, nextOffset: null })
    }
    const pattern =
      options.pattern === undefined || options.pattern === '' ? null : toLikePattern(options.pattern)
    const where = `
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind = ANY($1::"char"[])
       AND NOT c.relispartition
       AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'
       AND CASE WHEN $2::text IS NULL
                THEN n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
                ELSE n.nspname = $2::text END
       AND ($3::text IS NULL OR c.relname ILIKE $3::text)
       AND ($4::text[] IS NULL OR n.nspname = ANY($4::text[]))`
    const params = [relkinds, options.schema ?? null, pattern, this.#schemas]
    return this.#catalog(options, async (client) => {
      const count = await client.query<{ total: number }>(`SELECT count(*)::int4 AS total ${where}`, params)
      const page = await client.query<{
        schema: string
        name: string
        relkind: string
        estimated_rows: string | null
        comment: string | null
      }>(
        `SELECT n.nspname AS schema, c.relname AS name, c.relkind::text AS relkind,
                CASE WHEN c.relkind = 'v' OR c.reltuples < 0 THEN NULL ELSE c.reltuples::int8 END AS estimated_rows,
                pg_catalog.obj_description(c.oid, 'pg_class') AS comment
         ${where}
         ORDER BY n.nspname, c.relname
         LIMIT $5 OFFSET $6`,
        [...params, limit, offset],
      )
      const total = count.rows[0]?.total ?? 0
      return {
        tables: page.rows.map((row) => ({
          schema: row.schema,
          name: row.name,
          kind: kindByRelkind[row.relkind] ?? 'table',
          estimatedRows: toNumberOrNull(row.estimated_rows),
          comment: row.comment,
        })),
        total,
        limit,
        offset,
        nextOffset: offset + page.rows.length < total ? offset + page.rows.length : null,
      }
    })
  }

  /**
   * Everything about one table or view, matched exactly by schema and name (as stored: unquoted
   * names are lower case). Null when it does not exist or its schema is outside the allow-list.
   */
  describeTable(schema: string, table: string, options: CallOptions = {}): Promise<TableDescription | null> {
    if (!this.#schemaAllowed(schema)) return Promise.resolve(null)
    return this.#catalog(options, async (client) => {
      const relation = await client.query<{
        oid: string
        relkind: string
        estimated_rows: string | null
        comment: string | null
        view_definition: string | null
        total_bytes: string
      }>(
        `SELECT c.oid::int8 AS oid, c.relkind::text AS relkind,
                CASE WHEN c.relkind = 'v' OR c.reltuples < 0 THEN NULL ELSE c.reltuples::int8 END AS estimated_rows,
                pg_catalog.obj_description(c.oid, 'pg_class') AS comment,
                CASE WHEN c.relkind IN ('v', 'm') THEN pg_catalog.pg_get_viewdef(c.oid, true) END AS view_definition,
                pg_catalog.pg_total_relation_size(c.oid) AS total_bytes
           FROM pg_catalog.pg_class c
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`,
        [schema, table],
      )
      const found = relation.rows[0]
      if (found === undefined) return null
      const oid = found.oid
      const columns = await client.query<{
        name: string
        type: string
        nullable: boolean
        default: string | null
        comment: string | null
        identity: string
        generated: string
      }>(
        `SELECT a.attname AS name,
                pg_catalog.format_type(a.atttypid, a.atttypmod) AS type,
                NOT a.attnotnull AS nullable,
                pg_catalog.pg_get_expr(d.adbin, d.adrelid) AS default,
                pg_catalog.col_description(a.attrelid, a.attnum) AS comment,
                a.attidentity::text AS identity,
                a.attgenerated::text AS generated
           FROM pg_catalog.pg_attribute a
           LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
          WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped
          ORDER BY a.attnum`,
        [oid],
      )
      const columnsOf = (keys: string, relation: string) =>
        `ARRAY(SELECT a.attname::text FROM unnest(${keys}) WITH ORDINALITY AS k(attnum, ord)
                 JOIN pg_catalog.pg_attribute a ON a.attrelid = ${relation} AND a.attnum = k.attnum
                ORDER BY k.ord)`
      const constraints = await client.query<{
        name: string
        type: string
        columns: string[]
        ref_schema: string | null
        ref_table: string | null
        ref_columns: string[]
        on_update: string
        on_delete: string
        definition: string
      }>(
        `SELECT con.conname AS name, con.contype::text AS type,
                ${columnsOf('con.conkey', 'con.conrelid')} AS columns,
                fn.nspname AS ref_schema, fc.relname AS ref_table,
                ${columnsOf('con.confkey', 'con.confrelid')} AS ref_columns,
                con.confupdtype::text AS on_update, con.confdeltype::text AS on_delete,
                pg_catalog.pg_get_constraintdef(con.oid, true) AS definition
           FROM pg_catalog.pg_constraint con
           LEFT JOIN pg_catalog.pg_class fc ON fc.oid = con.confrelid
           LEFT JOIN pg_catalog.pg_namespace fn ON fn.oid = fc.relnamespace
          WHERE con.conrelid = $1::oid AND con.contype IN ('p', 'f', 'u', 'c', 'x')
          ORDER BY con.contype, con.conname`,
        [oid],
      )
      const incoming = await client.query<{
        name: string
        schema: string
        table: string
        columns: string[]
        ref_columns: string[]
        definition: string
      }>(
        `SELECT con.conname AS name, n.nspname AS schema, c.relname AS table,
                ${columnsOf('con.conkey', 'con.conrelid')} AS columns,
                ${columnsOf('con.confkey', 'con.confrelid')} AS ref_columns,
                pg_catalog.pg_get_constraintdef(con.oid, true) AS definition
           FROM pg_catalog.pg_constraint con
           JOIN pg_catalog.pg_class c ON c.oid = con.conrelid
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
          WHERE con.confrelid = $1::oid AND con.contype = 'f' AND con.conparentid = 0
            AND ($2::text[] IS NULL OR n.nspname = ANY($2::text[]))
          ORDER BY n.nspname, c.relname, con.conname`,
        [oid, this.#schemas],
      )
      const indexes = await client.query<{
        name: string
        definition: string
        method: string
        unique: boolean
        primary: boolean
        valid: boolean
      }>(
        `SELECT i.relname AS name, pg_catalog.pg_get_indexdef(ix.indexrelid) AS definition,
                am.amname AS method, ix.indisunique AS unique, ix.indisprimary AS primary,
                ix.indisvalid AS valid
           FROM pg_catalog.pg_index ix
           JOIN pg_catalog.pg_class i ON i.oid = ix.indexrelid
           JOIN pg_catalog.pg_am am ON am.oid = i.relam
          WHERE ix.indrelid = $1::oid
          ORDER BY ix.indisprimary DESC, i.relname`,
        [oid],
      )
      const primary = constraints.rows.find((row) => row.type === 'p')
      const otherTypes: Readonly<Record<string, ConstraintInfo['type']>> = {
        u: 'unique',
        c: 'check',
        x: 'exclusion',
      }
      return {
        schema,
        name: table,
        kind: kindByRelkind[found.relkind] ?? 'table',
        comment: found.comment,
        estimatedRows: toNumberOrNull(found.estimated_rows),
        totalBytes: Number(found.total_bytes),
        viewDefinition: found.view_definition,
        columns: columns.rows.map((row) => ({
          name: row.name,
          type: row.type,
          nullable: row.nullable,
          default: row.default,
          comment: row.comment,
          identity: row.identity === 'a' ? 'always' : row.identity === 'd' ? 'by_default' : null,
          generated: row.generated === 's' ? 'stored' : row.generated === 'v' ? 'virtual' : null,
        })),
        primaryKey: primary === undefined ? null : { name: primary.name, columns: primary.columns },
        foreignKeys: constraints.rows
          .filter((row) => row.type === 'f')
          .map((row) => ({
            name: row.name,
            columns: row.columns,
            referencedSchema: row.ref_schema ?? '',
            referencedTable: row.ref_table ?? '',
            referencedColumns: row.ref_columns,
            onUpdate: referentialActions[row.on_update] ?? 'no_action',
            onDelete: referentialActions[row.on_delete] ?? 'no_action',
            definition: row.definition,
          })),
        referencedBy: incoming.rows.map((row) => ({
          name: row.name,
          schema: row.schema,
          table: row.table,
          columns: row.columns,
          referencedColumns: row.ref_columns,
          definition: row.definition,
        })),
        constraints: constraints.rows.flatMap((row) => {
          const type = otherTypes[row.type]
          return type === undefined
            ? []
            : [{ name: row.name, type, columns: row.columns, definition: row.definition }]
        }),
        indexes: indexes.rows,
      }
    })
  }

  /** A cheap round trip that also reports who and where we are, for a health check. */
  health(options: CallOptions = {}): Promise<HealthInfo> {
    const started = performance.now()
    return this.#catalog(options, async (client) => {
      const result = await client.query<{
        database: string
        user: string
        server_version: string
        server_version_num: number
        read_only: boolean
        in_recovery: boolean
      }>(
        `SELECT pg_catalog.current_database() AS database, current_user AS user,
                pg_catalog.current_setting('server_version') AS server_version,
                pg_catalog.current_setting('server_version_num')::int4 AS server_version_num,
                pg_catalog.current_setting('transaction_read_only') = 'on' AS read_only,
                pg_catalog.pg_is_in_recovery() AS in_recovery`,
      )
      const row = result.rows[0]
      if (row === undefined) throw new Error('health query returned no row')
      return {
        database: row.database,
        user: row.user,
        serverVersion: row.server_version,
        serverVersionNum: row.server_version_num,
        readOnly: row.read_only,
        inRecovery: row.in_recovery,
        latencyMs: Math.round((performance.now() - started) * 10) / 10,
      }
    })
  }

  /** Closes every connection. Calls made afterwards fail. Safe to call more than once. */
  async close(): Promise<void> {
    this.#closed = true
    const pending = this.#pool
    this.#pool = undefined
    if (pending === undefined) return
    const created = await pending.catch(() => undefined)
    await created?.pool.end()
  }
}
