/**
 * One call's statement as a single round trip: a pg submittable (the interface pg-cursor uses)
 * that writes, as one buffer, the extended-protocol messages of
 *
 *   [BEGIN … READ ONLY, SET LOCAL timeouts]     the preamble, when the transaction is not open yet
 *   [a guard, with its values]                   a statement that fails unless the call may go on
 *   Parse/Bind/Describe/Execute(maxRows + 1)    the statement
 *   [proof and reset, DEALLOCATE ALL, ROLLBACK]  the tail: how a call ends (session.ts)
 *   Sync
 *
 * PostgreSQL runs them in order and, on the first error, skips to the Sync: nothing after a failed
 * BEGIN or SET LOCAL runs, and after a failed statement the tail does not run either (the caller
 * then resets the session with a query of its own, see {@link StatementResult.resetDone}). Every
 * piece is its own Parse (the extended protocol refuses a second statement in one Parse, so the
 * caller's SQL cannot add statements to the batch), and the statement's Execute asks for at most
 * maxRows + 1 rows: a larger result stays suspended in its portal until the ROLLBACK drops it.
 */
import type { FieldDef } from 'pg'
import { loadDependency, loadPgProtocol } from './load.js'

/** The piece of pg's Connection the statement uses. */
interface Connection {
  stream: { writable: boolean; write(buffer: Buffer): boolean }
  sendCopyFail(message: string): void
}

/** pg-protocol's message serializer (the one pg's Connection writes with). */
interface Serializer {
  parse(query: { text: string }): Buffer
  bind(config: { values?: unknown[]; valueMapper?: (value: unknown) => unknown }): Buffer
  describe(message: { type: 'P'; name: string }): Buffer
  execute(config?: { rows?: number }): Buffer
  sync(): Buffer
}

interface ResultLike {
  fields: FieldDef[]
  addFields(fields: FieldDef[]): void
  parseRow(fields: unknown[]): unknown[]
}

/** What this file uses of pg beyond its typings: the Result class and the value converter. */
interface PgInternals {
  Result: new (rowMode: 'array') => ResultLike
  utils: { prepareValue(value: unknown): unknown }
}

let loaded: { pg: PgInternals; serialize: Serializer } | undefined

function dependencies(): { pg: PgInternals; serialize: Serializer } {
  loaded ??= {
    pg: loadDependency<PgInternals>('pg'),
    serialize: loadPgProtocol<{ serialize: Serializer }>().serialize,
  }
  return loaded
}

/** Serialized statement lists (preambles per limits, tails per session setup): built once each. */
const serialized = new Map<string, Buffer>()
const maxSerialized = 32

/** The same, by list: the preambles and tails callers pass are the same arrays on every call. */
const serializedLists = new WeakMap<readonly string[], Buffer>()

function simpleStatements(serialize: Serializer, statements: readonly string[]): Buffer {
  const known = serializedLists.get(statements)
  if (known !== undefined) return known
  if (statements.length === 0) return Buffer.alloc(0)
  const key = statements.join('\n')
  let bytes = serialized.get(key)
  if (bytes === undefined) {
    const parts: Buffer[] = []
    for (const statement of statements)
      parts.push(serialize.parse({ text: statement }), serialize.bind({}), serialize.execute())
    bytes = Buffer.concat(parts)
    // Keys are few (one tail per Database, one preamble per distinct timeout): the bound only
    // guards against a caller that varies its timeout on every call.
    if (serialized.size >= maxSerialized) serialized.clear()
    serialized.set(key, bytes)
  }
  serializedLists.set(statements, bytes)
  return bytes
}

/** Describe of the unnamed portal: the same on every call, serialized once. */
let describePortal: Buffer | undefined
/** Execute messages by row limit (a few: the limits calls ask for). */
const executes = new Map<number, Buffer>()

function executeMessage(serialize: Serializer, rows: number): Buffer {
  let bytes = executes.get(rows)
  if (bytes === undefined) {
    bytes = serialize.execute({ rows })
    if (executes.size >= maxSerialized) executes.clear()
    executes.set(rows, bytes)
  }
  return bytes
}

export interface StatementResult {
  fields: FieldDef[]
  rows: unknown[][]
  /** Whether the tail ran without error (the caller still checks the transaction status). */
  resetDone: boolean
  /** The error the tail failed with, if it failed: the statement's rows are complete all the same. */
  tailError?: Error
}

export interface BatchOptions {
  /** Statements that open the transaction, sent before the statement. */
  preamble?: readonly string[]
  /** Statements that reset the session, sent after it. */
  tail?: readonly string[]
  /**
   * A statement sent after the preamble, with values of its own (its rows are not the statement's):
   * when it fails, nothing after it runs, and {@link BoundedStatement.guardFailed} says so.
   */
  guard?: { readonly text: string; readonly values: readonly unknown[] }
}

/**
 * Settles once PostgreSQL has answered the whole batch (ReadyForQuery). Rejects on an error before
 * the statement completed; an error in the tail resolves with the rows and `resetDone: false`.
 */
export class BoundedStatement {
  readonly text: string
  readonly values: readonly unknown[]
  /** Set by pg's Client for submittables that have a `_result`: the client's type parsers. */
  readonly _result: ResultLike
  readonly #preamble: readonly string[]
  readonly #tail: readonly string[]
  readonly #guard: BatchOptions['guard']
  /** Statements before the caller's: the preamble's and the guard. */
  readonly #before: number
  readonly #rowLimit: number
  readonly #rows: unknown[][] = []
  #completed = 0
  #statementDone = false
  #settled = false
  #guardFailed = false
  #resolve!: (result: StatementResult) => void
  #reject!: (error: Error) => void
  readonly promise: Promise<StatementResult>

  constructor(text: string, values: readonly unknown[], rowLimit: number, options: BatchOptions = {}) {
    this.text = text
    this.values = values
    this._result = new (dependencies().pg.Result)('array')
    this.#preamble = options.preamble ?? []
    this.#tail = options.tail ?? []
    this.#guard = options.guard
    this.#before = this.#preamble.length + (this.#guard === undefined ? 0 : 1)
    this.#rowLimit = rowLimit
    this.promise = new Promise((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
  }

  /**
   * Whether the transaction's opening statements all completed: before that, nothing of the
   * caller's statement has run (a dead connection may then be retried on a fresh one).
   */
  get begun(): boolean {
    return this.#completed >= this.#before
  }

  /** Whether the guard failed: the batch stopped there, and the caller's statement did not run. */
  get guardFailed(): boolean {
    return this.#guardFailed
  }

  /**
   * Called by pg's Client when the connection is free: writes the whole batch as one buffer, in
   * one system call (a write per message costs more than the rest of the client side of a call).
   */
  submit(connection: Connection): void {
    const { pg, serialize } = dependencies()
    describePortal ??= serialize.describe({ type: 'P', name: '' })
    const batch = Buffer.concat([
      simpleStatements(serialize, this.#preamble),
      ...(this.#guard === undefined
        ? []
        : [
            serialize.parse({ text: this.#guard.text }),
            serialize.bind({ values: [...this.#guard.values], valueMapper: pg.utils.prepareValue }),
            executeMessage(serialize, 0),
          ]),
      serialize.parse({ text: this.text }),
      // Values converted as pg's own queries convert them (Date, Buffer, arrays, objects as JSON).
      serialize.bind({ values: [...this.values], valueMapper: pg.utils.prepareValue }),
      describePortal,
      executeMessage(serialize, this.#rowLimit),
      simpleStatements(serialize, this.#tail),
      serialize.sync(),
    ])
    // As pg's Connection does: a closed stream reports itself through its error and close events.
    if (connection.stream.writable) connection.stream.write(batch)
  }

  handleRowDescription(message: { fields: FieldDef[] }): void {
    this._result.addFields(message.fields)
  }

  handleDataRow(message: { fields: unknown[] }): void {
    // Rows of the guard and of the tail (its proof and reset's) are not the statement's.
    if (this.#completed >= this.#before && !this.#statementDone)
      this.#rows.push(this._result.parseRow(message.fields))
  }

  handleCommandComplete(): void {
    this.#completed++
    if (this.#completed > this.#before) this.#statementDone = true
  }

  handlePortalSuspended(): void {
    // More rows than the limit: the portal stays suspended until the transaction ends.
    this.#statementDone = true
  }

  handleEmptyQuery(): void {
    this.#statementDone = true
  }

  handleReadyForQuery(): void {
    this.#settle(true)
  }

  handleError(error: Error): void {
    // The guard is the statement that runs once the preamble's have completed.
    if (this.#guard !== undefined && this.#completed === this.#preamble.length) this.#guardFailed = true
    if (this.#statementDone) this.#settle(false, error)
    else if (!this.#settled) {
      this.#settled = true
      this.#reject(error)
    }
  }

  #settle(resetDone: boolean, tailError?: Error): void {
    if (this.#settled) return
    this.#settled = true
    this.#resolve({
      fields: this._result.fields,
      rows: this.#rows,
      resetDone: resetDone && this.#tail.length > 0,
      ...(tailError === undefined ? {} : { tailError }),
    })
  }

  handleCopyInResponse(connection: Connection): void {
    connection.sendCopyFail('COPY FROM STDIN is not supported')
  }

  handleCopyData(): void {}
}
