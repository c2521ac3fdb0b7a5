/**
 * The shapes the postgres lib takes and returns: connection options and limits, query and explain
 * results, and the catalog descriptions of schemas, tables and columns. Types only.
 */
import type { ResultField } from './format.js'

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
  /** Connections in the pool at most. Default 10, capped by the server's headroom (session.ts). */
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
  /**
   * Connections of the pool kept open while idle, past idleTimeoutMs (and, when above 0, one of the
   * function policy's). Default 1: a call after a pause longer than the idle timeout, the usual
   * pace of a model between calls, does not connect (and authenticate, and negotiate TLS) first.
   */
  readonly idleConnections?: number
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
