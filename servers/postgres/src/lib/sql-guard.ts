/**
 * The parser gate: decides, with PostgreSQL's own parser (libpg-query), whether one piece of SQL
 * is a single read-only statement. It is the first of two walls; the second is the database itself
 * (every statement runs in a READ ONLY transaction that is always rolled back). The gate exists for
 * what a read-only transaction does not stop: ending that transaction (`SELECT 1; COMMIT; DROP …`),
 * side effects that survive a rollback (sequences, advisory locks, NOTIFY, set_config), reading
 * server files, signalling other backends, and functions that run SQL given as a string.
 */

import { loadDependency } from './load.js'

/** Why a statement was refused. */
export type SqlRefusalCode = 'not_read_only' | 'multiple_statements' | 'syntax_error' | 'empty'

/** The kind of statement that was accepted. */
export type AcceptedStatement = 'select' | 'explain' | 'show'

export interface SqlAccepted {
  readonly ok: true
  readonly statement: AcceptedStatement
  /** For `statement: 'explain'`: whether it is EXPLAIN ANALYZE (the inner query runs). */
  readonly analyze: boolean
  /**
   * What the statement names that the database must judge (see function-policy.ts): the parser
   * knows names only, PostgreSQL knows which functions, operators and views they are.
   */
  readonly references: SqlReferences
}

/** Names a statement uses, as written (unquoted names already lower-cased by the parser). */
export interface SqlReferences {
  /** Function names (unqualified), with the 1-based position of the first call of each. */
  readonly functions: ReadonlyMap<string, number | undefined>
  /** Operator names (`+`, `@@`, `~~`, …): each runs a function. */
  readonly operators: ReadonlySet<string>
  /** Target type names of explicit casts: a cast and a type's input run functions too. */
  readonly types: ReadonlySet<string>
  /** Relation names (unqualified): views run the functions in their definitions. */
  readonly relations: ReadonlySet<string>
}

export interface SqlRefusal {
  readonly ok: false
  readonly code: SqlRefusalCode
  /** Safe to show to the model: says what was refused and what to do instead. */
  readonly message: string
  /** 1-based character position in the SQL, as PostgreSQL reports positions. */
  readonly position?: number
}

export type SqlGuardResult = SqlAccepted | SqlRefusal

/**
 * Functions refused anywhere in a statement, matched on the unqualified, lower-cased name (so
 * `pg_catalog.pg_sleep` and `"pg_sleep"` are caught too, and so is a same-named function in any
 * other schema: refusing those is the safe side).
 */
const deniedFunctions: ReadonlyArray<readonly [pattern: RegExp, reason: string]> = [
  [
    /^pg_read_(binary_)?file$|^pg_stat_file$|^pg_ls_|^pg_file_|^pg_logdir_ls$/,
    'reads or writes server files',
  ],
  [/^lo_|^loread$|^lowrite$/, 'large-object functions read and write server files and data'],
  [
    /^dblink|^pg_background_|^http(_|$)|_(to|from)_s3$/,
    'acts outside this transaction (other connections, background workers, network)',
  ],
  // These run SQL passed as a string, which this gate never sees.
  [
    /^(query|cursor|table|schema|database)_to_xml|^ts_stat$|^ts_rewrite$|^crosstab|^connectby$|^xpath_table$/,
    'runs SQL given as a string',
  ],
  [
    /^pg_(terminate|cancel)_backend$|^pg_reload_conf$|^pg_rotate_logfile|^pg_promote$|^pg_log_|^pg_stat_reset|^pg_stat_statements_reset$/,
    'acts on the server or other sessions',
  ],
  [/^set_config$|^setseed$/, 'changes session settings'],
  [/^pg_(try_)?advisory_/, 'takes advisory locks that outlive the transaction'],
  [/^pg_notify$/, 'sends notifications'],
  [/^pg_sleep/, 'sleeps; the statement timeout bounds queries, sleeping serves no read'],
  [/^nextval$|^setval$/, 'changes sequences (not undone by rollback)'],
  [/^txid_current|^pg_current_xact_id/, 'assigns a transaction id'],
  [
    /^pg_(create|drop|copy)_\w*replication_slot$|^pg_replication_slot_advance$|^pg_logical_slot_(get|peek)_|^pg_replication_origin_|^pg_logical_emit_message$/,
    'acts on replication',
  ],
  [
    /^pg_switch_(wal|xlog)$|^pg_create_restore_point$|^pg_(start|stop)_backup$|^pg_backup_(start|stop)$|^pg_wal_replay_/,
    'acts on WAL or backups',
  ],
  [
    /^brin_(summarize|desummarize)|^gin_clean_pending_list$|^pg_import_system_collations$|^pg_extension_config_dump$|^binary_upgrade_|^pg_truncate_visibility_map$|^heap_force_/,
    'writes to indexes or catalogs',
  ],
]

/** Looks a function name up in the deny list; returns the reason, or undefined when allowed. */
export function deniedFunctionReason(name: string): string | undefined {
  const lower = name.toLowerCase()
  for (const [pattern, reason] of deniedFunctions) if (pattern.test(lower)) return reason
  return undefined
}

type ParseResult = { stmts?: Array<{ stmt?: Record<string, unknown>; stmt_location?: number }> }
type Parser = { parseSync(sql: string): unknown; loadModule(): Promise<void> }

let parser: Promise<Parser> | undefined

/**
 * Loads the WASM parser. Called implicitly by {@link checkReadOnlySql}; call it at start-up only if
 * the first check must be fast. Loading is deferred so that starting the server stays cheap.
 */
export function loadSqlParser(): Promise<Parser> {
  parser ??= Promise.resolve()
    .then(async () => {
      const module = loadDependency<Parser>('libpg-query')
      await module.loadModule()
      return module
    })
    .catch((error: unknown) => {
      parser = undefined
      throw error
    })
  return parser
}

const refuse = (code: SqlRefusalCode, message: string, position?: number): SqlRefusal =>
  position === undefined ? { ok: false, code, message } : { ok: false, code, message, position }

const statementNames: Readonly<Record<string, string>> = {
  TransactionStmt: 'transaction control (BEGIN/COMMIT/ROLLBACK/SAVEPOINT/PREPARE TRANSACTION)',
  VariableSetStmt: 'SET/RESET',
  CopyStmt: 'COPY',
  DoStmt: 'DO',
  CallStmt: 'CALL',
  LockStmt: 'LOCK',
  ListenStmt: 'LISTEN',
  NotifyStmt: 'NOTIFY',
  UnlistenStmt: 'UNLISTEN',
  VacuumStmt: 'VACUUM/ANALYZE',
  ClusterStmt: 'CLUSTER',
  ReindexStmt: 'REINDEX',
  CheckPointStmt: 'CHECKPOINT',
  DiscardStmt: 'DISCARD',
  LoadStmt: 'LOAD',
  PrepareStmt: 'PREPARE',
  ExecuteStmt: 'EXECUTE',
  DeallocateStmt: 'DEALLOCATE',
  DeclareCursorStmt: 'DECLARE CURSOR',
  FetchStmt: 'FETCH/MOVE',
  ClosePortalStmt: 'CLOSE',
  InsertStmt: 'INSERT',
  UpdateStmt: 'UPDATE',
  DeleteStmt: 'DELETE',
  MergeStmt: 'MERGE',
  CreateTableAsStmt: 'CREATE TABLE AS / SELECT INTO',
}

const describeStatement = (nodeType: string): string => statementNames[nodeType] ?? 'DDL and other commands'

/** Converts a byte offset in the UTF-8 encoded SQL (parse-tree locations) to a 1-based character position. */
function positionOf(sql: string, byteOffset: unknown): number | undefined {
  if (typeof byteOffset !== 'number' || byteOffset < 0) return undefined
  return Buffer.from(sql, 'utf8').subarray(0, byteOffset).toString('utf8').length + 1
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function functionName(funcCall: Record<string, unknown>): string | undefined {
  const parts = funcCall.funcname
  if (!Array.isArray(parts)) return undefined
  const last = parts.at(-1)
  if (!isRecord(last) || !isRecord(last.String)) return undefined
  const name = last.String.sval
  return typeof name === 'string' ? name : undefined
}

function qualifiedName(funcCall: Record<string, unknown>): string {
  const parts = Array.isArray(funcCall.funcname) ? funcCall.funcname : []
  return parts
    .map((part) => (isRecord(part) && isRecord(part.String) ? String(part.String.sval) : '?'))
    .join('.')
}

const lastName = (parts: unknown): string | undefined => {
  if (!Array.isArray(parts)) return undefined
  const last = parts.at(-1)
  return isRecord(last) && isRecord(last.String) && typeof last.String.sval === 'string'
    ? last.String.sval
    : undefined
}

interface MutableReferences {
  functions: Map<string, number | undefined>
  operators: Set<string>
  types: Set<string>
  relations: Set<string>
}

const emptyReferences = (): MutableReferences => ({
  functions: new Map(),
  operators: new Set(),
  types: new Set(),
  relations: new Set(),
})

/** Records the names one parse-tree node hands to the database to resolve. */
function collectReference(sql: string, key: string, value: Record<string, unknown>, into: MutableReferences) {
  if (key === 'FuncCall') {
    const name = functionName(value)
    if (name !== undefined && !into.functions.has(name))
      into.functions.set(name, positionOf(sql, value.location))
  } else if (key === 'A_Expr') {
    const name = lastName(value.name)
    if (name !== undefined) into.operators.add(name)
  } else if (key === 'SubLink') {
    const name = lastName(value.operName)
    if (name !== undefined) into.operators.add(name)
  } else if (key === 'TypeCast' && isRecord(value.typeName)) {
    const name = lastName(value.typeName.names)
    if (name !== undefined) into.types.add(name)
  } else if (key === 'RangeVar' && typeof value.relname === 'string') {
    into.relations.add(value.relname)
  }
}

/**
 * Walks every object and array below `root` (iteratively, so deep trees cannot overflow the stack)
 * and returns the first reason to refuse. Generic on purpose: a function call or a nested write
 * cannot hide in a node type this code does not know about.
 */
function findViolation(sql: string, root: unknown, references: MutableReferences): SqlRefusal | undefined {
  const stack: unknown[] = [root]
  while (stack.length > 0) {
    const node = stack.pop()
    if (Array.isArray(node)) {
      for (let index = node.length - 1; index >= 0; index--) stack.push(node[index])
      continue
    }
    if (!isRecord(node)) continue
    for (const [key, value] of Object.entries(node)) {
      if (isRecord(value)) collectReference(sql, key, value, references)
      if (key === 'FuncCall' && isRecord(value)) {
        const name = functionName(value)
        const reason = name === undefined ? undefined : deniedFunctionReason(name)
        if (reason !== undefined) {
          return refuse(
            'not_read_only',
            `Function ${qualifiedName(value)}() is not allowed: it ${reason}.`,
            positionOf(sql, value.location),
          )
        }
      } else if (key.endsWith('Stmt') && key !== 'SelectStmt' && isRecord(value)) {
        // Data-modifying CTEs (WITH x AS (DELETE …) SELECT …) land here, as would any other
        // statement nested where the grammar allows one.
        return refuse(
          'not_read_only',
          `Only read-only queries are allowed: ${describeStatement(key)} found inside the statement.`,
          positionOf(sql, value.location),
        )
      } else if (key === 'intoClause' && value !== null && value !== undefined) {
        return refuse(
          'not_read_only',
          'SELECT … INTO creates a table; only read-only queries are allowed. Remove the INTO clause.',
        )
      } else if (key === 'lockingClause' && Array.isArray(value) && value.length > 0) {
        return refuse(
          'not_read_only',
          'Row locks (FOR UPDATE / FOR NO KEY UPDATE / FOR SHARE / FOR KEY SHARE) are not allowed; remove the locking clause.',
        )
      }
      if (typeof value === 'object' && value !== null) stack.push(value)
    }
  }
  return undefined
}

function explainOptions(explain: Record<string, unknown>): { analyze: boolean } {
  const options = Array.isArray(explain.options) ? explain.options : []
  let analyze = false
  for (const option of options) {
    if (!isRecord(option) || !isRecord(option.DefElem)) continue
    const { defname, arg } = option.DefElem
    if (defname !== 'analyze') continue
    // EXPLAIN (ANALYZE) has no argument; EXPLAIN (ANALYZE false) turns it off again.
    const value = isRecord(arg) && isRecord(arg.String) ? String(arg.String.sval).toLowerCase() : undefined
    const booleanValue = isRecord(arg) && isRecord(arg.Boolean) ? arg.Boolean.boolval === true : undefined
    analyze = booleanValue ?? (value === undefined ? true : !['false', 'off', '0', 'no'].includes(value))
  }
  return { analyze }
}

/**
 * Checks that `sql` is exactly one read-only statement: a query (SELECT, VALUES, TABLE, WITH …
 * SELECT, set operations), EXPLAIN [ANALYZE] of such a query, or SHOW. Everything else is refused
 * with a message the model can act on.
 *
 * SHOW is accepted: it reads one setting, exactly as `current_setting()` (also allowed) does, and
 * PostgreSQL itself hides privileged settings from roles without pg_read_all_settings.
 */
export async function checkReadOnlySql(sql: string): Promise<SqlGuardResult> {
  const known = verdicts.get(sql)
  if (known !== undefined) {
    // Most recently used last: the oldest entry is the one dropped when the cache is full.
    verdicts.delete(sql)
    verdicts.set(sql, known)
    return known
  }
  const verdict = await judge(sql)
  if (sql.length <= cachedSqlMaxLength) {
    if (verdicts.size >= verdictCacheEntries) verdicts.delete(verdicts.keys().next().value as string)
    verdicts.set(sql, verdict)
  }
  return verdict
}

/**
 * Verdicts of recent SQL texts. A verdict is a function of the text alone (the parser, the deny
 * list and the rules above are fixed for the process), so a model that repeats a query, or runs
 * the same one with other parameters, skips the parse (35–65 µs in WebAssembly) and the walk. The
 * database's checks (function policy, read-only transaction) run on every call regardless.
 * Bounded: at most this many entries, and only texts up to {@link cachedSqlMaxLength} characters
 * (at most about 2 MiB of keys).
 */
export const verdictCacheEntries = 256
export const cachedSqlMaxLength = 8192
const verdicts = new Map<string, SqlGuardResult>()

/** How many verdicts the cache holds now (for tests). */
export function cachedVerdicts(): number {
  return verdicts.size
}

/** Whether the verdict of `sql` is kept (for tests). */
export function verdictKept(sql: string): boolean {
  return verdicts.has(sql)
}

/** Forgets every kept verdict (for tests: the cache only saves work, so nothing else changes). */
export function forgetVerdicts(): void {
  verdicts.clear()
}

async function judge(sql: string): Promise<SqlGuardResult> {
  if (sql.trim() === '') return refuse('empty', 'The SQL is empty. Send one SELECT statement.')
  const { parseSync } = await loadSqlParser()
  let tree: ParseResult
  try {
    tree = parseSync(sql) as ParseResult
  } catch (error) {
    const details = (error as { sqlDetails?: { cursorPosition?: number } }).sqlDetails
    const message = error instanceof Error ? error.message : String(error)
    const cursor = details?.cursorPosition
    return refuse(
      'syntax_error',
      `Syntax error: ${message}.`,
      typeof cursor === 'number' && cursor >= 0 ? cursor + 1 : undefined,
    )
  }
  const statements = tree.stmts ?? []
  if (statements.length === 0)
    return refuse('empty', 'The SQL has no statement (only comments or semicolons).')
  if (statements.length > 1) {
    return refuse(
      'multiple_statements',
      `Exactly one statement per call is allowed; found ${statements.length}. Send them one at a time.`,
      positionOf(sql, statements[1]?.stmt_location),
    )
  }
  const statement = statements[0]?.stmt ?? {}
  const [nodeType] = Object.keys(statement)
  const body = nodeType === undefined ? undefined : statement[nodeType]
  const references = emptyReferences()
  if (nodeType === 'VariableShowStmt') return { ok: true, statement: 'show', analyze: false, references }
  if (nodeType === 'SelectStmt') {
    const violation = findViolation(sql, body, references)
    return violation ?? { ok: true, statement: 'select', analyze: false, references }
  }
  if (nodeType === 'ExplainStmt' && isRecord(body)) {
    const inner = isRecord(body.query) ? body.query : {}
    const [innerType] = Object.keys(inner)
    if (innerType !== 'SelectStmt') {
      return refuse(
        'not_read_only',
        `EXPLAIN is allowed only for read-only queries; found ${describeStatement(innerType ?? '')}.`,
      )
    }
    const violation = findViolation(sql, inner, references)
    return violation ?? { ok: true, statement: 'explain', analyze: explainOptions(body).analyze, references }
  }
  return refuse(
    'not_read_only',
    `Only read-only queries are allowed (SELECT, WITH … SELECT, VALUES, TABLE, EXPLAIN, SHOW); ${describeStatement(nodeType ?? '')} is refused.`,
    positionOf(sql, statements[0]?.stmt_location ?? 0),
  )
}

/**
 * The names SQL written by someone else uses (a view's definition, from pg_get_viewdef), so that
 * what a view runs is judged like what the caller wrote. Unparseable text yields undefined.
 */
export async function collectSqlReferences(sql: string): Promise<SqlReferences | undefined> {
  const { parseSync } = await loadSqlParser()
  let tree: unknown
  try {
    tree = parseSync(sql)
  } catch {
    return undefined
  }
  const references = emptyReferences()
  const stack: unknown[] = [tree]
  while (stack.length > 0) {
    const node = stack.pop()
    if (Array.isArray(node)) {
      stack.push(...node)
      continue
    }
    if (!isRecord(node)) continue
    for (const [key, value] of Object.entries(node)) {
      if (isRecord(value)) collectReference(sql, key, value, references)
      if (typeof value === 'object' && value !== null) stack.push(value)
    }
  }
  return references
}
