/**
 * The extensions the DBA tools lean on, found through the catalog (never assumed to be in the
 * search path): pg_stat_statements for the workload, hypopg for hypothetical indexes.
 */
import type { PoolClient } from 'pg'

type Queryable = Pick<PoolClient, 'query'>

export type ExtensionName = 'pg_stat_statements' | 'hypopg'

export interface InstalledExtension {
  /** The schema the extension's objects live in, quoted for SQL. */
  readonly schema: string
  readonly version: string
}

/** How to get each extension, for the "not installed" answer. */
const howToInstall: Readonly<Record<ExtensionName, string>> = {
  pg_stat_statements:
    'Add pg_stat_statements to shared_preload_libraries in postgresql.conf, restart PostgreSQL, then run CREATE EXTENSION pg_stat_statements; in this database (it ships with PostgreSQL; on managed services it is usually preloaded already).',
  hypopg:
    'Install the hypopg package on the database server (Debian/Ubuntu: postgresql-<version>-hypopg; it is available on most managed services), then run CREATE EXTENSION hypopg; in this database.',
}

/** An extension a tool needs is not installed (or not usable) in the database. */
export class ExtensionMissingError extends Error {
  readonly extension: ExtensionName
  readonly hint: string
  constructor(extension: ExtensionName, message: string) {
    super(message)
    this.name = 'ExtensionMissingError'
    this.extension = extension
    this.hint = howToInstall[extension]
  }
}

const quoteIdentifier = (name: string) => `"${name.replace(/"/g, '""')}"`

/** The installed extension, or undefined. */
export async function findExtension(
  client: Queryable,
  name: ExtensionName,
): Promise<InstalledExtension | undefined> {
  const result = await client.query<{ schema: string; version: string }>(
    `SELECT n.nspname AS schema, e.extversion AS version
       FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
      WHERE e.extname = $1`,
    [name],
  )
  const row = result.rows[0]
  return row === undefined ? undefined : { schema: quoteIdentifier(row.schema), version: row.version }
}

/** The installed extension, or {@link ExtensionMissingError} saying how to install it. */
export async function requireExtension(client: Queryable, name: ExtensionName): Promise<InstalledExtension> {
  const found = await findExtension(client, name)
  if (found === undefined) {
    throw new ExtensionMissingError(name, `The ${name} extension is not installed in this database.`)
  }
  return found
}
