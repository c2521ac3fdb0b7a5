/**
 * A fingerprint of everything an attack could change: catalog definitions (relations, columns,
 * functions, constraints, indexes, defaults, types, triggers, rules, policies, comments, ACLs),
 * roles and their settings, databases, extensions, configuration files (ALTER SYSTEM), large
 * objects, sequence positions, and every row of every table. Compare two snapshots with
 * `expect(after).toEqual(before)`: the per-part digests make a failure point at what changed.
 *
 * Connect as a superuser: the fingerprint must see everything, including pg_authid passwords.
 * Roles, role settings and configuration files are cluster-wide: tests that compare checksums
 * rely on no test changing those while they run (all tests here only read them).
 */
import pg from 'pg'

export interface DatabaseChecksum {
  /** md5 over all parts. */
  readonly digest: string
  /** One md5 per aspect (`catalog:relations`, …) and per table (`data:shop.orders`). */
  readonly parts: Readonly<Record<string, string>>
}

/** Each query returns one text column `x`; the part digest is md5 of the sorted lines. */
const catalogParts: Readonly<Record<string, string>> = {
  namespaces: `SELECT concat_ws('|', nspname, nspowner::regrole, nspacl) AS x FROM pg_namespace`,
  relations: `SELECT concat_ws('|', n.nspname, c.relname, c.relkind, c.relowner::regrole, c.relacl, c.relpersistence,
                 c.relrowsecurity, c.relhastriggers, c.reloptions)
                AS x FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname NOT LIKE 'pg\\_toast%'`,
  attributes: `SELECT concat_ws('|', a.attrelid::regclass, a.attname, a.atttypid::regtype, a.atttypmod, a.attnum,
                 a.attnotnull, a.attisdropped, a.atthasdef, a.attidentity, a.attgenerated, a.attacl)
                 AS x FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
                 JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT LIKE 'pg\\_toast%'`,
  defaults: `SELECT concat_ws('|', adrelid::regclass, adnum, pg_get_expr(adbin, adrelid)) AS x FROM pg_attrdef`,
  functions: `SELECT concat_ws('|', pronamespace::regnamespace, proname, pg_get_function_identity_arguments(oid),
                prorettype::regtype, prokind, provolatile, prosecdef, proowner::regrole, proacl, md5(prosrc))
                AS x FROM pg_proc`,
  constraints: `SELECT concat_ws('|', conrelid::regclass, contypid::regtype, conname, pg_get_constraintdef(oid)) AS x
                  FROM pg_constraint`,
  indexes: `SELECT pg_get_indexdef(indexrelid) || '|' || indisvalid AS x FROM pg_index`,
  types: `SELECT concat_ws('|', typnamespace::regnamespace, typname, typtype, typowner::regrole, typacl) AS x FROM pg_type`,
  enums: `SELECT concat_ws('|', enumtypid::regtype, enumsortorder, enumlabel) AS x FROM pg_enum`,
  triggers: `SELECT concat_ws('|', tgrelid::regclass, tgname, tgenabled, tgfoid::regproc) AS x FROM pg_trigger`,
  rules: `SELECT concat_ws('|', ev_class::regclass, rulename, ev_type, is_instead) AS x FROM pg_rewrite
           WHERE ev_class >= 16384`,
  viewDefinitions: `SELECT c.oid::regclass || '|' || pg_get_viewdef(c.oid) AS x FROM pg_class c WHERE c.relkind IN ('v', 'm')
                     AND c.oid >= 16384`,
  policies: `SELECT concat_ws('|', polrelid::regclass, polname, polcmd, pg_get_expr(polqual, polrelid)) AS x FROM pg_policy`,
  comments: `SELECT concat_ws('|', classoid::regclass, objoid, objsubid, md5(description)) AS x FROM pg_description`,
  extensions: `SELECT concat_ws('|', extname, extversion, extnamespace::regnamespace) AS x FROM pg_extension`,
  roles: `SELECT concat_ws('|', rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication,
            rolbypassrls, rolconnlimit, md5(coalesce(rolpassword, '')), rolvaliduntil) AS x FROM pg_authid`,
  memberships: `SELECT concat_ws('|', roleid::regrole, member::regrole, admin_option) AS x FROM pg_auth_members`,
  roleSettings: `SELECT concat_ws('|', setdatabase, setrole, array_to_string(setconfig, ',')) AS x FROM pg_db_role_setting`,
  // This database only: scratch databases come and go while other test files run.
  database: `SELECT concat_ws('|', datname, datdba::regrole, datallowconn, datconnlimit, datacl) AS x FROM pg_database
              WHERE datname = current_database()`,
  configFiles: `SELECT concat_ws('|', sourcefile, name, setting) AS x FROM pg_file_settings`,
  largeObjects: `SELECT concat_ws('|', m.oid, m.lomowner::regrole,
                   (SELECT md5(string_agg(encode(data, 'hex'), '' ORDER BY pageno)) FROM pg_largeobject l WHERE l.loid = m.oid))
                   AS x FROM pg_largeobject_metadata m`,
  sequences: `SELECT concat_ws('|', schemaname, sequencename, last_value) AS x FROM pg_sequences`,
  prepared: `SELECT gid AS x FROM pg_prepared_xacts`,
  replicationSlots: `SELECT slot_name AS x FROM pg_replication_slots`,
}

export interface ChecksumOptions {
  /** Tables with more estimated rows than this are hashed order-independently (faster). Default 100,000. */
  readonly largeTableRows?: number
}

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`

/** Computes the fingerprint of the database at `superuserUrl`. */
export async function databaseChecksum(
  superuserUrl: string,
  options: ChecksumOptions = {},
): Promise<DatabaseChecksum> {
  const client = new pg.Client({ connectionString: superuserUrl })
  client.on('error', () => undefined)
  await client.connect()
  try {
    // One snapshot for the whole fingerprint.
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    const parts: Record<string, string> = {}
    for (const [name, sql] of Object.entries(catalogParts)) {
      const result = await client.query<{ digest: string }>(
        `SELECT md5(coalesce(string_agg(x, E'\\n' ORDER BY x), '')) AS digest FROM (${sql}) AS part`,
      )
      parts[`catalog:${name}`] = result.rows[0]?.digest ?? ''
    }
    const tables = await client.query<{ schema: string; name: string; estimate: number }>(
      `SELECT n.nspname AS schema, c.relname AS name, c.reltuples::float8 AS estimate
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
          AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
        ORDER BY 1, 2`,
    )
    const threshold = options.largeTableRows ?? 100_000
    for (const table of tables.rows) {
      const relation = `${quote(table.schema)}.${quote(table.name)}`
      const sql =
        table.estimate > threshold
          ? `SELECT count(*) || ':' || coalesce(sum(hashtextextended(t::text, 0)::numeric), 0) AS digest FROM ${relation} AS t`
          : `SELECT md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) AS digest FROM ${relation} AS t`
      const result = await client.query<{ digest: string }>(sql)
      parts[`data:${table.schema}.${table.name}`] = result.rows[0]?.digest ?? ''
    }
    await client.query('ROLLBACK')
    const all = Object.entries(parts)
      .map(([name, digest]) => `${name}=${digest}`)
      .join('\n')
    const { createHash } = await import('node:crypto')
    return { digest: createHash('md5').update(all).digest('hex'), parts }
  } finally {
    await client.end()
  }
}
