/**
 * One call's statement as a single round trip: a pg submittable (the interface pg-cursor uses)
 * that writes, in one write, the extended-protocol messages of
 *
 *   [BEGIN … READ ONLY, SET LOCAL timeouts]   (when the transaction is not open yet)
 *   Parse/Bind/Describe/Execute(maxRows + 1) of the statement
 *   Sync
 *
 * PostgreSQL runs them in order; on the first error it skips to the Sync, so nothing after a
 * failed BEGIN or SET LOCAL runs. Every piece is its own Parse (the extended protocol refuses a
 * second statement in one Parse, so the caller's SQL can never add statements to the batch), and
 * the statement's Execute asks for at most maxRows + 1 rows: a larger result stays suspended in
 * its portal and is dropped with the transaction.
 */
import type { FieldDef } from 'pg'
import { loadDependency } from './load.js'

/** What this file uses of pg beyond its typings: the Result class and the value converter. */
interface PgInternals {
  Result: new (rowMode: 'array') => ResultLike
  utils: { prepareValue(value: unknown): unknown }
}

/** The pieces of pg's Connection the statement writes through. */
interface Connection {
  stream: { cork(): void; uncork(): void }
  parse(query: { text: string; types?: unknown[] }): void
  bind(config: { portal?: string; statement?: string; values?: unknown[]; valueMapper?: unknown }): void
  describe(message: { type: 'P' | 'S'; name?: string }): void
  execute(config: { portal?: string; rows?: number }): void
  sync(): void
  sendCopyFail(message: string): void
}

interface ResultLike {
  fields: FieldDef[]
  addFields(fields: FieldDef[]): void
  parseRow(fields: unknown[]): unknown[]
  _types?: unknown
}

export interface StatementResult {
  fields: FieldDef[]
  rows: unknown[][]
}

/**
 * The statement and, when `preamble` is given, the statements that open the transaction first.
 * Settles once PostgreSQL has answered the whole batch (ReadyForQuery), or on the first error.
 */
export class BoundedStatement {
  readonly text: string
  readonly values: readonly unknown[]
  /** Set by pg's Client for submittables that have a `_result`: the client's type parsers. */
  readonly _result: ResultLike
  readonly #preamble: readonly string[]
  readonly #prepareValue: (value: unknown) => unknown
  readonly #rowLimit: number
  readonly #rows: unknown[][] = []
  #completed = 0
  #settled = false
  #resolve!: (result: StatementResult) => void
  #reject!: (error: Error) => void
  readonly promise: Promise<StatementResult>

  constructor(text: string, values: readonly unknown[], rowLimit: number, preamble: readonly string[] = []) {
    const pg = loadDependency<PgInternals>('pg')
    this.text = text
    this.values = values
    this.#prepareValue = pg.utils.prepareValue
    this._result = new pg.Result('array')
    this.#preamble = preamble
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
    return this.#completed >= this.#preamble.length
  }

  /** Called by pg's Client when the connection is free: writes the whole batch at once. */
  submit(connection: Connection): void {
    const { stream } = connection
    stream.cork()
    try {
      for (const statement of this.#preamble) {
        connection.parse({ text: statement })
        connection.bind({})
        connection.execute({})
      }
      connection.parse({ text: this.text })
      // Values converted as pg's own queries convert them (Date, Buffer, arrays, objects as JSON).
      connection.bind({ values: [...this.values], valueMapper: this.#prepareValue })
      connection.describe({ type: 'P' })
      connection.execute({ rows: this.#rowLimit })
      connection.sync()
    } finally {
      stream.uncork()
    }
  }

  handleRowDescription(message: { fields: FieldDef[] }): void {
    this._result.addFields(message.fields)
  }

  handleDataRow(message: { fields: unknown[] }): void {
    this.#rows.push(this._result.parseRow(message.fields))
  }

  handleCommandComplete(): void {
    this.#completed++
  }

  handlePortalSuspended(): void {
    // More rows than the limit: the portal stays suspended until the transaction ends.
  }

  handleEmptyQuery(): void {}

  handleReadyForQuery(): void {
    if (this.#settled) return
    this.#settled = true
    this.#resolve({ fields: this._result.fields, rows: this.#rows })
  }

  handleError(error: Error): void {
    if (this.#settled) return
    this.#settled = true
    this.#reject(error)
  }

  handleCopyInResponse(connection: Connection): void {
    connection.sendCopyFail('COPY FROM STDIN is not supported')
  }

  handleCopyData(): void {}
}
