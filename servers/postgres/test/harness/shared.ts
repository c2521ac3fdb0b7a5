import { inject } from 'vitest'

/** What the global setup provides to every test file: one seeded cluster for the whole run. */
export interface SharedPostgres {
  readonly source: 'env' | 'system' | 'embedded'
  /** Non-superuser login that can read all data (pg_read_all_data). */
  readonly url: string
  readonly superuserUrl: string
  readonly appRole: string
  /** NOLOGIN role with USAGE on shop and SELECT on shop.customers only. */
  readonly readerRole: string
  readonly passwordRole: { readonly user: string; readonly password: string } | null
  /** Rows in bulk.measurements. */
  readonly bulkRows: number
  /** Of pg_stat_statements (preloaded) and hypopg, those the cluster can install. */
  readonly extensions: readonly string[]
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: SharedPostgres
  }
}

/** The shared cluster, from a test file. */
export function sharedPostgres(): SharedPostgres {
  return inject('postgres')
}
