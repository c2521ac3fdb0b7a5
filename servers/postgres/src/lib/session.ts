/**
 * The pool and the session every call runs in: a lazily loaded pg.Pool whose connections start
 * with the string rules, read-only default and role the server relies on (in the startup packet
 * and again by SET before any use), TLS options with libpq's sslmode meanings, and the reset that
 * returns a connection to that clean session after every call.
 */
import type { ConnectionOptions } from 'node:tls'
import type { Pool, PoolClient, PoolConfig } from 'pg'
import { settleWithin } from './cancellation.js'
import { DatabaseConfigError } from './errors.js'
import { loadDependency } from './load.js'
import type { DatabaseOptions, SslOptions } from './types.js'

type PgModule = typeof import('pg')

/** The pool, once created. */
export interface PoolHandle {
  readonly pool: Pool
}

export interface PoolSettings {
  readonly options: DatabaseOptions
  readonly poolSize: number
  /** Connections kept open while idle (pg-pool's `min`; at most poolSize). */
  readonly keepIdle: number
  /** From {@link sessionSetupSql}. */
  readonly sessionSetup: string
  /** Clients that emit an error are added here, to be destroyed rather than reused. */
  readonly broken: WeakSet<object>
}

const rollbackDeadlineMs = 5_000

/** Connections a pool opens at most unless configured (the reference server's pg default). */
export const defaultPoolSize = 10

/**
 * The pool size this server may take: `wanted`, but at most half the connections still free on
 * the server (max_connections less the superuser reserve and the connections open now, and the
 * role's own connection limit), and at least 2 so that a cancel can always reach the server.
 * Sets the pool's maximum and returns it, with how many connections the role may still open
 * beyond it (Infinity without a role limit; 0 after a failed probe, which leaves `wanted`).
 */
export async function capPoolSize(pool: Pool, wanted: number): Promise<{ size: number; spare: number }> {
  const client = await pool.connect()
  try {
    const result = await client.query<{ free: number; role_limit: number }>(
      `SELECT pg_catalog.current_setting('max_connections')::int4
              - pg_catalog.current_setting('superuser_reserved_connections')::int4
              - (SELECT count(*)::int4 FROM pg_catalog.pg_stat_activity WHERE backend_type = 'client backend')
              + 1 AS free,
              (SELECT r.rolconnlimit FROM pg_catalog.pg_roles r WHERE r.rolname = session_user) AS role_limit`,
    )
    const row = result.rows[0]
    let size = wanted
    if (row !== undefined) {
      size = Math.min(size, Math.floor(row.free / 2))
      if (row.role_limit > 0) size = Math.min(size, row.role_limit)
    }
    size = Math.max(Math.min(2, wanted), size)
    const options = (pool as unknown as { options: { max: number; min: number } }).options
    options.max = size
    options.min = Math.min(options.min, size)
    const spare =
      row === undefined
        ? 0
        : row.role_limit > 0
          ? Math.max(0, row.role_limit - size)
          : Number.POSITIVE_INFINITY
    return { size, spare }
  } catch {
    return { size: wanted, spare: 0 }
  } finally {
    client.release()
  }
}

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

export const identifierPattern = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/

/** Quotes an SQL identifier (doubling embedded quotes). Only for values already validated. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

/** The call timeouts a session starts with (a call that asks for others sets them with SET LOCAL). */
export interface SessionTimeouts {
  readonly timeoutMs: number
  readonly lockTimeoutMs: number
  readonly idleInTransactionTimeoutMs: number
}

/**
 * Run on every new connection and again after every full reset, before anything else. Repeats the
 * startup settings, in case a connection string's own options replaced them, and sets the default
 * call timeouts for the session: a call's rollback returns every setting to these values, so a
 * call with the default limits needs no SET LOCAL of its own. Integers validated by the caller.
 */
export function sessionSetupStatements(role: string | undefined, timeouts: SessionTimeouts): string[] {
  return [
    'SET standard_conforming_strings = on',
    'SET backslash_quote = safe_encoding',
    'SET default_transaction_read_only = on',
    `SET statement_timeout = ${timeouts.timeoutMs}`,
    `SET lock_timeout = ${timeouts.lockTimeoutMs}`,
    `SET idle_in_transaction_session_timeout = ${timeouts.idleInTransactionTimeoutMs}`,
    ...(role === undefined ? [] : [`SET ROLE ${quoteIdentifier(role)}`]),
  ]
}

/** {@link sessionSetupStatements} as one simple query. */
export function sessionSetupSql(role: string | undefined, timeouts: SessionTimeouts): string {
  return sessionSetupStatements(role, timeouts).join('; ')
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

/**
 * Creates the pool (loading pg on first use: start-up of the server must not pay
 * for them). pg-pool awaits onConnect before handing a client out, so no statement can ever run on
 * a connection without the session setup.
 */
export async function createPool(settings: PoolSettings): Promise<PoolHandle> {
  const { options: databaseOptions, poolSize, keepIdle, sessionSetup, broken } = settings
  const pg = loadDependency<PgModule>('pg')
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
  const connection =
    databaseOptions.connectionString === undefined
      ? undefined
      : splitStartupOptions(databaseOptions.connectionString)
  // Ours come last: for a repeated -c the last one wins.
  const configured = connection === undefined ? process.env.PGOPTIONS : connection.options
  const options = [configured, ...startupSettings.map((setting) => `-c ${setting}`)]
    .filter((part) => part !== undefined && part !== '')
    .join(' ')
  const config: PoolConfig = {
    options,
    max: poolSize,
    // pg-pool closes an idle connection only while it has more than these: a call after a long
    // pause finds one open. None is opened ahead of a first call.
    min: Math.min(keepIdle, poolSize),
    application_name: databaseOptions.applicationName ?? 'keel-mcp-postgres',
    connectionTimeoutMillis: databaseOptions.connectionTimeoutMs ?? 10_000,
    idleTimeoutMillis: databaseOptions.idleTimeoutMs ?? 10_000,
    allowExitOnIdle: true,
    keepAlive: true,
    types: { getTypeParser },
    // Awaited by pg-pool before the client is handed out; if it fails the client is discarded,
    // so no statement can ever run on a connection without these settings.
    onConnect: async (client) => {
      // Errors while idle reach the pool's 'error' event (reported below); errors while checked
      // out surface through the running statement. Either way the client is never reused.
      client.on('error', () => {
        broken.add(client)
      })
      try {
        await client.query(sessionSetup)
      } catch (error) {
        // A missing role or one the login may not switch to is a configuration problem, not
        // something the caller of a query can fix.
        const code = (error as { code?: unknown }).code
        if (code === '22023' || code === '42704' || code === '42501') {
          throw new DatabaseConfigError(`Cannot switch to the configured role: ${(error as Error).message}`, {
            cause: error,
          })
        }
        throw error
      }
    },
  }
  if (connection !== undefined) config.connectionString = connection.connectionString
  if (databaseOptions.ssl !== undefined) config.ssl = tlsOptions(databaseOptions.ssl)
  const pool = new pg.Pool(config)
  // Without a listener, an idle connection dropped by the server (restart, admin shutdown,
  // idle timeout) would crash the process. pg-pool has already removed the client.
  pool.on('error', (error) => databaseOptions.onBackgroundError?.(error))
  return { pool }
}

/**
 * What DISCARD ALL does, statement by statement (PostgreSQL documents DISCARD ALL as this
 * sequence). DISCARD ALL itself refuses to run inside a transaction block, and so inside a
 * multi-statement query; these run in one, so that the whole reset is one round trip. They commit
 * together or, if any fails, not at all (the connection is then destroyed).
 */
const discardAll = [
  'CLOSE ALL',
  'SET SESSION AUTHORIZATION DEFAULT',
  'RESET ALL',
  'DEALLOCATE ALL',
  'UNLISTEN *',
  'SELECT pg_catalog.pg_advisory_unlock_all()',
  'DISCARD PLANS',
  'DISCARD TEMP',
  'DISCARD SEQUENCES',
  // Not part of DISCARD ALL: hypopg keeps hypothetical indexes in backend memory, outside any
  // transaction, so a rollback leaves them and they would bend the next caller's plans. A no-op
  // (one catalog lookup) where hypopg is not installed; query_to_xml runs the call only when it is.
  `SELECT pg_catalog.query_to_xml(pg_catalog.format('SELECT %I.hypopg_reset()', n.nspname), false, false, '')
     FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'hypopg'`,
]

/**
 * The full reset: ROLLBACK, then DISCARD ALL's steps (session-level advisory locks, LISTEN,
 * prepared statements, cursors, temporary tables, settings), hypopg's hypothetical indexes and the
 * session setup again. Sent as one simple query (after ROLLBACK the rest runs in one implicit
 * transaction, committed at its end). What a call ends with when its statement failed or its
 * transaction did not end as {@link callEndStatements} proves it should; the connection is
 * destroyed when this fails too.
 */
export function sessionResetStatements(role: string | undefined, timeouts: SessionTimeouts): string[] {
  return ['ROLLBACK', ...discardAll, ...sessionSetupStatements(role, timeouts)]
}

/**
 * Set by the transaction's opening statements (`SET LOCAL`): a setting that exists only until the
 * transaction that set it ends, whichever way it ends. Checked before the ROLLBACK that ends a call.
 */
export const callMarker = `SET LOCAL keel.call = 'on'`

/**
 * How a call ends when its statement succeeded: the reset of exactly what can outlive a rolled-back
 * transaction, then the ROLLBACK. One statement before the ROLLBACK both proves and resets:
 *
 * - it fails (division by zero) unless the marker set by the transaction's opening statements is
 *   still set and the transaction is still read only: the statement ran in, and did not end, change
 *   or replace (COMMIT AND CHAIN) the read-only transaction the call opened. A statement that ends a
 *   transaction is nothing else in the same statement, and a setting made with SET LOCAL lasts until
 *   the end of its transaction only, so the marker cannot survive into a transaction of its own;
 * - it releases session-level advisory locks (a lock taken in a transaction that rolls back is
 *   still held after it);
 * - it removes hypopg's hypothetical indexes (backend memory, outside any transaction). They exist
 *   only in a backend that has loaded hypopg's library, and loading it defines the setting
 *   `hypopg.enabled` (hypopg 1.1 and later): where that setting is undefined there is nothing to
 *   remove, and the lookup of hypopg's schema (a catalog query planned on each run, most of what
 *   the old reset cost the backend) is skipped. A library stays loaded, so a backend that ever ran
 *   hypopg pays the lookup on every later call.
 *
 * DEALLOCATE ALL: prepared statements outlive a rollback. The ROLLBACK then undoes everything else a
 * statement can change in the session, because it is all transactional: settings (SET, SET
 * SESSION, set_config(…, false), the role, the session authorization, read-only default and string
 * rules included: they return to the values of the session setup), LISTEN, cursors (WITH HOLD ones
 * too: a holdable cursor of a rolled-back transaction is dropped). What a read-only transaction
 * cannot do at all needs no reset: temporary tables (CREATE is refused) and sequences' currval
 * (nextval and setval are refused). The caller then checks that the connection reports no open
 * transaction (ReadyForQuery's status `I`), and otherwise resets in full.
 *
 * Not reset, here or by DISCARD ALL: state an extension keeps in backend memory by its own rules,
 * such as dblink's named connections or a procedural language's session variables.
 *
 * Each piece's effect on a real server is held by test/lib/session-reset.test.ts.
 */
export const callEndStatements: readonly string[] = [
  `SELECT 1 / (pg_catalog.current_setting('keel.call') = 'on'
               AND pg_catalog.current_setting('transaction_read_only') = 'on')::int4,
          pg_catalog.pg_advisory_unlock_all(),
          CASE WHEN pg_catalog.current_setting('hypopg.enabled', true) IS NOT NULL THEN
            pg_catalog.query_to_xml('SELECT pg_catalog.count(pg_catalog.query_to_xml(pg_catalog.format(''SELECT %s.hypopg_reset()'', e.extnamespace::pg_catalog.regnamespace), false, false, '''')) FROM pg_catalog.pg_extension e WHERE e.extname = ''hypopg''', false, false, '')
          END`,
  'DEALLOCATE ALL',
  'ROLLBACK',
]

/** {@link callEndStatements} as one simple query. */
export const callEndSql = callEndStatements.join('; ')

/** pg's Client reports the status of the last ReadyForQuery (not in its typings). */
export function transactionStatus(client: PoolClient): string | null {
  return (client as unknown as { getTransactionStatus(): string | null }).getTransactionStatus()
}

/**
 * Returns the connection to a fresh session with `reset` (from {@link sessionResetSql}) in one
 * round trip. The parser gate cannot see into function and view bodies, so this does not depend on
 * it. False when it fails or stalls: the connection must then be destroyed.
 */
export async function resetSession(client: PoolClient, reset: string): Promise<boolean> {
  const running = client.query(reset)
  running.catch(() => undefined)
  if (!(await settleWithin(running, rollbackDeadlineMs))) return false
  return running.then(
    () => transactionStatus(client) === 'I',
    () => false,
  )
}

/**
 * Ends a call whose work succeeded: {@link callEndSql} (the proof that the transaction is the
 * call's own, the reset of what outlives a rollback, the ROLLBACK), then the full reset if that
 * failed or left a transaction open. False when the connection must be destroyed.
 */
export async function endCall(client: PoolClient, fullReset: string): Promise<boolean> {
  if (await resetSession(client, callEndSql)) return true
  return resetSession(client, fullReset)
}
