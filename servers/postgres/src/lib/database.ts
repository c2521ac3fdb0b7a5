/**
 * The connection to PostgreSQL: the read-only executor with row caps, timeouts, real server-side
 * cancellation and a byte budget, and the entry points for EXPLAIN and the catalog. The pieces live
 * beside it: session.ts (pool and session), statement.ts (a call's one-round-trip batch),
 * cancellation.ts (cancelling, the budget),
 * function-policy.ts, explain.ts, catalog.ts, limits.ts and types.ts.
 *
 * Security invariants (each enforced here, independent of the parser gate in sql-guard.ts):
 * - every connection starts with `default_transaction_read_only = on`, the string rules the parser
 *   gate assumes (`standard_conforming_strings = on`, set in the startup packet so that no database
 *   or role default can change them) and the configured role;
 * - every function, operator, cast and view a statement reaches is judged by the catalog before it
 *   runs (function-policy.ts), on connections that never run a caller's statement (or, where the
 *   role allows none beside the pool, on the call's own, in its transaction);
 * - after every call the session is returned to its setup: a call that succeeded proves its
 *   statement ran in, and did not end, the read-only transaction the call opened, resets what
 *   outlives a rollback (advisory locks, prepared statements, hypopg, dblink) and rolls back, which
 *   undoes the rest (session.ts, callEndStatements); any other call, or one whose proof fails, gets
 *   the full reset (ROLLBACK, DISCARD ALL's steps, the setup again), or the connection is destroyed;
 * - the bytes a call receives are counted as they arrive; past the budget the backend is cancelled
 *   and the connection destroyed, so no result can exhaust the process's memory;
 * - every statement runs in `BEGIN … READ ONLY` and is always rolled back, never committed;
 * - statements go through the extended query protocol, which refuses multiple statements;
 * - only maxRows + 1 rows are fetched (Execute with a row limit), whatever the query returns;
 * - catalog SQL is parameterised: no identifier or value from a caller is concatenated into SQL.
 */
import { cancelDeadline, type Expiring, setDeadline, traceUpstream } from '@keel-mcp/core'
import type { FieldDef, PoolClient } from 'pg'
import { type CancelContext, cancelUntilStopped, receivedBytesMeter } from './cancellation.js'
import { describeTable, health, listSchemas, listTables } from './catalog.js'
import {
  DatabaseConfigError,
  isConnectionError,
  QueryCancelledError,
  QueryTimeoutError,
  SqlRefusedError,
} from './errors.js'
import { type ExplainOptions, explain } from './explain.js'
import type { ResultField } from './format.js'
import {
  assertReferencesAllowed,
  KeptVerdicts,
  preparePolicyQueries,
  verdictGuardSql,
} from './function-policy.js'
import {
  clientDeadlineGraceMs,
  defaultLimits,
  defaultMaxResultBytes,
  positiveInteger,
  resolveLimits,
} from './limits.js'
import {
  callEndStatements,
  callMarker,
  capPoolSize,
  createPool,
  defaultPoolSize,
  endCall,
  identifierPattern,
  type PoolHandle,
  resetSession,
  sessionResetStatements,
  sessionSetupSql,
  transactionStatus,
} from './session.js'
import { checkReadOnlySql, loadSqlParser, type SqlReferences } from './sql-guard.js'
import { BoundedStatement, type StatementResult } from './statement.js'
import type {
  CallOptions,
  DatabaseOptions,
  ExplainResult,
  HealthInfo,
  ListTablesOptions,
  QueryLimits,
  QueryOptions,
  QueryResult,
  SchemaInfo,
  TableDescription,
  TablePage,
} from './types.js'

export { toLikePattern } from './catalog.js'
export { quoteIdentifier, tlsOptions } from './session.js'
export type * from './types.js'

/**
 * One database connection configuration and its pool. Nothing is loaded or connected until the
 * first call. All methods are safe to call concurrently.
 */
export class Database {
  readonly #options: DatabaseOptions
  readonly #limits: QueryLimits
  /** The configured pool size; after the first connection, capped by the server's headroom. */
  #poolSize: number
  /** Call connections kept open while idle (DatabaseOptions.idleConnections). */
  readonly #idleConnections: number
  readonly #schemas: string[] | null
  #pool: Promise<PoolHandle> | undefined
  /**
   * Connections that run the function policy's catalog queries and nothing else (see
   * {@link Database.#judgeApart}), opened on the first statement that needs them.
   */
  #policyPool: Promise<PoolHandle> | undefined
  /** Until when the policy runs on the call's own connection, after the policy pool failed to connect. */
  #policyPoolRetryAt = 0
  /** Whether the role may open the policy's connections beyond the pool's (set when the pool is sized). */
  #policyPoolAllowed = false
  #closed = false
  readonly #typeNames = new Map<number, string>()
  /** The function policy's verdicts, kept with the snapshot each was made under (function-policy.ts). */
  readonly #kept = new KeptVerdicts()
  /** Clients that emitted an error while checked out: destroyed on release, never reused. */
  readonly #broken = new WeakSet<object>()
  readonly #maxResultBytes: number
  /**
   * Run on every new connection and again after every call's DISCARD ALL, before anything else.
   * Repeats the startup settings, in case a connection string's own options replaced them.
   */
  readonly #sessionSetup: string
  /** The full reset (session.ts): ROLLBACK, DISCARD ALL's steps, the session setup. */
  readonly #sessionResetSql: string

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
    this.#poolSize = positiveInteger('poolSize', options.poolSize ?? defaultPoolSize)
    this.#idleConnections = positiveInteger(
      'idleConnections',
      options.idleConnections ?? defaultIdleConnections,
      { allowZero: true },
    )
    this.#maxResultBytes = positiveInteger('maxResultBytes', options.maxResultBytes ?? defaultMaxResultBytes)
    this.#sessionSetup = sessionSetupSql(options.role, limits)
    this.#sessionResetSql = sessionResetStatements(options.role, limits).join('; ')
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

  #getPool(): Promise<PoolHandle> {
    if (this.#closed) return Promise.reject(new Error('The database connection pool is closed.'))
    const settings = {
      options: this.#options,
      poolSize: this.#poolSize,
      keepIdle: this.#idleConnections,
      sessionSetup: this.#sessionSetup,
      broken: this.#broken,
    }
    this.#pool ??= createPool(settings)
      .then(async (handle) => {
        const { size, spare } = await capPoolSize(handle.pool, this.#poolSize)
        this.#poolSize = size
        // The policy's own connections only where the role may open them beyond the pool's.
        this.#policyPoolAllowed = spare >= policyPoolSize
        return handle
      })
      .catch((error: unknown) => {
        this.#pool = undefined
        throw error
      })
    return this.#pool
  }

  #getPolicyPool(): Promise<PoolHandle> {
    if (this.#closed) return Promise.reject(new Error('The database connection pool is closed.'))
    this.#policyPool ??= createPool({
      options: this.#options,
      poolSize: policyPoolSize,
      // One kept while the calls' pool keeps any: its prepared queries are planned once per
      // connection, so a connection opened after a pause would plan them again (about 1 ms).
      keepIdle: Math.min(1, this.#idleConnections),
      // The same session as the calls' (role, read-only default, timeouts), and plans kept: the
      // policy's queries are prepared once on this connection and planned once.
      sessionSetup: `${this.#sessionSetup}; SET plan_cache_mode = force_generic_plan`,
      broken: this.#broken,
    }).catch((error: unknown) => {
      this.#policyPool = undefined
      throw error
    })
    return this.#policyPool
  }

  /**
   * Judges a caller's statement by the function policy (function-policy.ts) on connections of its
   * own, before the call's transaction opens. Those run the policy's catalog queries and never
   * a caller's SQL, so the queries are prepared there once (named statements) and planned once:
   * on the call's connection, where every call ends by deallocating what was prepared, each call
   * parsed and planned them again, about 3 ms of the database's time for any statement that names
   * a table, a function or an operator. The policy reads the catalog as committed when it runs, as
   * it did at the start of the call's transaction. False when the role may open no more connections
   * than the pool's, or one cannot be opened or breaks before answering: the caller then judges on
   * its own connection, inside its transaction.
   */
  #judgeApart(references: SqlReferences, limits: QueryLimits, signal?: AbortSignal): Promise<boolean> {
    return this.#onPolicyConnection(
      (queries) => assertReferencesAllowed(queries, references, this.#kept),
      limits,
      signal,
    )
  }

  /**
   * Runs `work` on one of the policy's own connections, its queries as named statements there.
   * False when the role may open no more connections than the pool's, or one cannot be opened or
   * breaks before answering. A refusal leaves the connection as it was; anything else thrown (a
   * stop, a broken connection, an error of a catalog query) and it is not reused.
   */
  async #onPolicyConnection(
    work: (queries: Pick<PoolClient, 'query'>, client: PoolClient) => Promise<void>,
    limits: QueryLimits,
    signal?: AbortSignal,
  ): Promise<boolean> {
    // The pool first: it is sized by the connections the role and the server allow, and the
    // policy's connections open only where more fit (else the calls' own could be refused).
    await this.#getPool()
    if (!this.#policyPoolAllowed || Date.now() < this.#policyPoolRetryAt) return false
    let connecting: Promise<PoolClient>
    try {
      connecting = (await this.#getPolicyPool()).pool.connect()
    } catch (error) {
      if (this.#closed) throw error
      this.#policyPoolRetryAt = Date.now() + policyPoolRetryMs
      return false
    }
    let client: PoolClient
    try {
      client = await settleOrStop(connecting, limits.timeoutMs, signal)
    } catch (error) {
      // Stopped while waiting: a connection handed out later goes straight back.
      connecting.then(
        (late) => late.release(),
        () => undefined,
      )
      if (error instanceof QueryCancelledError || error instanceof QueryTimeoutError) throw error
      if (this.#closed) throw error
      this.#policyPoolRetryAt = Date.now() + policyPoolRetryMs
      return false
    }
    let destroy = false
    try {
      await settleOrStop(work(preparedQueries(client), client), limits.timeoutMs, signal)
      return true
    } catch (error) {
      // A refusal leaves the connection as it was; anything else (a stop, a broken connection, an
      // error of the catalog query) and it is not reused.
      if (error instanceof SqlRefusedError) throw error
      destroy = true
      if (isConnectionError(error) && !signal?.aborted) return false
      throw error
    } finally {
      if (this.#broken.has(client)) destroy = true
      client.release(destroy ? true : undefined)
    }
  }

  /** Connections the pool opens at most: the configured size, capped by the server's headroom. */
  get poolSize(): number {
    return this.#poolSize
  }

  /**
   * Does now what the first call would otherwise pay for: loads pg and the SQL parser, opens the
   * pool with one connection and sizes it. Safe to call at any time, and more than once.
   */
  async warmUp(options: CallOptions = {}): Promise<void> {
    const pool = this.#getPool()
    // Awaited below; a failure meanwhile is not an unhandled rejection.
    pool.catch(() => undefined)
    // Loading pg and loading the parser each hold the process for a while: requests that arrived
    // during the first are served before the second starts.
    await new Promise((resolve) => setImmediate(resolve))
    await Promise.all([pool, loadSqlParser()])
    if (this.#closed || options.signal?.aborted) return
    // One gated call through the whole path, whose columns have the common types: their names are
    // then known, and the first real call costs what a later one does.
    // Not cancelled on shutdown: it ends by itself in milliseconds, sooner than a cancel would
    // stop it (close() waits for it either way).
    await this.query(warmUpQuery, [], {
      maxRows: 1,
      ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    })
    // The parser gate's first statement of a kind compiles the parts of the WASM parser it needs:
    // a first join with a GROUP BY took 1.4–7 ms to judge, the next ones 0.2–0.3 ms. A few
    // statements of the shapes models write are judged now, by the gate and by the function policy
    // (its catalog lookups for the common operators and aggregates; nothing runs, and the tables
    // they name need not exist), each after yielding to requests waiting, so that a model's first
    // query does not pay for that.
    for (const sql of parserWarmUps) {
      if (this.#closed || options.signal?.aborted) return
      await new Promise((resolve) => setImmediate(resolve))
      const verdict = await checkReadOnlySql(sql)
      if (verdict.ok && needsPolicyLookup(verdict.references))
        await this.#judgeApart(verdict.references, this.#limits, options.signal).catch(() => false)
    }
    // Both of the policy's connections, with every query it may send prepared (above, only the
    // one for statements that name a table was): opening the second, and preparing a query the
    // first time (about 3 ms of planning), is then not paid by a caller's statement.
    if (this.#closed || options.signal?.aborted) return
    await Promise.all(
      Array.from({ length: policyPoolSize }, () =>
        this.#onPolicyConnection(preparePolicyQueries, this.#limits, options.signal).catch(() => false),
      ),
    )
  }

  /**
   * Runs `work` — SQL this server writes, never a caller's — on one connection inside the call's
   * read-only, rolled-back transaction, with the call's timeouts, cancellation, byte budget and
   * the session reset afterwards.
   */
  transaction<T>(options: CallOptions, work: (client: PoolClient) => Promise<T>): Promise<T> {
    return this.#catalog(options, work)
  }

  /**
   * Checks out a client and opens the read-only transaction; retries once on a dead connection.
   * With `deferred`, only checks out: the caller sends {@link beginStatements} itself, in the same
   * round trip as its statement.
   */
  async #begin(limits: QueryLimits, deferred: boolean): Promise<PoolClient> {
    if (deferred) return (await this.#getPool()).pool.connect()
    const begin = joinedBegin(beginStatements(limits, this.#limits))
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
  #inReadOnlyTransaction<T>(
    limits: QueryLimits,
    signal: AbortSignal | undefined,
    work: (client: PoolClient, session: { reset: boolean }) => Promise<T>,
    deferBegin = false,
  ): Promise<T> {
    // One upstream span and sample per transaction (operations: tracing and metrics, when on).
    return traceUpstream(
      'postgresql',
      'transaction',
      () => this.#transaction(limits, signal, work, deferBegin),
      transactionAttributes,
    )
  }

  async #transaction<T>(
    limits: QueryLimits,
    signal: AbortSignal | undefined,
    work: (client: PoolClient, session: { reset: boolean }) => Promise<T>,
    deferBegin: boolean,
  ): Promise<T> {
    if (signal?.aborted) throw new QueryCancelledError({ cause: signal.reason })
    const client = await this.#begin(limits, deferBegin)
    if (signal?.aborted) {
      // Aborted while waiting for a connection: nothing ran yet.
      const rolledBack = deferBegin
        ? true
        : await client.query('ROLLBACK').then(
            () => true,
            () => false,
          )
      client.release(rolledBack ? undefined : true)
      throw new QueryCancelledError({ cause: signal.reason })
    }
    let destroy = false
    // What can interrupt the call: too many bytes received, the client-side deadline, the signal.
    const guard = new TransactionGuard(signal, limits.timeoutMs)
    const meter = receivedBytesMeter(client, this.#broken)
    meter?.watch(this.#maxResultBytes, guard)
    const deadlineMs = limits.timeoutMs + clientDeadlineGraceMs
    setDeadline(guard, deadlineMs)
    if (signal?.aborted) guard.handleEvent()
    else signal?.addEventListener('abort', guard, { once: true })
    // Set by work that already reset the session in its own round trip (statement.ts).
    const session = { reset: false }
    const running = work(client, session)
    let failed = false
    try {
      return await guard.race(running)
    } catch (error) {
      failed = true
      const interruption = guard.interruption
      if (interruption === undefined) throw error
      // The statement may still be running on the server: cancel it there, then never reuse this
      // connection (a late cancel could otherwise hit the next statement run on it).
      destroy = true
      await cancelUntilStopped(client, running, this.#cancelContext)
      throw interruption
    } finally {
      cancelDeadline(guard, deadlineMs)
      meter?.unwatch()
      signal?.removeEventListener('abort', guard)
      if (this.#broken.has(client)) destroy = true
      if (!destroy && !session.reset) {
        // A failed call's transaction is aborted: only the full reset (its ROLLBACK first) applies.
        const reset = failed
          ? resetSession(client, this.#sessionResetSql)
          : endCall(client, this.#sessionResetSql)
        destroy = !(await reset)
      }
      client.release(destroy ? true : undefined)
    }
  }

  /** What cancelling a statement needs: a way to a second connection while the pool has room. */
  get #cancelContext(): CancelContext {
    return {
      getPool: async () => (await this.#getPool()).pool,
      poolSize: this.#poolSize,
      broken: this.#broken,
    }
  }

  /**
   * After a batch whose tail is {@link callEndStatements}: the session is reset when the tail ran
   * and the connection reports no open transaction. When the tail's proof failed (its division by
   * zero) or a transaction is still open, the statement did not run as a call must (it ended or
   * changed the read-only transaction): its result is discarded, the call refused, and the full
   * reset follows. Any other failure of the tail gets the full reset here, and the result stands.
   */
  #checkCallEnd(
    client: PoolClient,
    result: { resetDone: boolean; tailError?: Error },
    session: { reset: boolean },
  ): Promise<void> | undefined {
    const proofFailed =
      (result.tailError as { code?: unknown } | undefined)?.code === '22012' ||
      (result.resetDone && transactionStatus(client) !== 'I')
    if (proofFailed) {
      session.reset = false
      throw new SqlRefusedError(
        'not_read_only',
        'The statement ended or changed the read-only transaction it ran in: its result was discarded and the session reset.',
      )
    }
    // The common end: settled here, with no promise.
    if (result.resetDone) {
      session.reset = true
      return undefined
    }
    return this.#fullReset(client, result, session)
  }

  async #fullReset(
    client: PoolClient,
    result: { tailError?: Error },
    session: { reset: boolean },
  ): Promise<void> {
    if (!(await resetSession(client, this.#sessionResetSql))) {
      this.#broken.add(client)
      throw new Error('The session could not be reset after the call.', { cause: result.tailError })
    }
    session.reset = true
  }

  /**
   * Type names of the fields, looked up once per type. When the call's batch already ended the
   * transaction (`session.reset`), the lookup gets a read-only transaction and reset of its own,
   * in one round trip like the statement's.
   */
  #describeFields(
    client: PoolClient,
    fields: readonly FieldDef[],
    limits: QueryLimits,
    session: { reset: boolean },
  ): ResultField[] | Promise<ResultField[]> {
    // The common case, every type named already: no lookup, no promise.
    let known = true
    for (const field of fields) if (!this.#typeNames.has(field.dataTypeID)) known = false
    return known ? this.#namedFields(fields) : this.#lookUpFields(client, fields, limits, session)
  }

  #namedFields(fields: readonly FieldDef[]): ResultField[] {
    return fields.map((field) => ({
      name: field.name,
      dataTypeID: field.dataTypeID,
      type: this.#typeNames.get(field.dataTypeID) ?? 'unknown',
    }))
  }

  async #lookUpFields(
    client: PoolClient,
    fields: readonly FieldDef[],
    limits: QueryLimits,
    session: { reset: boolean },
  ): Promise<ResultField[]> {
    const unknown = [...new Set(fields.map((field) => field.dataTypeID))].filter(
      (oid) => !this.#typeNames.has(oid),
    )
    if (unknown.length > 0) {
      const sql =
        'SELECT oid::int4 AS oid, pg_catalog.format_type(oid, NULL) AS name FROM pg_catalog.pg_type WHERE oid = ANY($1::oid[])'
      let rows: unknown[][]
      if (session.reset) {
        const lookup = new BoundedStatement(sql, [unknown], unknown.length, {
          preamble: beginStatements(limits, this.#limits),
          tail: callEndStatements,
        })
        client.query(lookup as never)
        const result = await lookup.promise
        await this.#checkCallEnd(client, result, session)
        rows = result.rows
      } else {
        rows = (await client.query({ text: sql, values: [unknown], rowMode: 'array' })).rows
      }
      for (const [oid, name] of rows as [number, string][]) this.#typeNames.set(oid, name)
    }
    return this.#namedFields(fields)
  }

  /**
   * The executor: runs `sql` with `params` in a read-only, rolled-back transaction and returns at
   * most maxRows rows. It does NOT run the parser gate: use it for SQL written by this server, and
   * {@link query} for SQL that comes from a model or a user.
   */
  readQuery(sql: string, params: readonly unknown[] = [], options: QueryOptions = {}): Promise<QueryResult> {
    return this.#execute(sql, params, options, undefined)
  }

  /**
   * The executor; with `references`, the function policy judges them first: on its own
   * connections ({@link Database.#judgeApart}), and the transaction is then opened in the
   * statement's own round trip (statement.ts), as it is when there is nothing to look up; where
   * those connections cannot be had, BEGIN goes first and the policy's catalog queries run inside
   * the call's transaction.
   *
   * Where the policy allowed the same references before and its kept verdicts have mostly been
   * current lately (a database not written to between calls), the call does not ask the policy:
   * its transaction's first statement is the verdict's guard ({@link verdictGuardSql}), which
   * fails unless no transaction has completed in the cluster since the verdict was made, and the
   * caller's statement follows in the same round trip, under that very snapshot. When it fails,
   * the transaction is rolled back and the policy judges as above.
   */
  async #execute(
    sql: string,
    params: readonly unknown[],
    options: QueryOptions,
    references: SqlReferences | undefined,
  ): Promise<QueryResult> {
    const limits = resolveLimits(this.#limits, options)
    const lookup = references !== undefined && needsPolicyLookup(references)
    const kept = lookup ? this.#kept.likelyCurrent(references) : undefined
    if (kept !== undefined && references !== undefined) {
      const result = await this.#run(sql, params, options, limits, { mode: 'guarded', snapshot: kept })
      if (result !== staleVerdict) {
        this.#kept.record(true)
        return result
      }
      this.#kept.record(false)
      this.#kept.forget(references)
    }
    const judged = lookup && !(await this.#judgeApart(references, limits, options.signal))
    const result = await this.#run(
      sql,
      params,
      options,
      limits,
      judged ? { mode: 'inside', references } : judgedApart,
    )
    if (result === staleVerdict) throw new Error('A call without a guard reported a stale verdict.')
    return result
  }

  /**
   * Runs the statement in one transaction: `judged` (by the policy, or nothing to judge) opens it
   * in the statement's round trip; `guarded` too, with the verdict's guard first (and returns
   * {@link staleVerdict} when the guard fails); `inside` opens it first and judges `references`
   * in it. A connection found dead before the statement ran is replaced once.
   */
  async #run(
    sql: string,
    params: readonly unknown[],
    options: QueryOptions,
    limits: QueryLimits,
    policy:
      | { mode: 'judged' }
      | { mode: 'guarded'; snapshot: string }
      | { mode: 'inside'; references: SqlReferences },
  ): Promise<QueryResult | typeof staleVerdict> {
    const inside = policy.mode === 'inside'
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#inReadOnlyTransaction(
          limits,
          options.signal,
          async (client, session) => {
            if (inside) await assertReferencesAllowed(client, policy.references)
            // Extended protocol (Parse/Bind/Execute): PostgreSQL itself refuses a second statement
            // here. Only maxRows + 1 rows are asked for, and the session reset follows in the same
            // round trip.
            const statement = new BoundedStatement(sql, params, limits.maxRows + 1, {
              preamble: inside ? [] : beginStatements(limits, this.#limits),
              tail: callEndStatements,
              ...(policy.mode === 'guarded'
                ? { guard: { text: verdictGuardSql, values: [policy.snapshot] } }
                : {}),
            })
            client.query(statement as never)
            let result: StatementResult
            try {
              result = await statement.promise
            } catch (error) {
              // Nothing of the statement ran: a dead idle connection may be retried on a fresh one.
              if (!statement.begun && isConnectionError(error)) throw new NotStartedError(error)
              if (statement.guardFailed && (error as { code?: unknown }).code === '22012') {
                // A transaction completed since the verdict was made. Only the transaction's
                // opening statements ran: its ROLLBACK is the whole reset.
                await client.query('ROLLBACK')
                session.reset = true
                return staleVerdict
              }
              throw error
            }
            const ended = this.#checkCallEnd(client, result, session)
            if (ended) await ended
            const { rows, fields } = result
            const truncated = rows.length > limits.maxRows
            const kept = truncated ? rows.slice(0, limits.maxRows) : rows
            const described = this.#describeFields(client, fields, limits, session)
            return {
              fields: Array.isArray(described) ? described : await described,
              rows: kept,
              rowCount: kept.length,
              truncated,
            }
          },
          !inside,
        )
      } catch (error) {
        if (!(error instanceof NotStartedError)) throw error
        if (attempt === 0) continue
        throw error.cause
      }
    }
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
   * The JSON plan of one read-only query (pass the query itself, without EXPLAIN), gated like
   * {@link query}; with `analyze` the query really runs, inside the rolled-back transaction. See
   * explain.ts.
   */
  explain(sql: string, options: ExplainOptions = {}): Promise<ExplainResult> {
    return explain(sql, options, (statement, params, callOptions, references) =>
      this.#execute(statement, params, callOptions, references),
    )
  }

  /** Runs catalog SQL (ours, parameterised) in the same read-only transaction machinery. */
  #catalog<T>(options: CallOptions, work: (client: PoolClient) => Promise<T>): Promise<T> {
    return this.#inReadOnlyTransaction(resolveLimits(this.#limits, options), options.signal, work)
  }

  /** Schemas (without pg_toast and temporary schemas), system schemas flagged and listed last. */
  listSchemas(options: CallOptions = {}): Promise<SchemaInfo[]> {
    return listSchemas((work) => this.#catalog(options, work), this.#schemas)
  }

  /** Tables, views, materialized views and foreign tables, paginated, with estimated row counts. */
  listTables(options: ListTablesOptions = {}): Promise<TablePage> {
    return listTables((work) => this.#catalog(options, work), this.#schemas, options)
  }

  /**
   * Everything about one table or view, matched exactly by schema and name (as stored: unquoted
   * names are lower case). Null when it does not exist or its schema is outside the allow-list.
   */
  describeTable(schema: string, table: string, options: CallOptions = {}): Promise<TableDescription | null> {
    return describeTable((work) => this.#catalog(options, work), this.#schemas, schema, table)
  }

  /** A cheap round trip that also reports who and where we are, for a health check. */
  health(options: CallOptions = {}): Promise<HealthInfo> {
    return health((work) => this.#catalog(options, work))
  }

  /** Closes every connection. Calls made afterwards fail. Safe to call more than once. */
  async close(): Promise<void> {
    this.#closed = true
    const pending = [this.#pool, this.#policyPool]
    this.#pool = undefined
    this.#policyPool = undefined
    await Promise.all(
      pending.map(async (pool) => {
        const created = await pool?.catch(() => undefined)
        await created?.pool.end()
      }),
    )
  }
}

/**
 * Opens the call's transaction: read only, with statement, lock and idle timeouts. The session
 * already has the Database's default timeouts (session.ts, sessionSetupStatements; a rollback
 * returns to them): a call with other limits sets its own with SET LOCAL. Integers validated by
 * resolveLimits: nothing from a caller is spliced in as text.
 */
function beginStatements(limits: QueryLimits, defaults: QueryLimits): readonly string[] {
  // The common case, the session's own timeouts: one list, found without a key.
  if (
    limits.timeoutMs === defaults.timeoutMs &&
    limits.lockTimeoutMs === defaults.lockTimeoutMs &&
    limits.idleInTransactionTimeoutMs === defaults.idleInTransactionTimeoutMs
  )
    return defaultBegin
  const key = `${limits.timeoutMs}/${limits.lockTimeoutMs}/${limits.idleInTransactionTimeoutMs}/${defaults.timeoutMs}/${defaults.lockTimeoutMs}/${defaults.idleInTransactionTimeoutMs}`
  let statements = begins.get(key)
  if (statements === undefined) {
    statements = [
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
      ...(limits.timeoutMs === defaults.timeoutMs
        ? []
        : [`SET LOCAL statement_timeout = ${limits.timeoutMs}`]),
      ...(limits.lockTimeoutMs === defaults.lockTimeoutMs
        ? []
        : [`SET LOCAL lock_timeout = ${limits.lockTimeoutMs}`]),
      ...(limits.idleInTransactionTimeoutMs === defaults.idleInTransactionTimeoutMs
        ? []
        : [`SET LOCAL idle_in_transaction_session_timeout = ${limits.idleInTransactionTimeoutMs}`]),
      // What the end of the call checks: this transaction is still the one open (session.ts).
      callMarker,
    ]
    // A few keys in practice (one per distinct timeout a call asks for); the bound is a guard.
    if (begins.size >= 32) begins.clear()
    begins.set(key, statements)
  }
  return statements
}

/** The attributes of a transaction's upstream span: the same for every one. */
const transactionAttributes = { 'db.system.name': 'postgresql' }

/**
 * What interrupts one transaction: the client-side deadline (its `expire`), the call's signal (it
 * is the abort listener itself) and the byte meter. One object a call, no closures: the race of
 * the work against these is one promise.
 */
class TransactionGuard implements Expiring {
  interruption: Error | undefined
  #reject: ((error: Error) => void) | undefined
  readonly #signal: AbortSignal | undefined
  readonly #timeoutMs: number

  constructor(signal: AbortSignal | undefined, timeoutMs: number) {
    this.#signal = signal
    this.#timeoutMs = timeoutMs
  }

  interrupt(error: Error): void {
    this.interruption ??= error
    this.#reject?.(this.interruption)
  }

  expire(): void {
    this.interrupt(new QueryTimeoutError(this.#timeoutMs))
  }

  /** The signal's abort event. */
  handleEvent(): void {
    this.interrupt(new QueryCancelledError({ cause: this.#signal?.reason }))
  }

  /** Settles as `running` does, unless an interruption comes first (it rejects with that). */
  race<T>(running: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#reject = reject
      if (this.interruption !== undefined) reject(this.interruption)
      running.then(resolve, reject)
    })
  }
}

/** A begin list as one simple query, joined once per list (the lists are kept, see below). */
function joinedBegin(statements: readonly string[]): string {
  let joined = joinedBegins.get(statements)
  if (joined === undefined) {
    joined = statements.join('; ')
    joinedBegins.set(statements, joined)
  }
  return joined
}

const joinedBegins = new WeakMap<readonly string[], string>()

/** {@link beginStatements} when a call's timeouts are the session's: no `SET LOCAL`. */
const defaultBegin: readonly string[] = ['BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', callMarker]

/** {@link beginStatements} by limits: the same list each time, so its serialized form is found by identity. */
const begins = new Map<string, readonly string[]>()

/** A row of the types results most often have (their names are cached per Database). */
const warmUpQuery = `SELECT NULL::int4 AS a, NULL::int8 AS b, NULL::int2 AS c, NULL::numeric AS d, NULL::float8 AS e,
  NULL::float4 AS f, NULL::text AS g, NULL::varchar AS h, NULL::bpchar AS i, NULL::bool AS j, NULL::date AS k,
  NULL::timestamp AS l, NULL::timestamptz AS m, NULL::interval AS n, NULL::json AS o, NULL::jsonb AS p,
  NULL::uuid AS q, NULL::bytea AS r, NULL::name AS s, NULL::oid AS t`

/**
 * Statements of the shapes models write (joins, filters, grouping, windows, CTEs, set operations,
 * casts, JSON, subqueries), judged by the parser gate during the warm-up: see {@link Database.warmUp}.
 */
export const parserWarmUps: readonly string[] = [
  `SELECT a.x, count(*) AS n, sum(b.y) FILTER (WHERE b.z > 0), max(b.w) FROM s.t a JOIN s.u b ON b.id = a.id
     LEFT JOIN s.v c USING (id) WHERE a.k IN (1, 2) AND (a.name ILIKE '%x%' OR a.name IS NULL)
     AND a.d >= now() - interval '7 days' AND a.e BETWEEN 1 AND 9 GROUP BY a.x HAVING count(*) > 1
     ORDER BY n DESC NULLS LAST LIMIT 10 OFFSET 5`,
  `WITH r AS (SELECT id, g, row_number() OVER (PARTITION BY g ORDER BY ts DESC) AS rn, lag(v) OVER w
     FROM s.t WINDOW w AS (ORDER BY ts)) SELECT CASE WHEN rn = 1 THEN 'a' ELSE 'b' END AS k,
     coalesce(x, 0)::numeric(10, 2), EXISTS (SELECT 1 FROM s.u u WHERE u.id = r.id)
     FROM r WHERE rn <= 3 AND g NOT IN (SELECT g FROM s.v) UNION ALL SELECT 'c', 0, false`,
  `SELECT date_trunc('day', created_at) AS day, avg(amount)::float8, percentile_cont(0.5) WITHIN GROUP
     (ORDER BY amount), string_agg(DISTINCT name, ', '), jsonb_agg(data -> 'k'), data ->> 'x'
     FROM s.orders o WHERE status = ANY($1) AND NOT deleted AND o.id > (SELECT min(id) FROM s.orders)
     GROUP BY 1 ORDER BY 1`,
]

/** Connections the policy's own pool opens at most (a judgement takes about a millisecond). */
const policyPoolSize = 2

/** Call connections kept open while idle unless configured (DatabaseOptions.idleConnections). */
const defaultIdleConnections = 1

/** How long the policy runs on the calls' connections after its own connection could not be opened. */
const policyPoolRetryMs = 30_000

/** Names of the policy's statements on its connection, by text: the same name for the same text. */
const policyStatementNames = new Map<string, string>()

/** A connection's `query` for the policy's catalog queries, each as a named (prepared) statement. */
function preparedQueries(client: PoolClient): Pick<PoolClient, 'query'> {
  return {
    query: ((text: string, values?: unknown[]) => {
      let name = policyStatementNames.get(text)
      if (name === undefined) {
        name = `keel_policy_${policyStatementNames.size + 1}`
        policyStatementNames.set(text, name)
      }
      return client.query({ name, text, values })
    }) as PoolClient['query'],
  }
}

/**
 * Settles as `running` does, unless the call's time limit (with the grace the transaction path
 * gives the server's own timeout) passes first (QueryTimeoutError) or its signal fires
 * (QueryCancelledError): the transaction's guard and shared deadline timers.
 */
async function settleOrStop<T>(running: Promise<T>, timeoutMs: number, signal?: AbortSignal): Promise<T> {
  const guard = new TransactionGuard(signal, timeoutMs)
  const deadlineMs = timeoutMs + clientDeadlineGraceMs
  setDeadline(guard, deadlineMs)
  if (signal?.aborted) guard.handleEvent()
  else signal?.addEventListener('abort', guard, { once: true })
  try {
    return await guard.race(running)
  } finally {
    cancelDeadline(guard, deadlineMs)
    signal?.removeEventListener('abort', guard)
  }
}

/** Whether the function policy has anything to look up in the catalog for these references. */
function needsPolicyLookup(references: SqlReferences): boolean {
  return (
    references.relations.size > 0 ||
    references.functions.size > 0 ||
    references.operators.size > 0 ||
    references.types.size > 0
  )
}

/** {@link Database.#run}'s policy for a statement judged apart, or with nothing to judge: built once. */
const judgedApart = { mode: 'judged' } as const

/** What a guarded call returns when its verdict's guard failed (see Database.#execute). */
const staleVerdict: unique symbol = Symbol('stale verdict')

/** A connection error before the call's transaction was open: safe to retry once. */
class NotStartedError extends Error {
  constructor(cause: unknown) {
    super('The connection failed before the statement ran.', { cause })
  }
}
