/**
 * Catalog queries: schemas, tables (paginated), one table described in full, and a health probe.
 * All SQL here is parameterised: no identifier or value from a caller is concatenated into it. Each
 * runs through a {@link CatalogRunner}, the Database's read-only, rolled-back transaction.
 */
import type { PoolClient } from 'pg'
import { positiveInteger } from './limits.js'
import type {
  ConstraintInfo,
  HealthInfo,
  ListTablesOptions,
  ReferentialAction,
  SchemaInfo,
  TableDescription,
  TableKind,
  TablePage,
} from './types.js'

/** Runs catalog work on a connection inside the call's read-only transaction. */
export type CatalogRunner = <T>(work: (client: PoolClient) => Promise<T>) => Promise<T>

/**
 * Turns a user's table-name pattern into an ILIKE pattern: LIKE's own wildcards and the escape
 * character are escaped; `*` and `?` become `%` and `_`; without a wildcard it is a substring match.
 */
export function toLikePattern(pattern: string): string {
  const escaped = pattern.replace(/[\\%_]/g, (character) => `\\${character}`)
  if (!/[*?]/.test(pattern)) return `%${escaped}%`
  return escaped.replace(/\*/g, '%').replace(/\?/g, '_')
}

const kindByRelkind: Readonly<Record<string, TableKind>> = {
  r: 'table',
  p: 'table',
  v: 'view',
  m: 'materialized_view',
  f: 'foreign_table',
}
const relkindsByKind: Readonly<Record<TableKind, readonly string[]>> = {
  table: ['r', 'p'],
  view: ['v'],
  materialized_view: ['m'],
  foreign_table: ['f'],
}
const referentialActions: Readonly<Record<string, ReferentialAction>> = {
  a: 'no_action',
  r: 'restrict',
  c: 'cascade',
  n: 'set_null',
  d: 'set_default',
}

const toNumberOrNull = (value: unknown): number | null =>
  value === null || value === undefined ? null : Number(value)

const schemaAllowed = (schemas: readonly string[] | null, schema: string): boolean =>
  schemas === null || schemas.includes(schema)

/** Schemas (without pg_toast and temporary schemas), system schemas flagged and listed last. */
export function listSchemas(run: CatalogRunner, schemas: readonly string[] | null): Promise<SchemaInfo[]> {
  return run(async (client) => {
    const result = await client.query<{
      name: string
      owner: string
      comment: string | null
      system: boolean
      accessible: boolean
      table_count: number
    }>(
      `SELECT n.nspname AS name,
              pg_catalog.pg_get_userbyid(n.nspowner) AS owner,
              pg_catalog.obj_description(n.oid, 'pg_namespace') AS comment,
              (n.nspname = 'information_schema' OR n.nspname LIKE 'pg\\_%') AS system,
              pg_catalog.has_schema_privilege(n.oid, 'USAGE') AS accessible,
              (SELECT count(*)::int4 FROM pg_catalog.pg_class c
                WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
                  AND NOT c.relispartition) AS table_count
         FROM pg_catalog.pg_namespace n
        WHERE n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'
          AND ($1::text[] IS NULL OR n.nspname = ANY($1::text[]))
        ORDER BY 4, 1`,
      [schemas],
    )
    return result.rows.map((row) => ({
      name: row.name,
      owner: row.owner,
      comment: row.comment,
      system: row.system,
      accessible: row.accessible,
      tableCount: row.table_count,
    }))
  })
}

/** Tables, views, materialized views and foreign tables, paginated, with estimated row counts. */
export function listTables(
  run: CatalogRunner,
  schemas: readonly string[] | null,
  options: ListTablesOptions,
): Promise<TablePage> {
  const limit = Math.min(positiveInteger('limit', options.limit ?? 100), 1_000)
  const offset = positiveInteger('offset', options.offset ?? 0, { allowZero: true })
  const kinds = options.kinds ?? (Object.keys(relkindsByKind) as TableKind[])
  const relkinds = kinds.flatMap((kind) => relkindsByKind[kind] ?? [])
  if (options.schema !== undefined && !schemaAllowed(schemas, options.schema)) {
    return Promise.resolve({ tables: [], total: 0, limit, offset, nextOffset: null })
  }
  const pattern =
    options.pattern === undefined || options.pattern === '' ? null : toLikePattern(options.pattern)
  const where = `
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind = ANY($1::"char"[])
     AND NOT c.relispartition
     AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'
     AND CASE WHEN $2::text IS NULL
              THEN n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
              ELSE n.nspname = $2::text END
     AND ($3::text IS NULL OR c.relname ILIKE $3::text)
     AND ($4::text[] IS NULL OR n.nspname = ANY($4::text[]))`
  const params = [relkinds, options.schema ?? null, pattern, schemas]
  return run(async (client) => {
    const count = await client.query<{ total: number }>(`SELECT count(*)::int4 AS total ${where}`, params)
    const page = await client.query<{
      schema: string
      name: string
      relkind: string
      estimated_rows: string | null
      comment: string | null
    }>(
      `SELECT n.nspname AS schema, c.relname AS name, c.relkind::text AS relkind,
              CASE WHEN c.relkind = 'v' OR c.reltuples < 0 THEN NULL ELSE c.reltuples::int8 END AS estimated_rows,
              pg_catalog.obj_description(c.oid, 'pg_class') AS comment
       ${where}
       ORDER BY n.nspname, c.relname
       LIMIT $5 OFFSET $6`,
      [...params, limit, offset],
    )
    const total = count.rows[0]?.total ?? 0
    return {
      tables: page.rows.map((row) => ({
        schema: row.schema,
        name: row.name,
        kind: kindByRelkind[row.relkind] ?? 'table',
        estimatedRows: toNumberOrNull(row.estimated_rows),
        comment: row.comment,
      })),
      total,
      limit,
      offset,
      nextOffset: offset + page.rows.length < total ? offset + page.rows.length : null,
    }
  })
}

/** Columns, constraints, foreign keys pointing here and indexes of the relation `oid`. */
async function readTableParts(client: PoolClient, oid: string, schemas: readonly string[] | null) {
  const columns = await client.query<{
    name: string
    type: string
    nullable: boolean
    default: string | null
    comment: string | null
    identity: string
    generated: string
  }>(
    `SELECT a.attname AS name,
            pg_catalog.format_type(a.atttypid, a.atttypmod) AS type,
            NOT a.attnotnull AS nullable,
            pg_catalog.pg_get_expr(d.adbin, d.adrelid) AS default,
            pg_catalog.col_description(a.attrelid, a.attnum) AS comment,
            a.attidentity::text AS identity,
            a.attgenerated::text AS generated
       FROM pg_catalog.pg_attribute a
       LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [oid],
  )
  const columnsOf = (keys: string, relation: string) =>
    `ARRAY(SELECT a.attname::text FROM unnest(${keys}) WITH ORDINALITY AS k(attnum, ord)
             JOIN pg_catalog.pg_attribute a ON a.attrelid = ${relation} AND a.attnum = k.attnum
            ORDER BY k.ord)`
  const constraints = await client.query<{
    name: string
    type: string
    columns: string[]
    ref_schema: string | null
    ref_table: string | null
    ref_columns: string[]
    on_update: string
    on_delete: string
    definition: string
  }>(
    `SELECT con.conname AS name, con.contype::text AS type,
            ${columnsOf('con.conkey', 'con.conrelid')} AS columns,
            fn.nspname AS ref_schema, fc.relname AS ref_table,
            ${columnsOf('con.confkey', 'con.confrelid')} AS ref_columns,
            con.confupdtype::text AS on_update, con.confdeltype::text AS on_delete,
            pg_catalog.pg_get_constraintdef(con.oid, true) AS definition
       FROM pg_catalog.pg_constraint con
       LEFT JOIN pg_catalog.pg_class fc ON fc.oid = con.confrelid
       LEFT JOIN pg_catalog.pg_namespace fn ON fn.oid = fc.relnamespace
      WHERE con.conrelid = $1::oid AND con.contype IN ('p', 'f', 'u', 'c', 'x')
      ORDER BY con.contype, con.conname`,
    [oid],
  )
  const incoming = await client.query<{
    name: string
    schema: string
    table: string
    columns: string[]
    ref_columns: string[]
    definition: string
  }>(
    `SELECT con.conname AS name, n.nspname AS schema, c.relname AS table,
            ${columnsOf('con.conkey', 'con.conrelid')} AS columns,
            ${columnsOf('con.confkey', 'con.confrelid')} AS ref_columns,
            pg_catalog.pg_get_constraintdef(con.oid, true) AS definition
       FROM pg_catalog.pg_constraint con
       JOIN pg_catalog.pg_class c ON c.oid = con.conrelid
       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE con.confrelid = $1::oid AND con.contype = 'f' AND con.conparentid = 0
        AND ($2::text[] IS NULL OR n.nspname = ANY($2::text[]))
      ORDER BY n.nspname, c.relname, con.conname`,
    [oid, schemas],
  )
  const indexes = await client.query<{
    name: string
    definition: string
    method: string
    unique: boolean
    primary: boolean
    valid: boolean
  }>(
    `SELECT i.relname AS name, pg_catalog.pg_get_indexdef(ix.indexrelid) AS definition,
            am.amname AS method, ix.indisunique AS unique, ix.indisprimary AS primary,
            ix.indisvalid AS valid
       FROM pg_catalog.pg_index ix
       JOIN pg_catalog.pg_class i ON i.oid = ix.indexrelid
       JOIN pg_catalog.pg_am am ON am.oid = i.relam
      WHERE ix.indrelid = $1::oid
      ORDER BY ix.indisprimary DESC, i.relname`,
    [oid],
  )
  return { columns, constraints, incoming, indexes }
}

/**
 * Everything about one table or view, matched exactly by schema and name (as stored: unquoted
 * names are lower case). Null when it does not exist or its schema is outside the allow-list.
 */
export function describeTable(
  run: CatalogRunner,
  schemas: readonly string[] | null,
  schema: string,
  table: string,
): Promise<TableDescription | null> {
  if (!schemaAllowed(schemas, schema)) return Promise.resolve(null)
  return run(async (client) => {
    const relation = await client.query<{
      oid: string
      relkind: string
      estimated_rows: string | null
      comment: string | null
      view_definition: string | null
      total_bytes: string
    }>(
      `SELECT c.oid::int8 AS oid, c.relkind::text AS relkind,
              CASE WHEN c.relkind = 'v' OR c.reltuples < 0 THEN NULL ELSE c.reltuples::int8 END AS estimated_rows,
              pg_catalog.obj_description(c.oid, 'pg_class') AS comment,
              CASE WHEN c.relkind IN ('v', 'm') THEN pg_catalog.pg_get_viewdef(c.oid, true) END AS view_definition,
              pg_catalog.pg_total_relation_size(c.oid) AS total_bytes
         FROM pg_catalog.pg_class c
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`,
      [schema, table],
    )
    const found = relation.rows[0]
    if (found === undefined) return null
    const { columns, constraints, incoming, indexes } = await readTableParts(client, found.oid, schemas)
    const primary = constraints.rows.find((row) => row.type === 'p')
    const otherTypes: Readonly<Record<string, ConstraintInfo['type']>> = {
      u: 'unique',
      c: 'check',
      x: 'exclusion',
    }
    return {
      schema,
      name: table,
      kind: kindByRelkind[found.relkind] ?? 'table',
      comment: found.comment,
      estimatedRows: toNumberOrNull(found.estimated_rows),
      totalBytes: Number(found.total_bytes),
      viewDefinition: found.view_definition,
      columns: columns.rows.map((row) => ({
        name: row.name,
        type: row.type,
        nullable: row.nullable,
        default: row.default,
        comment: row.comment,
        identity: row.identity === 'a' ? 'always' : row.identity === 'd' ? 'by_default' : null,
        generated: row.generated === 's' ? 'stored' : row.generated === 'v' ? 'virtual' : null,
      })),
      primaryKey: primary === undefined ? null : { name: primary.name, columns: primary.columns },
      foreignKeys: constraints.rows
        .filter((row) => row.type === 'f')
        .map((row) => ({
          name: row.name,
          columns: row.columns,
          referencedSchema: row.ref_schema ?? '',
          referencedTable: row.ref_table ?? '',
          referencedColumns: row.ref_columns,
          onUpdate: referentialActions[row.on_update] ?? 'no_action',
          onDelete: referentialActions[row.on_delete] ?? 'no_action',
          definition: row.definition,
        })),
      referencedBy: incoming.rows.map((row) => ({
        name: row.name,
        schema: row.schema,
        table: row.table,
        columns: row.columns,
        referencedColumns: row.ref_columns,
        definition: row.definition,
      })),
      constraints: constraints.rows.flatMap((row) => {
        const type = otherTypes[row.type]
        return type === undefined
          ? []
          : [{ name: row.name, type, columns: row.columns, definition: row.definition }]
      }),
      indexes: indexes.rows,
    }
  })
}

/** A cheap round trip that also reports who and where we are, for a health check. */
export function health(run: CatalogRunner): Promise<HealthInfo> {
  const started = performance.now()
  return run(async (client) => {
    const result = await client.query<{
      database: string
      user: string
      server_version: string
      server_version_num: number
      read_only: boolean
      in_recovery: boolean
    }>(
      `SELECT pg_catalog.current_database() AS database, current_user AS user,
              pg_catalog.current_setting('server_version') AS server_version,
              pg_catalog.current_setting('server_version_num')::int4 AS server_version_num,
              pg_catalog.current_setting('transaction_read_only') = 'on' AS read_only,
              pg_catalog.pg_is_in_recovery() AS in_recovery`,
    )
    const row = result.rows[0]
    if (row === undefined) throw new Error('health query returned no row')
    return {
      database: row.database,
      user: row.user,
      serverVersion: row.server_version,
      serverVersionNum: row.server_version_num,
      readOnly: row.read_only,
      inRecovery: row.in_recovery,
      latencyMs: Math.round((performance.now() - started) * 10) / 10,
    }
  })
}
