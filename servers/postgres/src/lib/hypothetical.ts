/**
 * Plans with hypothetical indexes (hypopg), inside the call's own read-only transaction.
 *
 * - An index definition is parsed with PostgreSQL's parser and accepted only as exactly one
 *   CREATE INDEX statement; the functions, operators and types its expressions and predicate use
 *   are judged by the function policy like a query's.
 * - The query is gated like explain's (one read-only query, its references judged).
 * - hypopg keeps hypothetical indexes in backend memory, outside transactions: they are dropped
 *   with hypopg_reset() at the end of the work, and again by the session reset after every call
 *   (session.ts), which runs even when the work failed. Nothing survives the call.
 * - Queries with `$n` placeholders and no values (pg_stat_statements' normalised texts) are
 *   planned generically: PREPARE, then EXPLAIN EXECUTE under plan_cache_mode =
 *   force_generic_plan, so the values passed (NULLs) never shape the plan. The prepared
 *   statement is deallocated at once, and DEALLOCATE ALL runs in the reset anyway.
 */
import type { PoolClient } from 'pg'
import { SqlRefusedError } from './errors.js'
import { type InstalledExtension, requireExtension } from './extensions.js'
import { assertReferencesAllowed } from './function-policy.js'
import {
  checkReadOnlySql,
  collectSqlReferences,
  deniedFunctionReason,
  loadSqlParser,
  type SqlReferences,
} from './sql-guard.js'

type Queryable = Pick<PoolClient, 'query'>

/** Most hypothetical indexes one call may create. */
export const maxHypotheticalIndexes = 10

export interface ParsedIndex {
  /** The definition as given (hypopg parses it again itself). */
  readonly definition: string
  readonly references: SqlReferences
}

/** A query judged by the gate, ready to be planned. */
export interface GatedQuery {
  readonly sql: string
  readonly references: SqlReferences
  /** Highest `$n` the query uses. */
  readonly parameterCount: number
}

export interface PlanCost {
  readonly totalCost: number
  readonly plan: Record<string, unknown>
  /** Index names the plan scans. */
  readonly indexes: string[]
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * Accepts exactly one CREATE INDEX statement (CONCURRENTLY, UNIQUE, USING, INCLUDE and WHERE
 * allowed), and returns the names its expressions reach, for the function policy.
 */
export async function parseIndexDefinition(definition: string): Promise<ParsedIndex> {
  const { parseSync } = await loadSqlParser()
  let tree: { stmts?: Array<{ stmt?: Record<string, unknown> }> }
  try {
    tree = parseSync(definition) as typeof tree
  } catch (error) {
    throw new SqlRefusedError(
      'syntax_error',
      `Hypothetical index ${JSON.stringify(definition.slice(0, 200))}: ${error instanceof Error ? error.message : String(error)}.`,
    )
  }
  const statements = tree.stmts ?? []
  const statement = statements[0]?.stmt
  if (statements.length !== 1 || !isRecord(statement) || !isRecord(statement.IndexStmt)) {
    throw new SqlRefusedError(
      'not_read_only',
      `Hypothetical indexes must each be one CREATE INDEX statement; got ${JSON.stringify(definition.slice(0, 200))}.`,
    )
  }
  if (statement.IndexStmt.tableSpace !== undefined) {
    throw new SqlRefusedError('not_read_only', 'A hypothetical index takes no TABLESPACE.')
  }
  const collected = await collectSqlReferences(definition)
  if (collected === undefined)
    throw new SqlRefusedError('syntax_error', 'The index definition cannot be read.')
  // The indexed table is the statement's `relation` (not a RangeVar node): judged like a read of it.
  const relation = statement.IndexStmt.relation
  const table = isRecord(relation) && typeof relation.relname === 'string' ? relation.relname : undefined
  const references: SqlReferences = {
    ...collected,
    relations: new Set([...collected.relations, ...(table === undefined ? [] : [table])]),
  }
  for (const [name] of references.functions) {
    const reason = deniedFunctionReason(name)
    if (reason !== undefined)
      throw new SqlRefusedError('not_read_only', `Function ${name}() is not allowed: it ${reason}.`)
  }
  return { definition, references }
}

/** Gates a query for planning: one read-only SELECT, its references for the function policy. */
export async function gateQuery(sql: string): Promise<GatedQuery> {
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
  // The composed EXPLAIN must still parse as one EXPLAIN of a query (nothing appended to it).
  const composed = await checkReadOnlySql(`EXPLAIN (FORMAT JSON) ${sql}`)
  if (!composed.ok || composed.statement !== 'explain' || composed.analyze) {
    throw new SqlRefusedError('not_read_only', 'This query cannot be explained.')
  }
  let parameterCount = 0
  for (const match of sql.matchAll(/\$(\d+)/g)) parameterCount = Math.max(parameterCount, Number(match[1]))
  if (parameterCount > 0) {
    // Planned generically (planCost): the composed PREPARE must be one PREPARE of this query.
    const { parseSync } = await loadSqlParser()
    const tree = parseSync(`PREPARE keel_hypothetical_plan AS ${sql}`) as {
      stmts?: Array<{ stmt?: Record<string, unknown> }>
    }
    const prepare = tree.stmts?.length === 1 ? tree.stmts[0]?.stmt?.PrepareStmt : undefined
    if (!isRecord(prepare) || !isRecord(prepare.query) || !isRecord(prepare.query.SelectStmt)) {
      throw new SqlRefusedError('not_read_only', 'This query cannot be planned.')
    }
  }
  return { sql, references: composed.references, parameterCount }
}

function collectIndexNames(node: unknown, into: Set<string>): void {
  if (!isRecord(node)) return
  if (typeof node['Index Name'] === 'string') into.add(node['Index Name'])
  for (const child of Array.isArray(node.Plans) ? node.Plans : []) collectIndexNames(child, into)
}

/**
 * Plans a gated query on `client` (inside the call's transaction; the references are judged by
 * the caller once). With `params` the values are bound; without, a query with placeholders is
 * planned generically.
 */
export async function planCost(
  client: Queryable,
  query: GatedQuery,
  params: readonly unknown[] | undefined,
): Promise<PlanCost> {
  let raw: unknown
  if (query.parameterCount > 0 && (params === undefined || params.length === 0)) {
    // The query text was gated as exactly one SELECT; the extended protocol refuses a second
    // statement all the same.
    await client.query({
      text: `PREPARE keel_hypothetical_plan AS ${query.sql}`,
      queryMode: 'extended',
    } as never)
    try {
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan')
      const nulls = Array.from({ length: query.parameterCount }, () => 'NULL').join(', ')
      raw = (await client.query(`EXPLAIN (FORMAT JSON) EXECUTE keel_hypothetical_plan(${nulls})`)).rows[0]
    } finally {
      await client.query('DEALLOCATE keel_hypothetical_plan').catch(() => undefined)
    }
  } else {
    // Bound values: the extended protocol, which refuses a second statement by itself.
    raw = (await client.query({ text: `EXPLAIN (FORMAT JSON) ${query.sql}`, values: [...(params ?? [])] }))
      .rows[0]
  }
  const plans = isRecord(raw) ? raw['QUERY PLAN'] : undefined
  const plan = Array.isArray(plans) && isRecord(plans[0]) ? plans[0] : undefined
  if (plan === undefined || !isRecord(plan.Plan)) throw new Error('EXPLAIN returned no plan')
  const indexes = new Set<string>()
  collectIndexNames(plan.Plan, indexes)
  return { totalCost: Number(plan.Plan['Total Cost']), plan, indexes: [...indexes] }
}

export interface HypotheticalIndex {
  readonly definition: string
  /** hypopg's name for it, as plans show it (`<13556>btree_t_c`). */
  readonly name: string
  readonly estimatedBytes: number
}

/** Creates the indexes in hypopg (this backend only) and returns their names and sizes. */
export async function createHypotheticalIndexes(
  client: Queryable,
  hypopg: InstalledExtension,
  indexes: readonly ParsedIndex[],
): Promise<HypotheticalIndex[]> {
  const created: HypotheticalIndex[] = []
  for (const index of indexes) {
    const result = await client.query<{ name: string; bytes: string }>(
      `SELECT h.indexname AS name, ${hypopg.schema}.hypopg_relation_size(h.indexrelid)::text AS bytes
         FROM ${hypopg.schema}.hypopg_create_index($1) AS h`,
      [index.definition],
    )
    const row = result.rows[0]
    if (row === undefined) throw new Error(`hypopg created no index for ${JSON.stringify(index.definition)}`)
    created.push({ definition: index.definition, name: row.name, estimatedBytes: Number(row.bytes) })
  }
  return created
}

/** Drops every hypothetical index of this backend. */
export async function resetHypotheticalIndexes(client: Queryable, hypopg: InstalledExtension): Promise<void> {
  await client.query(`SELECT ${hypopg.schema}.hypopg_reset()`)
}

export interface HypotheticalExplain {
  readonly before: PlanCost
  readonly after: PlanCost
  readonly indexes: ReadonlyArray<HypotheticalIndex & { readonly used: boolean }>
}

/**
 * The plan of `sql` without and with the hypothetical `definitions`, on one connection in one
 * read-only transaction (see the module comment). `run` is the Database's transaction runner.
 */
export async function explainWithHypotheticalIndexes(
  run: <T>(work: (client: PoolClient) => Promise<T>) => Promise<T>,
  sql: string,
  definitions: readonly string[],
  params: readonly unknown[] | undefined,
): Promise<HypotheticalExplain> {
  if (definitions.length === 0 || definitions.length > maxHypotheticalIndexes) {
    throw new SqlRefusedError(
      'not_read_only',
      `Give 1–${maxHypotheticalIndexes} hypothetical indexes; got ${definitions.length}.`,
    )
  }
  const query = await gateQuery(sql)
  const parsed = await Promise.all(definitions.map((definition) => parseIndexDefinition(definition)))
  return run(async (client) => {
    await assertReferencesAllowed(client, query.references)
    for (const index of parsed) await assertReferencesAllowed(client, index.references)
    const hypopg = await requireExtension(client, 'hypopg')
    const before = await planCost(client, query, params)
    try {
      const created = await createHypotheticalIndexes(client, hypopg, parsed)
      const after = await planCost(client, query, params)
      return {
        before,
        after,
        indexes: created.map((index) => ({ ...index, used: after.indexes.includes(index.name) })),
      }
    } finally {
      await resetHypotheticalIndexes(client, hypopg).catch(() => undefined)
    }
  })
}
