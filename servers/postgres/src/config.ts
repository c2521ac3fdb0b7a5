import { type OptionSpecs, type PositionalSpec, z } from '@keel-mcp/core'

/** Most rows one `query` call may return, whatever `max_rows` or `--max-rows` say. */
export const HARD_MAX_ROWS = 100_000

export type SslMode = 'disable' | 'require' | 'verify-ca' | 'verify-full'

/** The postgres server's own options (the common flags come from core). */
export interface PostgresOptions {
  databaseUrl: string | undefined
  sslMode: SslMode | undefined
  sslCa: string | undefined
  poolSize: number
  idleConnections: number
  maxRows: number
  statementTimeoutMs: number
  role: string | undefined
  schemas: string[] | undefined
  /** Named databases (`--database name=url`), besides the default one. */
  databases: DatabaseTargetOption[] | undefined
}

export interface DatabaseTargetOption {
  readonly name: string
  readonly url: string
}

/** A target's name: what tools take as `database` and resources use as their first segment. */
export const targetNamePattern = /^[A-Za-z][A-Za-z0-9_-]{0,39}$/

/**
 * Core splits repeated list options on commas; a URL may hold commas (several hosts), so pieces
 * that do not start a new `name=` are glued back onto the one before.
 */
function rejoinTargets(items: string[]): string[] {
  const joined: string[] = []
  for (const item of items) {
    if (/^[A-Za-z][A-Za-z0-9_-]*=/.test(item) || joined.length === 0) joined.push(item)
    else joined[joined.length - 1] += `,${item}`
  }
  return joined
}

const databaseTargets = z
  .array(z.string())
  .transform(rejoinTargets)
  .transform((items, context) => {
    const targets: DatabaseTargetOption[] = []
    for (const item of items) {
      const equals = item.indexOf('=')
      const name = equals < 0 ? '' : item.slice(0, equals)
      const url = equals < 0 ? '' : item.slice(equals + 1)
      // Never echo the value: it may hold a password.
      if (!targetNamePattern.test(name) || !/^postgres(ql)?:\/\/\S*$/i.test(url)) {
        context.addIssue({
          code: 'custom',
          message: 'each must be NAME=postgres://… (NAME: a letter, then letters, digits, _ or -)',
        })
        return z.NEVER
      }
      if (name === 'default') {
        context.addIssue({
          code: 'custom',
          message: 'default is the name of DATABASE_URL’s database; choose another',
        })
        return z.NEVER
      }
      if (targets.some((target) => target.name === name)) {
        context.addIssue({ code: 'custom', message: `the name ${name} is given twice` })
        return z.NEVER
      }
      targets.push({ name, url })
    }
    return targets
  })
  .optional()

// Messages never echo the value: it may be a connection string with a password in it.
const databaseUrl = z
  .string()
  .regex(/^postgres(ql)?:\/\/\S*$/i, 'must be a postgres:// or postgresql:// URL')
  .optional()

const integer = (min: number, max: number, fallback: number) =>
  z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`)
    .default(fallback)

export const options: OptionSpecs<PostgresOptions> = {
  databaseUrl: {
    flag: 'database-url',
    env: 'DATABASE_URL',
    type: 'string',
    placeholder: 'url',
    secret: true,
    description:
      'postgres:// URL (prefer the env var: argv shows in process lists). Without it, the standard PG* variables apply.',
    schema: databaseUrl,
  },
  sslMode: {
    flag: 'ssl-mode',
    env: 'PGSSLMODE',
    type: 'string',
    placeholder: 'mode',
    description:
      'disable | require | verify-ca | verify-full (default: from the URL; verify-full when --ssl-ca is set).',
    schema: z
      .enum(['disable', 'require', 'verify-ca', 'verify-full'], {
        // libpq's prefer/allow fall back to plain text silently; node-postgres cannot, and neither should we.
        error: 'must be disable, require, verify-ca or verify-full (prefer and allow are not supported)',
      })
      .optional(),
  },
  sslCa: {
    flag: 'ssl-ca',
    env: 'PGSSLROOTCERT',
    type: 'string',
    placeholder: 'file',
    description: 'PEM file of the CA that signed the server certificate.',
    schema: z.string().min(1, 'must be a file path').optional(),
  },
  poolSize: {
    flag: 'pool-size',
    env: 'POSTGRES_POOL_SIZE',
    type: 'string',
    placeholder: 'n',
    description: 'Connections per database at most (default 10, capped at half the free max_connections).',
    schema: integer(1, 100, 10),
  },
  idleConnections: {
    flag: 'idle-connections',
    env: 'POSTGRES_IDLE_CONNECTIONS',
    type: 'string',
    placeholder: 'n',
    description:
      "Connections kept open while idle, and one of the function policy's (default 1; 0: all close after 10 s idle).",
    schema: integer(0, 100, 1),
  },
  maxRows: {
    flag: 'max-rows',
    env: 'POSTGRES_MAX_ROWS',
    type: 'string',
    placeholder: 'n',
    description: `Rows a query returns when the call does not say (default 200, at most ${HARD_MAX_ROWS}).`,
    schema: integer(1, HARD_MAX_ROWS, 200),
  },
  statementTimeoutMs: {
    flag: 'statement-timeout',
    env: 'POSTGRES_STATEMENT_TIMEOUT_MS',
    type: 'string',
    placeholder: 'ms',
    description: 'statement_timeout of every call; the statement is cancelled on the server (default 30000).',
    schema: integer(100, 3_600_000, 30_000),
  },
  role: {
    flag: 'role',
    env: 'POSTGRES_ROLE',
    type: 'string',
    placeholder: 'name',
    description: 'SET ROLE to this (least-privilege) role on every connection.',
    schema: z
      .string()
      .regex(
        /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/,
        'must be a plain identifier (letters, digits, _ and $; at most 63 characters)',
      )
      .optional(),
  },
  databases: {
    flag: 'database',
    env: 'POSTGRES_DATABASES',
    type: 'string',
    multiple: true,
    secret: true,
    placeholder: 'name=url',
    description:
      'A named database, repeatable (env: comma-separated). Tools take database: name; DATABASE_URL stays the default.',
    schema: databaseTargets,
  },
  schemas: {
    flag: 'schemas',
    env: 'POSTGRES_SCHEMAS',
    type: 'string',
    multiple: true,
    placeholder: 'a,b',
    description: 'Only these schemas in list_*, describe_table and resources (grants still decide access).',
    schema: z.array(z.string().min(1)).min(1, 'must name at least one schema').optional(),
  },
}

/** The reference server took the URL as its one argument; so do we, with a process-list warning. */
export const positionals: PositionalSpec = {
  name: 'database-url',
  description:
    'postgres:// URL, as the reference server takes it (visible in process lists: prefer DATABASE_URL)',
  schema: z
    .array(z.string())
    .max(1, 'give at most one database URL')
    .refine((values) => values.every((value) => databaseUrl.safeParse(value).success), {
      message: 'must be a postgres:// or postgresql:// URL',
    }),
}

export const helpFooter = `Environment:
  DATABASE_URL                 postgres://user:password@host:5432/database?sslmode=verify-full
  PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD, PGPASSFILE
                               used when no URL is given (libpq conventions)

Every statement runs in a READ ONLY transaction that is rolled back, after a PostgreSQL
parser gate; connect as a SELECT-only role all the same (see the README).`
