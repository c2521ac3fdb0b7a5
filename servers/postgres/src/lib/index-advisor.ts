/**
 * Index advice: candidate indexes from the predicates, joins and orderings of one query or of the
 * workload in pg_stat_statements, each costed with hypopg against every query it could serve, ranked
 * by the cost it saves (weighted by calls) and then by its size. The server never creates an index:
 * the answer is the CREATE INDEX CONCURRENTLY to run.
 *
 * Runs in one read-only transaction: every query is gated and judged like explain's (queries of the
 * workload are someone else's SQL too), candidates are built from catalog names only, and
 * hypothetical indexes are dropped after each costing and reset at the end (hypothetical.ts).
 */
import type { PoolClient } from 'pg'
import { type InstalledExtension, requireExtension } from './extensions.js'
import { assertReferencesAllowed } from './function-policy.js'
import { type GatedQuery, gateQuery, planCost, resetHypotheticalIndexes } from './hypothetical.js'
import { type ColumnUse, extractColumnUses } from './query-shape.js'
import { topQueries } from './workload.js'

type Queryable = Pick<PoolClient, 'query'>

/** Bounds on the work of one call. */
const maxQueries = 20
const maxCandidates = 30
/** A candidate must cut some query's cost by at least this fraction to be recommended. */
const minImprovement = 0.1

export interface IndexRecommendation {
  /** `schema.table`, quoted where needed. */
  readonly table: string
  readonly columns: string[]
  /** The statement to run (the server never runs it). */
  readonly definition: string
  readonly estimatedBytes: number
  /** Summed over the queries it helps, weighted by calls. */
  readonly costBefore: number
  readonly costAfter: number
  /** 1 − after / before. */
  readonly improvement: number
  /** Queries whose plan uses it. */
  readonly queries: number
}

export interface IndexAdvice {
  readonly recommendations: IndexRecommendation[]
  readonly analysedQueries: number
  readonly skipped: Array<{ readonly query: string; readonly reason: string }>
  readonly candidatesCosted: number
}

export type AdviceSource =
  | { readonly sql: string; readonly params?: readonly unknown[] }
  | { readonly workload: true; readonly limit?: number }

const quoted = (name: string) => (/^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`)

interface Table {
  readonly oid: number
  readonly label: string
  readonly columns: ReadonlySet<string>
  /** Leading column lists of the existing valid indexes. */
  readonly indexes: string[][]
}

interface Costed {
  readonly query: GatedQuery
  readonly params: readonly unknown[] | undefined
  readonly weight: number
  readonly cost: number
  readonly uses: ColumnUse[]
}

async function loadTables(client: Queryable, names: ReadonlySet<string>): Promise<Map<string, Table>> {
  const tables = new Map<string, Table>()
  for (const name of names) {
    const [schema, relation] = name.includes('\u0000') ? name.split('\u0000') : [undefined, name]
    const result = await client.query<{
      oid: number
      schema: string
      name: string
      columns: string[]
      indexes: string[][] | null
    }>(
      `SELECT c.oid::int8 AS oid, n.nspname AS schema, c.relname AS name,
              ARRAY(SELECT a.attname::text FROM pg_catalog.pg_attribute a
                     WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
              (SELECT pg_catalog.jsonb_agg(ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, ord)
                        JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum ORDER BY k.ord))
                 FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid AND i.indisvalid) AS indexes
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE c.oid = pg_catalog.to_regclass(CASE WHEN $1::text IS NULL THEN pg_catalog.quote_ident($2)
                ELSE pg_catalog.quote_ident($1) || '.' || pg_catalog.quote_ident($2) END)
          AND c.relkind IN ('r', 'p', 'm')
          AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'`,
      [schema ?? null, relation],
    )
    const row = result.rows[0]
    if (row === undefined) continue
    tables.set(name, {
      oid: Number(row.oid),
      label: `${quoted(row.schema)}.${quoted(row.name)}`,
      columns: new Set(row.columns),
      indexes: row.indexes ?? [],
    })
  }
  return tables
}

interface Candidate {
  readonly table: Table
  readonly columns: string[]
}

/** Candidate column lists for one table of one query: equalities first, then a range or the order. */
function candidatesFor(uses: readonly ColumnUse[]): string[][] {
  const eq = [...new Set(uses.filter((use) => use.kind === 'equality').map((use) => use.column))]
  const range = [...new Set(uses.filter((use) => use.kind === 'range').map((use) => use.column))]
  const order = [...new Set(uses.filter((use) => use.kind === 'order').map((use) => use.column))]
  const lists: string[][] = []
  for (const column of [...eq, ...range]) lists.push([column])
  if (eq.length > 1) lists.push(eq.slice(0, 3))
  for (const column of range.slice(0, 1)) if (eq.length) lists.push([...eq.slice(0, 2), column])
  if (order.length)
    lists.push([...eq.slice(0, 2), ...order.filter((column) => !eq.includes(column))].slice(0, 3))
  return lists
}

const coveredBy = (existing: string[][], columns: string[]) =>
  existing.some((index) => columns.every((column, position) => index[position] === column))

type Input = { query: GatedQuery; params: readonly unknown[] | undefined; weight: number }
type Skipped = Array<{ query: string; reason: string }>

/** The reads of the workload, costliest first, gated; what the gate refuses is reported as skipped. */
async function workloadInputs(client: Queryable, wanted: number, skipped: Skipped): Promise<Input[]> {
  const inputs: Input[] = []
  for (const statement of await topQueries(client, { orderBy: 'total_time', limit: 100 })) {
    if (inputs.length >= wanted) break
    // Writes, utility statements and this server's own EXPLAINs are not the workload's reads.
    if (!/^\s*(select|with|table|values)\b/i.test(statement.query)) continue
    try {
      inputs.push({ query: await gateQuery(statement.query), params: undefined, weight: statement.calls })
    } catch (error) {
      skipped.push({ query: statement.query.slice(0, 200), reason: (error as Error).message })
    }
  }
  return inputs
}

/**
 * Each input judged by the function policy and planned once, without new indexes. With `strict`
 * (one given query) a failure is the caller's; otherwise the statement is skipped and the
 * savepoint keeps the transaction usable for the others.
 */
async function baselines(client: Queryable, inputs: Input[], strict: boolean, skipped: Skipped) {
  const costed: Costed[] = []
  for (const input of inputs) {
    try {
      await assertReferencesAllowed(client, input.query.references)
      await client.query('SAVEPOINT keel_advice')
      try {
        const baseline = await planCost(client, input.query, input.params)
        costed.push({ ...input, cost: baseline.totalCost, uses: await extractColumnUses(input.query.sql) })
        await client.query('RELEASE SAVEPOINT keel_advice')
      } catch (error) {
        await client.query('ROLLBACK TO SAVEPOINT keel_advice')
        throw error
      }
    } catch (error) {
      if (strict) throw error
      skipped.push({ query: input.query.sql.slice(0, 200), reason: (error as Error).message })
    }
  }
  return costed
}

/** Candidate indexes from every costed query, on indexable user tables, not already indexed. */
function collectCandidates(costed: readonly Costed[], tables: ReadonlyMap<string, Table>): Candidate[] {
  const candidates = new Map<string, Candidate>()
  for (const entry of costed) {
    const byTable = new Map<string, ColumnUse[]>()
    for (const use of entry.uses) byTable.set(use.table, [...(byTable.get(use.table) ?? []), use])
    for (const [name, uses] of byTable) {
      const table = tables.get(name)
      if (table === undefined) continue
      const known = uses.filter((use) => table.columns.has(use.column))
      for (const columns of candidatesFor(known)) {
        if (coveredBy(table.indexes, columns)) continue
        const key = `${table.oid}:${columns.join(',')}`
        if (!candidates.has(key) && candidates.size < maxCandidates) candidates.set(key, { table, columns })
      }
    }
  }
  return [...candidates.values()]
}

/**
 * Creates one candidate in hypopg, plans every query on its table again, and drops it. Undefined
 * unless some query's plan uses it and costs at least {@link minImprovement} less.
 */
async function costCandidate(
  client: Queryable,
  hypopg: InstalledExtension,
  candidate: Candidate,
  costed: readonly Costed[],
  tables: ReadonlyMap<string, Table>,
): Promise<IndexRecommendation | undefined> {
  const body = `${candidate.table.label} (${candidate.columns.map(quoted).join(', ')})`
  const created = await client.query<{ indexrelid: number; name: string; bytes: string }>(
    `SELECT h.indexrelid::int8 AS indexrelid, h.indexname AS name,
            ${hypopg.schema}.hypopg_relation_size(h.indexrelid)::text AS bytes
       FROM ${hypopg.schema}.hypopg_create_index($1) AS h`,
    [`CREATE INDEX ON ${body}`],
  )
  const index = created.rows[0]
  if (index === undefined) return undefined
  let before = 0
  let after = 0
  let helped = 0
  let best = 0
  try {
    for (const entry of costed) {
      if (!entry.uses.some((use) => tables.get(use.table)?.oid === candidate.table.oid)) continue
      const plan = await planCost(client, entry.query, entry.params)
      if (!plan.indexes.includes(index.name) || plan.totalCost >= entry.cost) continue
      helped++
      before += entry.weight * entry.cost
      after += entry.weight * plan.totalCost
      best = Math.max(best, 1 - plan.totalCost / entry.cost)
    }
  } finally {
    await client.query(`SELECT ${hypopg.schema}.hypopg_drop_index($1)`, [index.indexrelid])
  }
  if (helped === 0 || best < minImprovement) return undefined
  return {
    table: candidate.table.label,
    columns: candidate.columns,
    definition: `CREATE INDEX CONCURRENTLY ON ${body}`,
    estimatedBytes: Number(index.bytes),
    costBefore: before,
    costAfter: after,
    improvement: before > 0 ? 1 - after / before : 0,
    queries: helped,
  }
}

/** Indexes worth creating for `source`, best first; see the module comment. */
export async function recommendIndexes(
  run: <T>(work: (client: PoolClient) => Promise<T>) => Promise<T>,
  source: AdviceSource,
  limit = 5,
): Promise<IndexAdvice> {
  const given = 'sql' in source ? await gateQuery(source.sql) : undefined
  return run(async (client) => {
    const hypopg = await requireExtension(client, 'hypopg')
    const skipped: Skipped = []
    const inputs =
      given !== undefined && 'sql' in source
        ? [{ query: given, params: source.params, weight: 1 }]
        : await workloadInputs(
            client,
            Math.min(('limit' in source ? source.limit : undefined) ?? maxQueries, maxQueries),
            skipped,
          )
    const costed = await baselines(client, inputs, given !== undefined, skipped)
    const tables = await loadTables(
      client,
      new Set(costed.flatMap((entry) => entry.uses.map((use) => use.table))),
    )
    const candidates = collectCandidates(costed, tables)
    const recommendations: IndexRecommendation[] = []
    try {
      for (const candidate of candidates) {
        const recommendation = await costCandidate(client, hypopg, candidate, costed, tables)
        if (recommendation !== undefined) recommendations.push(recommendation)
      }
    } finally {
      await resetHypotheticalIndexes(client, hypopg).catch(() => undefined)
    }
    return {
      recommendations: rank(recommendations).slice(0, limit),
      analysedQueries: costed.length,
      skipped,
      candidatesCosted: candidates.length,
    }
  })
}

/**
 * Best first: most cost saved, then smallest. A wider index that saves no more than 5 % over a
 * narrower one on the same table (its prefix) is left out, and so is a narrower one that a
 * better-ranked wider index already serves.
 */
function rank(recommendations: IndexRecommendation[]): IndexRecommendation[] {
  const saved = (entry: IndexRecommendation) => entry.costBefore - entry.costAfter
  const sorted = [...recommendations].sort(
    (a, b) => saved(b) - saved(a) || a.estimatedBytes - b.estimatedBytes,
  )
  const kept: IndexRecommendation[] = []
  const isPrefix = (short: string[], long: string[]) => short.every((column, i) => long[i] === column)
  for (const entry of sorted) {
    const shadowed = kept.some(
      (other) =>
        other.table === entry.table &&
        (isPrefix(entry.columns, other.columns) ||
          (isPrefix(other.columns, entry.columns) && saved(entry) <= saved(other) * 1.05)),
    )
    if (!shadowed) kept.push(entry)
  }
  return kept
}
