/**
 * Database health: each check is one fixed, server-written query over the statistics views and the
 * catalog, turned into findings with the numbers behind them and what to do. Nothing is changed:
 * the actions are statements for a person to run.
 */
import type { PoolClient } from 'pg'

type Queryable = Pick<PoolClient, 'query'>

export type HealthCheck =
  | 'invalid_indexes'
  | 'duplicate_indexes'
  | 'unused_indexes'
  | 'bloated_indexes'
  | 'vacuum'
  | 'wraparound'
  | 'sequences'
  | 'connections'
  | 'cache_hit_ratio'
  | 'replication'
  | 'constraints'

export const healthChecks: readonly HealthCheck[] = [
  'invalid_indexes',
  'duplicate_indexes',
  'unused_indexes',
  'bloated_indexes',
  'vacuum',
  'wraparound',
  'sequences',
  'connections',
  'cache_hit_ratio',
  'replication',
  'constraints',
]

export interface HealthFinding {
  readonly check: HealthCheck
  readonly severity: 'critical' | 'warning' | 'info'
  /** The object concerned (`schema.index`), when there is one. */
  readonly object?: string
  readonly message: string
  readonly action: string
}

export interface HealthReport {
  readonly findings: HealthFinding[]
  /** Checks run, with how many findings each. */
  readonly checks: Record<string, number>
}

type Row = Record<string, unknown>
type Check = (client: Queryable) => Promise<HealthFinding[]>

/** Findings per check at most, biggest first. */
const maxFindings = 20

const num = (value: unknown) => Number(value ?? 0)
const percent = (value: number) => `${(value * 100).toFixed(1)} %`
const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`
const userSchemas = `n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'`

async function rows(client: Queryable, sql: string): Promise<Row[]> {
  return (await client.query(sql)).rows as Row[]
}

const invalidIndexes: Check = async (client) =>
  (
    await rows(
      client,
      `SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname) AS name,
              pg_catalog.pg_relation_size(c.oid) AS bytes, pg_catalog.pg_get_indexdef(c.oid) AS definition
         FROM pg_catalog.pg_index i
         JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE NOT i.indisvalid AND ${userSchemas}
        ORDER BY 1 LIMIT ${maxFindings}`,
    )
  ).map((row) => ({
    check: 'invalid_indexes',
    severity: 'warning',
    object: String(row.name),
    message: `Index ${row.name} is INVALID (a failed CREATE INDEX CONCURRENTLY or REINDEX): writes still maintain it (${megabytes(num(row.bytes))}), queries never use it.`,
    action: `REINDEX INDEX CONCURRENTLY ${row.name}; or DROP INDEX CONCURRENTLY ${row.name}; and create it again.`,
  }))

const duplicateIndexes: Check = async (client) =>
  (
    await rows(
      client,
      `SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname) AS name,
              pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(k.relname) AS kept,
              pg_catalog.pg_relation_size(c.oid) AS bytes, s.idx_scan AS scans
         FROM pg_catalog.pg_index i
         JOIN pg_catalog.pg_index j ON j.indrelid = i.indrelid AND j.indexrelid <> i.indexrelid
              AND j.indkey::text = i.indkey::text AND j.indclass::text = i.indclass::text
              AND j.indcollation::text = i.indcollation::text AND j.indoption::text = i.indoption::text
              AND coalesce(pg_catalog.pg_get_expr(j.indexprs, j.indrelid), '') = coalesce(pg_catalog.pg_get_expr(i.indexprs, i.indrelid), '')
              AND coalesce(pg_catalog.pg_get_expr(j.indpred, j.indrelid), '') = coalesce(pg_catalog.pg_get_expr(i.indpred, i.indrelid), '')
         JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
         JOIN pg_catalog.pg_class k ON k.oid = j.indexrelid
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
         LEFT JOIN pg_catalog.pg_stat_user_indexes s ON s.indexrelid = i.indexrelid
        WHERE i.indisvalid AND j.indisvalid AND c.relam = k.relam AND ${userSchemas}
          -- Of each pair, report the one to drop: never the one behind a constraint; else the later one.
          AND NOT (i.indisprimary OR EXISTS (SELECT FROM pg_catalog.pg_constraint x WHERE x.conindid = i.indexrelid))
          AND ((j.indisprimary OR EXISTS (SELECT FROM pg_catalog.pg_constraint x WHERE x.conindid = j.indexrelid))
               OR i.indexrelid > j.indexrelid)
        ORDER BY 3 DESC, 1 LIMIT ${maxFindings}`,
    )
  ).map((row) => ({
    check: 'duplicate_indexes',
    severity: 'warning',
    object: String(row.name),
    message: `Index ${row.name} duplicates ${row.kept} (same columns, operator classes and predicate): ${megabytes(num(row.bytes))}, ${num(row.scans)} scans since the statistics were reset.`,
    action: `DROP INDEX CONCURRENTLY ${row.name};`,
  }))

const unusedIndexes: Check = async (client) =>
  (
    await rows(
      client,
      `SELECT pg_catalog.quote_ident(s.schemaname) || '.' || pg_catalog.quote_ident(s.indexrelname) AS name,
              pg_catalog.pg_relation_size(s.indexrelid) AS bytes,
              (SELECT stats_reset FROM pg_catalog.pg_stat_database WHERE datname = pg_catalog.current_database())::text AS since
         FROM pg_catalog.pg_stat_user_indexes s
         JOIN pg_catalog.pg_index i ON i.indexrelid = s.indexrelid
        WHERE s.idx_scan = 0 AND i.indisvalid AND NOT i.indisunique AND NOT i.indisprimary
          AND NOT EXISTS (SELECT FROM pg_catalog.pg_constraint x WHERE x.conindid = s.indexrelid)
        ORDER BY 2 DESC, 1 LIMIT ${maxFindings}`,
    )
  ).map((row) => ({
    check: 'unused_indexes',
    severity: 'info',
    object: String(row.name),
    message: `Index ${row.name} has never been scanned${row.since ? ` since ${row.since}` : ' since the statistics began'} (${megabytes(num(row.bytes))}).`,
    action: `If replicas do not use it either and the statistics cover a full business cycle: DROP INDEX CONCURRENTLY ${row.name};`,
  }))

/** B-tree indexes at least twice the size their rows need (estimated from pg_stats widths). */
const bloatedIndexes: Check = async (client) =>
  (
    await rows(
      client,
      `WITH ix AS (
         SELECT c.oid, pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname) AS name,
                c.relpages::float8 AS pages, t.reltuples::float8 AS tuples,
                (SELECT sum(coalesce(st.avg_width, 8)) FROM unnest(i.indkey::int2[]) k(attnum)
                   JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                   LEFT JOIN pg_catalog.pg_stats st ON st.schemaname = tn.nspname AND st.tablename = t.relname
                        AND st.attname = a.attname) AS width
           FROM pg_catalog.pg_index i
           JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
           JOIN pg_catalog.pg_class t ON t.oid = i.indrelid
           JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace
           JOIN pg_catalog.pg_am am ON am.oid = c.relam
          WHERE am.amname = 'btree' AND i.indexprs IS NULL AND c.relpages > 128 AND t.reltuples > 0 AND ${userSchemas}
       )
       SELECT name, pages * 8192 AS bytes,
              pages / GREATEST(1, ceil(tuples * (width + 16) / (8192 * 0.9))) AS ratio
         FROM ix WHERE width IS NOT NULL
          AND pages > 2 * ceil(tuples * (width + 16) / (8192 * 0.9))
        ORDER BY bytes DESC LIMIT ${maxFindings}`,
    )
  ).map((row) => ({
    check: 'bloated_indexes',
    severity: 'warning',
    object: String(row.name),
    message: `Index ${row.name} is ${megabytes(num(row.bytes))}, about ${num(row.ratio).toFixed(1)}× what its rows need (estimate).`,
    action: `REINDEX INDEX CONCURRENTLY ${row.name};`,
  }))

const vacuum: Check = async (client) =>
  (
    await rows(
      client,
      `SELECT pg_catalog.quote_ident(s.schemaname) || '.' || pg_catalog.quote_ident(s.relname) AS name,
              s.n_dead_tup AS dead, s.n_live_tup AS live,
              pg_catalog.current_setting('autovacuum_vacuum_threshold')::float8
                + pg_catalog.current_setting('autovacuum_vacuum_scale_factor')::float8 * c.reltuples AS threshold,
              greatest(s.last_vacuum, s.last_autovacuum)::text AS last
         FROM pg_catalog.pg_stat_user_tables s JOIN pg_catalog.pg_class c ON c.oid = s.relid
        WHERE s.n_dead_tup > pg_catalog.current_setting('autovacuum_vacuum_threshold')::float8
                + pg_catalog.current_setting('autovacuum_vacuum_scale_factor')::float8 * greatest(c.reltuples, 0)
        ORDER BY s.n_dead_tup DESC LIMIT ${maxFindings}`,
    )
  ).map((row) => ({
    check: 'vacuum',
    severity: num(row.dead) > num(row.live) ? 'warning' : 'info',
    object: String(row.name),
    message: `Table ${row.name} has ${num(row.dead)} dead rows (${num(row.live)} live; autovacuum starts at ${Math.round(num(row.threshold))}), last vacuumed ${row.last ?? 'never'}.`,
    action: `VACUUM (ANALYZE) ${row.name}; if it keeps recurring, check for long transactions and tune autovacuum for this table.`,
  }))

const wraparound: Check = async (client) => {
  const [row] = await rows(
    client,
    `SELECT pg_catalog.age(datfrozenxid)::float8 AS age,
            pg_catalog.current_setting('autovacuum_freeze_max_age')::float8 AS freeze_max
       FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database()`,
  )
  const age = num(row?.age)
  const limit = 2 ** 31 - 1
  const used = age / limit
  return [
    {
      check: 'wraparound',
      severity: used > 0.5 ? 'critical' : age > num(row?.freeze_max) ? 'warning' : 'info',
      message: `Oldest unfrozen transaction ID is ${age} transactions old: ${percent(used)} of the way to wraparound (${limit - age} left; autovacuum forces freezing at ${num(row?.freeze_max)}).`,
      action:
        used > 0.5 || age > num(row?.freeze_max)
          ? 'VACUUM (FREEZE) the oldest tables (order pg_class by age(relfrozenxid)); look for long transactions, prepared transactions and stale replication slots holding the horizon.'
          : 'Nothing to do.',
    },
  ]
}

const sequences: Check = async (client) =>
  (
    await rows(
      client,
      `WITH s AS (
         SELECT pg_catalog.quote_ident(q.schemaname) || '.' || pg_catalog.quote_ident(q.sequencename) AS name,
                q.last_value::float8 AS value, q.min_value::float8 AS min, q.increment_by,
                -- A sequence owned by an int4 or int2 column runs out at that type's maximum.
                least(q.max_value::float8, coalesce((
                  SELECT CASE a.atttypid WHEN 'int4'::regtype THEN 2147483647 WHEN 'int2'::regtype THEN 32767 END
                    FROM pg_catalog.pg_depend d
                    JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                   WHERE d.objid = (pg_catalog.quote_ident(q.schemaname) || '.' || pg_catalog.quote_ident(q.sequencename))::regclass
                     AND d.classid = 'pg_catalog.pg_class'::regclass AND d.refclassid = 'pg_catalog.pg_class'::regclass
                     AND d.deptype IN ('a', 'i') LIMIT 1), q.max_value::float8)) AS max
           FROM pg_catalog.pg_sequences q
          WHERE q.last_value IS NOT NULL AND q.increment_by > 0
       )
       -- Values handed out of the values there are: at 900 of 1..1000, 90 % used.
       SELECT name, value, max, (value - min + 1) / NULLIF(max - min + 1, 0) AS used
         FROM s WHERE (value - min + 1) / NULLIF(max - min + 1, 0) >= 0.75
        ORDER BY used DESC LIMIT ${maxFindings}`,
    )
  ).map((row) => ({
    check: 'sequences',
    severity: num(row.used) >= 0.9 ? 'critical' : 'warning',
    object: String(row.name),
    message: `Sequence ${row.name} is at ${num(row.value)} of ${num(row.max)}: ${percent(num(row.used))} used.`,
    action: `Widen it before it runs out: ALTER SEQUENCE ${row.name} AS bigint MAXVALUE 9223372036854775807; and ALTER the owning column to bigint.`,
  }))

const connections: Check = async (client) => {
  const [row] = await rows(
    client,
    `SELECT (SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE backend_type = 'client backend') AS used,
            (SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE state LIKE 'idle in transaction%') AS idle_tx,
            pg_catalog.current_setting('max_connections')::int4 AS max,
            pg_catalog.current_setting('superuser_reserved_connections')::int4 AS reserved`,
  )
  const used = num(row?.used)
  const max = num(row?.max) - num(row?.reserved)
  const share = used / Math.max(1, max)
  return [
    {
      check: 'connections',
      severity: share > 0.9 ? 'critical' : share > 0.75 ? 'warning' : 'info',
      message: `${used} of ${max} connections in use (${percent(share)}; ${num(row?.reserved)} more reserved for superusers), ${num(row?.idle_tx)} idle in a transaction.`,
      action:
        share > 0.75
          ? 'Put a connection pooler (PgBouncer) in front, lower application pool sizes, or raise max_connections.'
          : num(row?.idle_tx) > 0
            ? 'Find the sessions idle in a transaction (pg_stat_activity) and set idle_in_transaction_session_timeout.'
            : 'Nothing to do.',
    },
  ]
}

const cacheHitRatio: Check = async (client) => {
  const [row] = await rows(
    client,
    `SELECT blks_hit::float8 AS hit, blks_read::float8 AS read
       FROM pg_catalog.pg_stat_database WHERE datname = pg_catalog.current_database()`,
  )
  const hit = num(row?.hit)
  const total = hit + num(row?.read)
  if (total === 0) return []
  const ratio = hit / total
  return [
    {
      check: 'cache_hit_ratio',
      severity: ratio < 0.9 ? 'warning' : 'info',
      message: `Buffer cache hit ratio ${percent(ratio)} (${hit} hits, ${num(row?.read)} reads).`,
      action:
        ratio < 0.95
          ? 'Below 95 % for an OLTP load: raise shared_buffers or memory, or find the queries that read most (get_top_queries).'
          : 'Nothing to do.',
    },
  ]
}

const replication: Check = async (client) => {
  const findings: HealthFinding[] = []
  const recovery =
    (await rows(client, 'SELECT pg_catalog.pg_is_in_recovery() AS standby'))[0]?.standby === true
  if (recovery) {
    const [row] = await rows(
      client,
      'SELECT extract(epoch FROM now() - pg_catalog.pg_last_xact_replay_timestamp())::float8 AS lag',
    )
    const lag = row?.lag === null || row?.lag === undefined ? undefined : num(row.lag)
    findings.push({
      check: 'replication',
      severity: lag !== undefined && lag > 60 ? 'warning' : 'info',
      message: `This server is a standby; last replayed transaction ${lag === undefined ? 'unknown' : `${lag.toFixed(1)} s ago`}.`,
      action:
        lag !== undefined && lag > 60
          ? 'Check the primary and the replication connection.'
          : 'Nothing to do.',
    })
    return findings
  }
  for (const row of await rows(
    client,
    `SELECT application_name AS name, client_addr::text AS address, state,
            extract(epoch FROM replay_lag)::float8 AS lag,
            pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), replay_lsn)::float8 AS bytes
       FROM pg_catalog.pg_stat_replication`,
  )) {
    const lag = num(row.lag)
    findings.push({
      check: 'replication',
      severity: lag > 60 ? 'warning' : 'info',
      object: String(row.name),
      message: `Replica ${row.name} (${row.state}) is ${lag.toFixed(1)} s and ${megabytes(num(row.bytes))} of WAL behind.`,
      action: lag > 60 ? 'Check the replica’s load, network and disk.' : 'Nothing to do.',
    })
  }
  for (const row of await rows(
    client,
    `SELECT slot_name AS name, slot_type AS type,
            pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), restart_lsn)::float8 AS bytes
       FROM pg_catalog.pg_replication_slots WHERE NOT active`,
  )) {
    findings.push({
      check: 'replication',
      severity: 'warning',
      object: String(row.name),
      message: `Replication slot ${row.name} (${row.type}) is inactive and holds ${megabytes(num(row.bytes))} of WAL (and the xmin horizon).`,
      action: `If its consumer is gone: SELECT pg_drop_replication_slot('${String(row.name).replace(/'/g, "''")}');`,
    })
  }
  return findings
}

const constraints: Check = async (client) =>
  (
    await rows(
      client,
      `SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(t.relname) AS tbl,
              pg_catalog.quote_ident(c.conname) AS name, pg_catalog.pg_get_constraintdef(c.oid) AS definition
         FROM pg_catalog.pg_constraint c
         JOIN pg_catalog.pg_class t ON t.oid = c.conrelid
         JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
        WHERE NOT c.convalidated AND ${userSchemas}
        ORDER BY 1, 2 LIMIT ${maxFindings}`,
    )
  ).map((row) => ({
    check: 'constraints',
    severity: 'warning',
    object: `${row.tbl}.${row.name}`,
    message: `Constraint ${row.name} on ${row.tbl} is NOT VALID: existing rows were never checked (${row.definition}).`,
    action: `ALTER TABLE ${row.tbl} VALIDATE CONSTRAINT ${row.name};`,
  }))

const checks: Readonly<Record<HealthCheck, Check>> = {
  invalid_indexes: invalidIndexes,
  duplicate_indexes: duplicateIndexes,
  unused_indexes: unusedIndexes,
  bloated_indexes: bloatedIndexes,
  vacuum,
  wraparound,
  sequences,
  connections,
  cache_hit_ratio: cacheHitRatio,
  replication,
  constraints,
}

/**
 * Runs the chosen checks (all by default) in the call's transaction. A check the role may not
 * read (42501) becomes an info finding instead of failing the report.
 */
export async function healthReport(
  client: Queryable,
  wanted: readonly HealthCheck[] = healthChecks,
): Promise<HealthReport> {
  const findings: HealthFinding[] = []
  const counts: Record<string, number> = {}
  for (const name of wanted) {
    await client.query('SAVEPOINT keel_health')
    try {
      const found = await checks[name](client)
      await client.query('RELEASE SAVEPOINT keel_health')
      findings.push(...found)
      counts[name] = found.length
    } catch (error) {
      await client.query('ROLLBACK TO SAVEPOINT keel_health')
      if ((error as { code?: unknown }).code !== '42501') throw error
      findings.push({
        check: name,
        severity: 'info',
        message: `Not checked: this role may not read what the check needs (${(error as Error).message}).`,
        action: 'Grant pg_monitor to the role the server connects as.',
      })
      counts[name] = 0
    }
  }
  return { findings, checks: counts }
}
