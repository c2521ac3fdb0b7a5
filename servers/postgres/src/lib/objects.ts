/**
 * Catalog objects besides tables: functions and procedures, sequences, extensions, triggers and
 * types, listed and described. Parameterised, server-written SQL, in the schema allow-list; objects
 * that belong to an extension are listed under the extension, not one by one.
 */
import type { PoolClient } from 'pg'
import { toLikePattern } from './catalog.js'
import { positiveInteger } from './limits.js'

type Queryable = Pick<PoolClient, 'query'>

export type ObjectKind = 'function' | 'sequence' | 'extension' | 'trigger' | 'type'
export const objectKinds: readonly ObjectKind[] = ['function', 'sequence', 'extension', 'trigger', 'type']

export interface ObjectSummary {
  readonly kind: ObjectKind
  readonly schema: string | null
  readonly name: string
  /** One line: signature and volatility, value and % used, version, trigger event, type kind. */
  readonly detail: string
}

export interface ObjectFilter {
  readonly kind: ObjectKind
  readonly schema?: string
  readonly pattern?: string
  readonly limit?: number
}

const notExtensionMember = (catalog: string, oid: string) =>
  `NOT EXISTS (SELECT FROM pg_catalog.pg_depend d WHERE d.classid = '${catalog}'::pg_catalog.regclass
     AND d.objid = ${oid} AND d.deptype = 'e')`

const userSchema = `n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'`
/** $1 schema, $2 ILIKE pattern on the name, $3 allow-list, $4 limit. */
const filters = (name: string) => `${userSchema}
  AND ($1::text IS NULL OR n.nspname = $1::text)
  AND ($2::text IS NULL OR ${name} ILIKE $2::text)
  AND ($3::text[] IS NULL OR n.nspname = ANY($3::text[]))`

const volatility: Readonly<Record<string, string>> = { i: 'immutable', s: 'stable', v: 'volatile' }
const typeKinds: Readonly<Record<string, string>> = {
  e: 'enum',
  c: 'composite',
  d: 'domain',
  r: 'range',
  m: 'multirange',
}

const listSql: Readonly<Record<ObjectKind, string>> = {
  function: `SELECT n.nspname AS schema, p.proname AS name,
       p.proname || '(' || pg_catalog.pg_get_function_identity_arguments(p.oid) || ')'
         || CASE p.prokind WHEN 'p' THEN ' procedure' ELSE ' → ' || pg_catalog.pg_get_function_result(p.oid) END
         || ', ' || CASE p.provolatile WHEN 'i' THEN 'immutable' WHEN 's' THEN 'stable' ELSE 'volatile' END
         || ', ' || l.lanname || CASE WHEN p.prosecdef THEN ', security definer' ELSE '' END AS detail
     FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
     JOIN pg_catalog.pg_language l ON l.oid = p.prolang
    WHERE p.prokind IN ('f', 'p', 'a', 'w') AND ${notExtensionMember('pg_catalog.pg_proc', 'p.oid')} AND ${filters('p.proname')}
    ORDER BY 1, 2, 3 LIMIT $4`,
  sequence: `SELECT s.schemaname AS schema, s.sequencename AS name,
       s.data_type::text || ', at ' || coalesce(s.last_value::text, 'unused') || ' of ' || s.max_value
         || CASE WHEN s.last_value IS NOT NULL AND s.increment_by > 0 THEN
              ' (' || round((100 * (s.last_value::numeric - s.min_value + 1) / NULLIF(s.max_value::numeric - s.min_value + 1, 0)), 2) || ' % used)'
            ELSE '' END AS detail
     FROM pg_catalog.pg_sequences s JOIN pg_catalog.pg_namespace n ON n.nspname = s.schemaname
    WHERE ${filters('s.sequencename')}
    ORDER BY 1, 2 LIMIT $4`,
  extension: `SELECT n.nspname AS schema, e.extname AS name,
       'version ' || e.extversion || coalesce(' — ' || pg_catalog.obj_description(e.oid, 'pg_extension'), '') AS detail
     FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
    WHERE ($1::text IS NULL OR n.nspname = $1::text) AND ($2::text IS NULL OR e.extname ILIKE $2::text)
      AND ($3::text[] IS NULL OR n.nspname = ANY($3::text[]))
    ORDER BY 2 LIMIT $4`,
  trigger: `SELECT n.nspname AS schema, t.tgname AS name,
       'on ' || pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname)
         || CASE t.tgenabled WHEN 'D' THEN ' (disabled)' ELSE '' END || ': '
         || regexp_replace(pg_catalog.pg_get_triggerdef(t.oid), '^CREATE (CONSTRAINT )?TRIGGER \\S+ ', '') AS detail
     FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
     JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE NOT t.tgisinternal AND ${filters('t.tgname')}
    ORDER BY 1, 2 LIMIT $4`,
  type: `SELECT n.nspname AS schema, t.typname AS name,
       CASE t.typtype WHEN 'e' THEN 'enum (' || (SELECT string_agg(pg_catalog.quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder)
                                                   FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid) || ')'
            WHEN 'd' THEN 'domain over ' || pg_catalog.format_type(t.typbasetype, t.typtypmod)
                          || coalesce(' ' || (SELECT string_agg(pg_catalog.pg_get_constraintdef(x.oid), ' ')
                                                FROM pg_catalog.pg_constraint x WHERE x.contypid = t.oid), '')
            WHEN 'c' THEN 'composite (' || (SELECT string_agg(pg_catalog.quote_ident(a.attname) || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
                                              FROM pg_catalog.pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped) || ')'
            WHEN 'r' THEN 'range of ' || (SELECT pg_catalog.format_type(r.rngsubtype, NULL) FROM pg_catalog.pg_range r WHERE r.rngtypid = t.oid)
            ELSE 'multirange' END AS detail
     FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
    WHERE t.typtype IN ('e', 'd', 'c', 'r', 'm')
      AND (t.typrelid = 0 OR (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid) = 'c')
      AND ${notExtensionMember('pg_catalog.pg_type', 't.oid')} AND ${filters('t.typname')}
    ORDER BY 1, 2 LIMIT $4`,
}

/** Objects of one kind, filtered like listTables (schema, `*`/`?` or substring pattern). */
export async function listObjects(
  client: Queryable,
  schemas: readonly string[] | null,
  filter: ObjectFilter,
): Promise<{ objects: ObjectSummary[]; truncated: boolean }> {
  const limit = Math.min(positiveInteger('limit', filter.limit ?? 100), 1_000)
  const pattern = filter.pattern === undefined || filter.pattern === '' ? null : toLikePattern(filter.pattern)
  const result = await client.query<{ schema: string | null; name: string; detail: string | null }>(
    listSql[filter.kind],
    [filter.schema ?? null, pattern, schemas, limit + 1],
  )
  const objects = result.rows.slice(0, limit).map((row) => ({
    kind: filter.kind,
    schema: row.schema,
    name: row.name,
    detail: row.detail ?? '',
  }))
  return { objects, truncated: result.rows.length > limit }
}

export interface ObjectDescription {
  readonly kind: ObjectKind
  readonly schema: string | null
  readonly name: string
  /** One entry per overload (functions) or one entry: the object's fields. */
  readonly entries: Array<Record<string, unknown>>
}

const describeSql: Readonly<Record<ObjectKind, string>> = {
  function: `SELECT p.proname || '(' || pg_catalog.pg_get_function_identity_arguments(p.oid) || ')' AS signature,
       CASE p.prokind WHEN 'p' THEN NULL ELSE pg_catalog.pg_get_function_result(p.oid) END AS returns,
       CASE p.prokind WHEN 'f' THEN 'function' WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate' ELSE 'window' END AS kind,
       p.provolatile AS volatility, l.lanname AS language, p.prosecdef AS security_definer, p.proisstrict AS strict,
       pg_catalog.pg_get_userbyid(p.proowner) AS owner, pg_catalog.obj_description(p.oid, 'pg_proc') AS comment,
       CASE WHEN p.prokind IN ('f', 'p') AND l.lanname NOT IN ('c', 'internal') THEN left(p.prosrc, 4000) END AS body
     FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
     JOIN pg_catalog.pg_language l ON l.oid = p.prolang
    WHERE n.nspname = $1 AND p.proname = $2 AND ($3::text[] IS NULL OR n.nspname = ANY($3::text[]))
    ORDER BY 1`,
  sequence: `SELECT s.data_type::text AS type, s.start_value::text AS start, s.min_value::text AS min,
       s.max_value::text AS max, s.increment_by::text AS increment, s.cycle, s.cache_size::text AS cache,
       s.last_value::text AS last_value,
       CASE WHEN s.last_value IS NOT NULL AND s.increment_by > 0 THEN
         round(100 * (s.last_value::numeric - s.min_value + 1) / NULLIF(s.max_value::numeric - s.min_value + 1, 0), 2)::float8 END AS percent_used,
       (SELECT pg_catalog.quote_ident(tn.nspname) || '.' || pg_catalog.quote_ident(t.relname) || '.' || pg_catalog.quote_ident(a.attname)
          FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_class t ON t.oid = d.refobjid
          JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace
          JOIN pg_catalog.pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
         WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
           AND d.objid = (pg_catalog.quote_ident(s.schemaname) || '.' || pg_catalog.quote_ident(s.sequencename))::pg_catalog.regclass
           AND d.deptype IN ('a', 'i') LIMIT 1) AS owned_by
     FROM pg_catalog.pg_sequences s
    WHERE s.schemaname = $1 AND s.sequencename = $2 AND ($3::text[] IS NULL OR s.schemaname = ANY($3::text[]))`,
  extension: `SELECT e.extversion AS version, a.default_version AS latest_version, n.nspname AS schema,
       e.extrelocatable AS relocatable, pg_catalog.obj_description(e.oid, 'pg_extension') AS comment,
       (SELECT count(*)::int4 FROM pg_catalog.pg_depend d WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
           AND d.refobjid = e.oid AND d.deptype = 'e') AS member_objects
     FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
     LEFT JOIN pg_catalog.pg_available_extensions a ON a.name = e.extname
    WHERE ($1::text IS NULL OR n.nspname = $1) AND e.extname = $2 AND ($3::text[] IS NULL OR n.nspname = ANY($3::text[]))`,
  trigger: `SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname) AS "table",
       pg_catalog.pg_get_triggerdef(t.oid, true) AS definition,
       CASE t.tgenabled WHEN 'D' THEN 'disabled' WHEN 'R' THEN 'replica' WHEN 'A' THEN 'always' ELSE 'origin' END AS enabled,
       t.tgfoid::pg_catalog.regprocedure::text AS function
     FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
     JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = $1 AND t.tgname = $2 AND NOT t.tgisinternal AND ($3::text[] IS NULL OR n.nspname = ANY($3::text[]))
    ORDER BY 1`,
  type: `SELECT t.typtype AS type_kind, pg_catalog.format_type(t.oid, NULL) AS type,
       pg_catalog.obj_description(t.oid, 'pg_type') AS comment,
       ARRAY(SELECT e.enumlabel::text FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder) AS labels,
       CASE WHEN t.typtype = 'd' THEN pg_catalog.format_type(t.typbasetype, t.typtypmod) END AS base_type,
       ARRAY(SELECT pg_catalog.pg_get_constraintdef(x.oid) FROM pg_catalog.pg_constraint x WHERE x.contypid = t.oid) AS constraints,
       ARRAY(SELECT a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a
              WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) AS attributes
     FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
    WHERE n.nspname = $1 AND t.typname = $2 AND ($3::text[] IS NULL OR n.nspname = ANY($3::text[]))`,
}

/** One object (every overload of a function, every table's trigger of that name); null when none. */
export async function describeObject(
  client: Queryable,
  schemas: readonly string[] | null,
  kind: ObjectKind,
  schema: string | undefined,
  name: string,
): Promise<ObjectDescription | null> {
  const result = await client.query<Record<string, unknown>>(describeSql[kind], [
    schema ?? (kind === 'extension' ? null : 'public'),
    name,
    schemas,
  ])
  if (result.rows.length === 0) return null
  const entries = result.rows.map((row) => {
    const entry: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(row)) {
      if (value === null || (Array.isArray(value) && value.length === 0)) continue
      if (key === 'volatility') entry[key] = volatility[String(value)] ?? value
      else if (key === 'type_kind') entry.kind = typeKinds[String(value)] ?? value
      else entry[key] = value
    }
    return entry
  })
  return { kind, schema: schema ?? (kind === 'extension' ? null : 'public'), name, entries }
}
