/**
 * The database half of the gate: the parser (sql-guard.ts) knows only names; PostgreSQL knows which
 * functions they are. Before the caller's statement runs, every function it can reach by name is
 * judged by what the catalog says about it, not by its name:
 *
 * - functions not executable by PUBLIC are refused: PostgreSQL revokes exactly its admin and
 *   file-reading functions from PUBLIC, so a superuser or a privileged role gets no more here than
 *   any role would;
 * - volatile functions are refused unless on a short allow list of harmless ones (volatile is how
 *   PostgreSQL marks functions with side effects: locks, sequences, settings, old file readers
 *   such as pg_read_file_old that check superuser inside instead of through a grant), or on the
 *   versioned allow-list of extension monitoring functions (pg_stat_statements);
 * - system views and tables PUBLIC may not read (pg_hba_file_rules, pg_file_settings, pg_authid, …)
 *   are refused for the same reason.
 *
 * "Reach by name" covers every overload and schema of a function name (the safe side), the support
 * functions of aggregates, the functions behind operators (and their planner estimators), explicit
 * casts and type input, and the definitions of the views a statement reads, recursively. Bodies of user-defined functions are not inspected; what they do runs inside
 * the read-only, rolled-back transaction, and the session is reset after every call (database.ts).
 */
import type { PoolClient } from 'pg'
import { SqlRefusedError } from './errors.js'
import { collectSqlReferences, deniedFunctionReason, type SqlReferences } from './sql-guard.js'

/** Volatile pg_catalog functions that change nothing and read no server file. */
export const volatileAllowList: readonly string[] = [
  'random',
  'clock_timestamp',
  'timeofday',
  'gen_random_uuid',
  'pg_relation_size',
  'pg_total_relation_size',
  'pg_table_size',
  'pg_indexes_size',
  'pg_database_size',
  'pg_is_in_recovery',
  'pg_partition_tree',
  'pg_partition_ancestors',
]

/**
 * Monitoring functions of extensions, vetted one version at a time: volatile only because they read
 * shared statistics (nothing they do changes state or outlives the call), and executable by PUBLIC.
 * A function is allowed when it is a member of the named extension, in that extension's own schema,
 * at one of the listed versions, with exactly the listed signature. Any other overload, version or
 * function of the extension (pg_stat_statements_reset) stays refused; a new version is refused until
 * its script has been read and added here.
 */
export const monitoringAllowList: ReadonlyArray<{
  readonly extension: string
  readonly versions: readonly string[]
  readonly functions: readonly string[]
}> = [
  {
    // Scripts 1.8–1.10 read: pg_stat_statements(showtext) returns the statistics (query texts of
    // other roles hidden unless pg_read_all_stats); pg_stat_statements_info() two counters.
    extension: 'pg_stat_statements',
    versions: ['1.8', '1.9', '1.10'],
    functions: ['pg_stat_statements(boolean)', 'pg_stat_statements_info()'],
  },
]

/** The allow-list as `extension version name(argument types)` keys, as the policy's SQL compares them. */
export const monitoringAllowKeys: readonly string[] = monitoringAllowList.flatMap((entry) =>
  entry.versions.flatMap((version) => entry.functions.map((fn) => `${entry.extension} ${version} ${fn}`)),
)

/** How many rounds of views-inside-views are followed before the statement is refused. */
const maxViewDepth = 16

type Queryable = Pick<PoolClient, 'query'>

interface Collected {
  functions: Map<string, number | undefined>
  operators: Set<string>
  types: Set<string>
}

const emptyCollected = (): Collected => ({ functions: new Map(), operators: new Set(), types: new Set() })

function merge(into: Collected, references: SqlReferences): void {
  for (const [name, position] of references.functions)
    if (!into.functions.has(name)) into.functions.set(name, position)
  for (const name of references.operators) into.operators.add(name)
  for (const name of references.types) into.types.add(name)
}

const refusal = (message: string, position?: number) =>
  new SqlRefusedError('not_read_only', message, position)

interface RelationRow {
  schema: string
  name: string
  kind: string
  system: boolean
  public_readable: boolean
  definition: string | null
}

interface DeniedRow {
  oid: string
  name: string
  schema: string
  privileged: boolean
}

/** The policy's lookups of functions, operators and types: $1, $2 and $3 of its queries. */
type Lookup = [functions: string[], operators: string[], types: string[]]

/** Nothing to look up. */
const noLookup: Lookup = [[], [], []]

function lookupOf(collected: Collected): Lookup | undefined {
  if (collected.functions.size === 0 && collected.operators.size === 0 && collected.types.size === 0)
    return undefined
  const names = [...collected.functions.keys()]
  // Quoted names keep their case and resolve only to that spelling; the lower-cased spelling is
  // checked too, so a quirk of either side can only refuse more.
  return [
    [...new Set([...names, ...names.map((name) => name.toLowerCase())])],
    [...collected.operators],
    [...collected.types],
  ]
}

/**
 * Judges the relations of one round: refuses system relations PUBLIC may not read, and adds what
 * user-defined views call to `collected`. Returns the relations those views read, not yet seen.
 */
async function judgeRelations(
  rows: readonly RelationRow[],
  seen: Set<string>,
  collected: Collected,
): Promise<string[]> {
  const next = new Set<string>()
  for (const row of rows) {
    if (row.system && !row.public_readable) {
      throw refusal(
        `${row.schema}.${row.name} is not allowed: PostgreSQL lets only privileged roles read it (it exposes server files, settings or secrets).`,
      )
    }
    if (row.definition === null) continue
    const references = await collectSqlReferences(row.definition)
    if (references === undefined)
      throw refusal(`The view ${row.schema}.${row.name} cannot be checked; query its tables instead.`)
    for (const [name] of references.functions) {
      const reason = deniedFunctionReason(name)
      if (reason !== undefined)
        throw refusal(
          `The view ${row.schema}.${row.name} calls ${name}(), which is not allowed: it ${reason}.`,
        )
    }
    merge(collected, {
      ...references,
      functions: new Map([...references.functions].map(([k]) => [k, undefined])),
    })
    for (const name of references.relations) if (!seen.has(name)) next.add(name)
  }
  for (const name of next) seen.add(name)
  return [...next]
}

/** The refusal of a function the lookup reached, saying how it was reached. */
async function functionRefusal(
  client: Queryable,
  lookup: Lookup,
  denied: DeniedRow,
  positions: ReadonlyMap<string, number | undefined>,
): Promise<SqlRefusedError> {
  // Which reference reached it, for the message: asked only when something is refused.
  const reached = await client.query<{ via: string }>(reachedThroughQuery, [...lookup, denied.oid])
  const via = reached.rows[0]?.via ?? 'call'
  const reason = denied.privileged
    ? 'PostgreSQL reserves it for privileged roles (server files, settings, other sessions)'
    : `it is volatile (it can change state), and of the volatile functions only ${volatileAllowList.slice(0, 4).join(', ')} and a few size functions are allowed`
  const through = via === 'call' ? '' : ` (reached through the ${via})`
  return refusal(
    `Function ${denied.schema}.${denied.name}()${through} is not allowed: ${reason}.`,
    via === 'call' ? (positions.get(denied.name) ?? undefined) : undefined,
  )
}

/**
 * The verdicts a Database keeps: for each set of references the policy allowed (a statement's
 * relations, functions, operators and types, whatever its text), the snapshot it judged them under
 * (`snapshotSql`: the transactions completed and still running, and the server's start time).
 *
 * Why an unchanged snapshot proves an unchanged catalog: a change to the catalog (a function made
 * volatile, a grant revoked, a view redefined) is a transaction, and when any transaction of the
 * cluster completes, committed or aborted, the snapshot changes for good (its highest completed
 * transaction moves, or one leaves the list still running). The verdict depends on nothing else
 * than the references, the catalog and the role, which is the same on every connection of a
 * Database. The server's start time makes a snapshot of one server never equal one of another
 * behind the same address (or the same server restarted).
 *
 * Also an estimate of how often a kept verdict is still current when it is next needed: on a
 * database written to between calls it almost never is, and the call's own transaction then does
 * not try it first (database.ts, `#execute`, with {@link verdictGuardSql}).
 */
export class KeptVerdicts {
  readonly #snapshots = new Map<string, string>()
  /** Moving average of "the kept verdict was still current" (1) against "it was not" (0). */
  #current = 0

  /** The snapshot the verdict for these references was made under, if one is kept. */
  get(references: SqlReferences): string | undefined {
    return this.#snapshots.get(verdictKey(references))
  }

  set(references: SqlReferences, snapshot: string): void {
    const key = verdictKey(references)
    // A bound on memory: a caller that names new objects in every statement only ever fills it.
    if (!this.#snapshots.has(key) && this.#snapshots.size >= maxKeptVerdicts) this.#snapshots.clear()
    this.#snapshots.set(key, snapshot)
  }

  /** Forgets a verdict found stale: its snapshot has changed for good. */
  forget(references: SqlReferences): void {
    this.#snapshots.delete(verdictKey(references))
  }

  /** Records whether a kept verdict was still current when it was next needed. */
  record(current: boolean): void {
    this.#current += ((current ? 1 : 0) - this.#current) / 8
  }

  /**
   * The kept snapshot for these references, when kept verdicts have mostly been current lately
   * (from 6 in a row on a quiet database; after at most 6 stale ones in a row, not until they are
   * again).
   */
  likelyCurrent(references: SqlReferences): string | undefined {
    return this.#current >= 0.5 ? this.get(references) : undefined
  }
}

/** How many sets of references a Database keeps verdicts for at most. */
const maxKeptVerdicts = 1_000

/** The references a verdict depends on, as one string: the same for statements naming the same objects. */
const verdictKeys = new WeakMap<SqlReferences, string>()

function verdictKey(references: SqlReferences): string {
  let key = verdictKeys.get(references)
  if (key === undefined) {
    // Names cannot hold a NUL: it separates them, and a record separator the four kinds.
    const sorted = (names: Iterable<string>) => [...names].sort().join('\0')
    key = [
      sorted(references.relations),
      sorted(references.functions.keys()),
      sorted(references.operators),
      sorted(references.types),
    ].join('\x1e')
    verdictKeys.set(references, key)
  }
  return key
}

/**
 * The snapshot a verdict is kept with: the transactions completed and still running, in the whole
 * cluster, and when the server started. Text only digits, `:`, `,`, `.` and `@` make up.
 */
export const snapshotSql = `pg_catalog.txid_current_snapshot()::text || '@' || extract(epoch FROM pg_catalog.pg_postmaster_start_time())::text`

/**
 * A statement that fails with division by zero (SQLSTATE 22012) unless the snapshot it runs under
 * is $1: the first statement of a call's REPEATABLE READ transaction that relies on a kept verdict
 * (database.ts). When it succeeds, no transaction has completed since the verdict was made, and
 * the caller's statement, next in the same round trip, runs under that very snapshot.
 */
export const verdictGuardSql = `SELECT 1 / (${snapshotSql} = $1::text)::int`

/**
 * Throws {@link SqlRefusedError} when the statement with these references could run a function
 * PostgreSQL reserves for privileged roles, a volatile function outside {@link volatileAllowList},
 * or read a privileged system relation.
 *
 * One statement judges the relations the statement names and the functions, operators and types
 * it names, in one round trip; only views add more: the relations they read, round by round, and
 * then what they call that the statement did not name.
 *
 * With `kept` ({@link KeptVerdicts}): references allowed before are allowed again without their
 * lookups when no transaction has completed since, anywhere in the cluster. On a database that is
 * written to between calls, the snapshot moves and every statement is judged, at the cost of one
 * comparison; `kept` records which it was.
 */
export async function assertReferencesAllowed(
  client: Queryable,
  references: SqlReferences,
  kept?: KeptVerdicts,
): Promise<void> {
  const own = emptyCollected()
  merge(own, references)
  const ownLookup = lookupOf(own)
  const fromViews = emptyCollected()
  const keptSnapshot = kept?.get(references)
  const first = await client.query<{
    snapshot: string
    relations: RelationRow[] | null
    denied: DeniedRow | null
  }>(relationsAndFunctionsQuery, [
    ...(ownLookup ?? noLookup),
    volatileAllowList,
    monitoringAllowKeys,
    [...references.relations],
    keptSnapshot ?? null,
  ])
  const row = first.rows[0]
  if (row === undefined) throw new Error('The function policy’s query returned no row.')
  if (keptSnapshot !== undefined && kept !== undefined) {
    kept.record(row.relations === null)
    if (row.relations !== null) kept.forget(references)
  }
  // Judged under this very snapshot before, and allowed.
  if (row.relations === null) return
  const seen = new Set(references.relations)
  let pending = await judgeRelations(row.relations, seen, fromViews)
  if (row.denied !== null && ownLookup !== undefined)
    throw await functionRefusal(client, ownLookup, row.denied, own.functions)
  for (let depth = 1; pending.length > 0; depth++) {
    if (depth >= maxViewDepth)
      throw refusal(
        `Views nested more than ${maxViewDepth} deep cannot be checked; query the tables instead.`,
      )
    const result = await client.query<RelationRow>(viewRelationsQuery, [pending])
    pending = await judgeRelations(result.rows, seen, fromViews)
  }
  // What the views call that the statement did not name itself (already judged above).
  for (const name of own.functions.keys()) fromViews.functions.delete(name)
  for (const name of own.operators) fromViews.operators.delete(name)
  for (const name of own.types) fromViews.types.delete(name)
  const viewLookup = lookupOf(fromViews)
  if (viewLookup !== undefined) await assertNoneDenied(client, viewLookup, fromViews.functions)
  // Allowed. Kept with the snapshot of the first lookup: a transaction that completed during the
  // later ones (views) changed the snapshot, and the next statement is judged again.
  kept?.set(references, row.snapshot)
}

/** Throws the refusal of the first function the lookup reaches that the policy refuses, if any. */
async function assertNoneDenied(
  client: Queryable,
  lookup: Lookup,
  positions: ReadonlyMap<string, number | undefined>,
): Promise<void> {
  const result = await client.query<DeniedRow>(deniedFunctionQuery, [
    ...lookup,
    volatileAllowList,
    monitoringAllowKeys,
  ])
  const denied = result.rows[0]
  if (denied !== undefined) throw await functionRefusal(client, lookup, denied, positions)
}

/**
 * Runs each of the policy's queries once with nothing to look up, so that a connection that keeps
 * them prepared has parsed and planned them all before a caller's statement needs one: the first
 * lookup, the ones for views and what they call, and the one a refusal's message asks.
 */
export async function preparePolicyQueries(client: Queryable): Promise<void> {
  await client.query(relationsAndFunctionsQuery, [
    ...noLookup,
    volatileAllowList,
    monitoringAllowKeys,
    [],
    null,
  ])
  await client.query(deniedFunctionQuery, [...noLookup, volatileAllowList, monitoringAllowKeys])
  await client.query(viewRelationsQuery, [[]])
  await client.query(reachedThroughQuery, [...noLookup, '0'])
}

/** The relations named by the array parameter `param`, with what the policy needs of each. */
function relationsQuery(param: string): string {
  return `SELECT n.nspname AS schema, c.relname AS name, c.relkind::text AS kind,
              n.nspname IN ('pg_catalog', 'information_schema') AS system,
              pg_catalog.has_table_privilege('public', c.oid, 'SELECT') AS public_readable,
              CASE WHEN c.relkind = 'v' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                   THEN pg_catalog.pg_get_viewdef(c.oid) END AS definition
         FROM pg_catalog.pg_class c
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE cardinality(${param}::text[]) > 0 AND c.relname = ANY(${param}::text[])
          AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`
}

/** The relations views read, round by round. */
const viewRelationsQuery = relationsQuery('$1')

/**
 * The first function the references reach that the policy refuses (privileged first), or none.
 * $1 function names, $2 operator names, $3 type names, $4 {@link volatileAllowList}, $5
 * {@link monitoringAllowKeys}.
 *
 * Planned once and run for every statement that names something, so it is written for cost: each
 * kind of reference is looked up only when there is one (a one-time filter on the array's length),
 * and the reached functions are collected as bare OIDs, without duplicates, before each is looked
 * up in pg_proc (the 67 operators named `=` share a handful of estimator functions). How a function
 * was reached is asked afterwards, only for the one refused ({@link reachedThroughQuery}). A
 * function whose ACL is null has the built-in default, EXECUTE for PUBLIC: only the others are
 * asked for the privilege.
 */
const deniedFunctionQuery = `WITH reached AS (
       SELECT p.oid FROM pg_catalog.pg_proc p
        WHERE cardinality($1::text[]) > 0 AND p.proname = ANY($1::text[])
       UNION
       SELECT f.fn FROM pg_catalog.pg_aggregate a
         JOIN pg_catalog.pg_proc p ON p.oid = a.aggfnoid
        CROSS JOIN LATERAL (VALUES (a.aggtransfn), (a.aggfinalfn), (a.aggcombinefn), (a.aggserialfn),
              (a.aggdeserialfn), (a.aggmtransfn), (a.aggminvtransfn), (a.aggmfinalfn)) AS f(fn)
        WHERE cardinality($1::text[]) > 0 AND p.proname = ANY($1::text[])
       UNION
       SELECT f.fn FROM pg_catalog.pg_operator o
        CROSS JOIN LATERAL (VALUES (o.oprcode), (o.oprrest), (o.oprjoin)) AS f(fn)
        WHERE cardinality($2::text[]) > 0 AND o.oprname = ANY($2::text[])
       UNION
       SELECT c.castfunc FROM pg_catalog.pg_cast c
         JOIN pg_catalog.pg_type t ON t.oid = c.casttarget
        WHERE cardinality($3::text[]) > 0 AND t.typname = ANY($3::text[])
       UNION
       SELECT t.typinput FROM pg_catalog.pg_type t
        WHERE cardinality($3::text[]) > 0 AND t.typname = ANY($3::text[])
     )
     SELECT p.oid::text AS oid, p.proname AS name, n.nspname AS schema,
            NOT pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE') AS privileged
       FROM reached r
       JOIN pg_catalog.pg_proc p ON p.oid = r.oid
       JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
      WHERE (p.proacl IS NOT NULL AND NOT pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE'))
         OR (p.provolatile = 'v' AND NOT (n.nspname = 'pg_catalog' AND p.proname = ANY($4::text[]))
             AND NOT EXISTS (
               SELECT FROM pg_catalog.pg_depend d
                 JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
                WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
                  AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e'
                  AND e.extnamespace = p.pronamespace
                  AND e.extname || ' ' || e.extversion || ' ' || p.proname || '('
                      || pg_catalog.oidvectortypes(p.proargtypes) || ')' = ANY($5::text[])))
      ORDER BY 4 DESC, 2
      LIMIT 1`

/**
 * How the references ($1 functions, $2 operators, $3 types, as in {@link deniedFunctionQuery})
 * reached the function $4: called by name first, then through an aggregate, an operator, a cast or
 * a type's input.
 */
const reachedThroughQuery = `SELECT via FROM (
       SELECT 1 AS rank, 'call' AS via FROM pg_catalog.pg_proc p
        WHERE p.oid = $4::oid AND p.proname = ANY($1::text[])
       UNION ALL
       SELECT 2, 'aggregate ' || p.proname FROM pg_catalog.pg_aggregate a
         JOIN pg_catalog.pg_proc p ON p.oid = a.aggfnoid
        WHERE p.proname = ANY($1::text[]) AND $4::oid IN (a.aggtransfn, a.aggfinalfn, a.aggcombinefn,
              a.aggserialfn, a.aggdeserialfn, a.aggmtransfn, a.aggminvtransfn, a.aggmfinalfn)
       UNION ALL
       SELECT 3, 'operator ' || o.oprname FROM pg_catalog.pg_operator o
        WHERE o.oprname = ANY($2::text[]) AND $4::oid IN (o.oprcode, o.oprrest, o.oprjoin)
       UNION ALL
       SELECT 4, 'cast to ' || t.typname FROM pg_catalog.pg_cast c
         JOIN pg_catalog.pg_type t ON t.oid = c.casttarget
        WHERE t.typname = ANY($3::text[]) AND c.castfunc = $4::oid
       UNION ALL
       SELECT 5, 'input of type ' || t.typname FROM pg_catalog.pg_type t
        WHERE t.typname = ANY($3::text[]) AND t.typinput = $4::oid
     ) AS ways
     ORDER BY rank, via
     LIMIT 1`

/**
 * The statement's own relations ($6, as {@link relationsQuery} returns them) and the first function
 * its own references reach that the policy refuses ($1–$5, {@link deniedFunctionQuery}): one round
 * trip where there were two. With it, the snapshot the lookups ran under ({@link snapshotSql});
 * where that is still $7, the snapshot a kept verdict was made under, nothing has completed since
 * and the lookups are not run (both results are null).
 */
const relationsAndFunctionsQuery = `WITH now AS (SELECT ${snapshotSql} AS snapshot)
     SELECT now.snapshot,
       CASE WHEN now.snapshot = $7::text THEN NULL ELSE
         (SELECT coalesce(pg_catalog.json_agg(r), '[]') FROM (${relationsQuery('$6')}) AS r) END AS relations,
       CASE WHEN now.snapshot = $7::text THEN NULL ELSE
         (SELECT pg_catalog.row_to_json(d) FROM (${deniedFunctionQuery}) AS d) END AS denied
       FROM now`
