/**
 * The database's word on functions. The parser gate (sql-guard.ts) refuses functions by name, but a
 * name list can never be complete (PostgreSQL 15 alone has `pg_read_file_old`, and extensions add
 * more), an unqualified name or an operator resolves through the search path, and a view runs
 * functions the statement never names. So before a statement runs, the functions it can reach are
 * looked up in the catalog, on the same connection (same search path), and judged by what the
 * database says about them:
 *
 * - not executable by PUBLIC → refused. PostgreSQL revokes exactly its file, server-admin and
 *   replication functions from PUBLIC; a superuser connection would otherwise run them.
 * - VOLATILE (may have side effects, or read outside the snapshot) → refused when the statement
 *   runs, unless it is one of a short list of read-only built-ins (randomness, clocks, sizes,
 *   replication status) or the operator allowed it (`--allow-functions`). A volatile function can
 *   take locks, write sequences or call out of the transaction; a rollback does not undo those.
 *
 * Overloads are judged together: a name is refused when any function it may resolve to is.
 * Functions reached through views (the view definitions as PostgreSQL prints them, parsed by the
 * same parser, through views of views) must be executable by PUBLIC too: that closes the superuser-only views over file readers
 * (`pg_hba_file_rules`, `pg_file_settings`). What a function body does inside is out of sight; the
 * read-only transaction and the session reset after every call (database.ts) bound it.
 */

import type { SqlName } from './sql-guard.js'

/** Volatile built-ins (in pg_catalog) that only read: allowed wherever they are called. */
export const readOnlyVolatileBuiltins: ReadonlySet<string> = new Set([
  'random',
  'clock_timestamp',
  'timeofday',
  'gen_random_uuid',
  'pg_relation_size',
  'pg_total_relation_size',
  'pg_table_size',
  'pg_indexes_size',
  'pg_database_size',
  'pg_tablespace_size',
  'pg_is_in_recovery',
  'pg_is_wal_replay_paused',
  'pg_get_wal_replay_pause_state',
  'pg_current_wal_lsn',
  'pg_current_wal_flush_lsn',
  'pg_current_wal_insert_lsn',
  'pg_last_wal_receive_lsn',
  'pg_last_wal_replay_lsn',
  'pg_last_xact_replay_timestamp',
  'pg_blocking_pids',
  'pg_safe_snapshot_blocking_pids',
  'pg_lock_status',
  'pg_notification_queue_usage',
  'pg_jit_available',
  'pg_partition_tree',
  'pg_partition_ancestors',
  'pg_sequence_last_value',
  'pg_xact_status',
  'txid_status',
])

/** One function the statement can reach, as the catalog describes it. */
export interface ReachedFunction {
  schema: string
  name: string
  args: string
  publicExecute: boolean
  volatile: boolean
  /** Called by the statement (by name or through an operator), not only inside a view. */
  called: boolean
}

export interface FunctionVerdict {
  refused: ReachedFunction | undefined
  reason: string | undefined
}

const split = (names: readonly SqlName[]) => [
  names.map((item) => item.schema),
  names.map((item) => item.name),
]

/** Names a call makes: functions by name, and operators (each runs its function). */
export interface Calls {
  readonly functions: readonly SqlName[]
  readonly operators: readonly SqlName[]
}

const resolvedRelation = `pg_catalog.to_regclass(
  CASE WHEN r.schema IS NULL THEN pg_catalog.quote_ident(r.name)
       ELSE pg_catalog.quote_ident(r.schema) || '.' || pg_catalog.quote_ident(r.name) END)`

/**
 * The definitions of the named relations that are views, as PostgreSQL prints them (names
 * qualified as the current search path needs): a view runs its definition when read. Materialized
 * views are not listed: reading one runs nothing.
 */
export function viewDefinitionsQuery(relations: readonly SqlName[]): { text: string; values: unknown[] } {
  return {
    text: `SELECT pg_catalog.pg_get_viewdef(c.oid) AS definition
  FROM unnest($1::text[], $2::text[]) AS r(schema, name)
  JOIN pg_catalog.pg_class c ON c.oid = ${resolvedRelation}
 WHERE c.relkind = 'v'`,
    values: split(relations),
  }
}

/**
 * Every function a name may resolve to (search path or given schema) and every function behind an
 * operator, for the statement's own calls and for the calls inside the views it reads.
 * Parameters only: nothing from the statement is spliced in.
 */
export function reachedFunctionsQuery(called: Calls, inViews: Calls): { text: string; values: unknown[] } {
  const candidates = (functions: number, operators: number, calledFlag: boolean) => `
    SELECT p.oid, ${calledFlag}
      FROM unnest($${functions}::text[], $${functions + 1}::text[]) AS f(schema, name)
      JOIN pg_catalog.pg_proc p ON p.proname = f.name
      JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
     WHERE (f.schema IS NULL AND n.nspname = ANY (pg_catalog.current_schemas(true))) OR n.nspname = f.schema
    UNION ALL
    SELECT o.oprcode::pg_catalog.oid, ${calledFlag}
      FROM unnest($${operators}::text[], $${operators + 1}::text[]) AS x(schema, name)
      JOIN pg_catalog.pg_operator o ON o.oprname = x.name AND o.oprcode <> 0
      JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
     WHERE (x.schema IS NULL AND n.nspname = ANY (pg_catalog.current_schemas(true))) OR n.nspname = x.schema`
  const text = `
WITH reached(oid, called) AS (${candidates(1, 3, true)}
    UNION ALL${candidates(5, 7, false)}
)
SELECT n.nspname AS schema, p.proname AS name,
       pg_catalog.pg_get_function_identity_arguments(p.oid) AS args,
       pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE') AS "publicExecute",
       p.provolatile = 'v' AS volatile,
       pg_catalog.bool_or(reached.called) AS called
  FROM reached
  JOIN pg_catalog.pg_proc p ON p.oid = reached.oid
  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
 GROUP BY n.nspname, p.proname, p.oid, p.provolatile`
  return {
    text,
    values: [
      ...split(called.functions),
      ...split(called.operators),
      ...split(inViews.functions),
      ...split(inViews.operators),
    ],
  }
}

/** Whether `fn` is on the read-only list or the operator's allow list (`name` or `schema.name`). */
function allowedVolatile(fn: ReachedFunction, allow: ReadonlySet<string>): boolean {
  if (fn.schema === 'pg_catalog' && readOnlyVolatileBuiltins.has(fn.name)) return true
  return allow.has(fn.name) || allow.has(`${fn.schema}.${fn.name}`)
}

/**
 * Judges the reached functions. `executes` is false for a plain EXPLAIN (nothing runs, but the
 * planner may still fold functions, so the PUBLIC rule applies there too).
 */
export function judgeFunctions(
  reached: readonly ReachedFunction[],
  { executes, allow }: { executes: boolean; allow: ReadonlySet<string> },
): FunctionVerdict {
  for (const fn of reached) {
    if (!fn.publicExecute) {
      return {
        refused: fn,
        reason: fn.called
          ? `it is not executable by PUBLIC (PostgreSQL reserves it for privileged roles: file, server or replication access)`
          : `a view in the query calls it, and it is not executable by PUBLIC (privileged file, server or replication access)`,
      }
    }
  }
  if (!executes) return { refused: undefined, reason: undefined }
  for (const fn of reached) {
    if (fn.called && fn.volatile && !allowedVolatile(fn, allow)) {
      return {
        refused: fn,
        reason:
          'it is VOLATILE: it may change state that a rollback does not undo (locks, sequences, settings, other connections). ' +
          'Only read-only built-ins (random, clock_timestamp, size and status functions) and functions the server was started with --allow-functions may run',
      }
    }
  }
  return { refused: undefined, reason: undefined }
}

/** The message a refusal carries: names the function as the catalog knows it. */
export function refusalMessage(verdict: FunctionVerdict): string {
  const fn = verdict.refused
  if (!fn) return ''
  return `Function ${fn.schema}.${fn.name}(${fn.args}) is not allowed: ${verdict.reason}.`
}
