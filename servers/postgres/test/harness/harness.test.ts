import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { createScratchDatabase, databaseChecksum, seedSampleSchema, sharedPostgres } from './index.js'

async function scalar<T>(url: string, sql: string): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const result = await client.query(sql)
    return Object.values(result.rows[0] ?? {})[0] as T
  } finally {
    await client.end()
  }
}

describe('test harness', () => {
  it('provides a superuser URL and a non-superuser app URL on the seeded database', async () => {
    const { url, superuserUrl, appRole } = sharedPostgres()
    expect(await scalar<boolean>(superuserUrl, "SELECT current_setting('is_superuser') = 'on'")).toBe(true)
    expect(await scalar<string>(url, 'SELECT current_user')).toBe(appRole)
    expect(await scalar<boolean>(url, "SELECT current_setting('is_superuser') = 'on'")).toBe(false)
    expect(await scalar<string>(url, 'SELECT count(*) FROM shop.customers')).toBe('5')
  })

  it('lists pg_stat_statements (only when preloaded) and hypopg where the cluster has them', async () => {
    const { superuserUrl, extensions } = sharedPostgres()
    const preloaded = await scalar<string>(superuserUrl, "SELECT current_setting('shared_preload_libraries')")
    const available = await scalar<string[]>(
      superuserUrl,
      "SELECT array_agg(name::text ORDER BY name) FROM pg_available_extensions WHERE name IN ('hypopg', 'pg_stat_statements')",
    )
    const expected = (available ?? []).filter(
      (name) =>
        name !== 'pg_stat_statements' ||
        preloaded
          .split(',')
          .map((part) => part.trim())
          .includes(name),
    )
    expect([...extensions].sort()).toEqual(expected)
  })

  it('seeds the bulk table', async () => {
    const { url, bulkRows } = sharedPostgres()
    expect(Number(await scalar<string>(url, 'SELECT count(*) FROM bulk.measurements'))).toBe(bulkRows)
  })

  it('computes a stable checksum of the shared database', async () => {
    const { superuserUrl } = sharedPostgres()
    const first = await databaseChecksum(superuserUrl)
    const second = await databaseChecksum(superuserUrl)
    expect(second).toEqual(first)
    expect(Object.keys(first.parts)).toContain('data:shop.orders')
    expect(Object.keys(first.parts)).toContain('data:bulk.measurements')
    expect(Object.keys(first.parts)).toContain('catalog:functions')
  })

  it('the checksum notices changed rows, sequences, comments and indexes', async () => {
    const { superuserUrl, url, readerRole } = sharedPostgres()
    const scratch = await createScratchDatabase(superuserUrl, url)
    try {
      await seedSampleSchema(scratch.superuserUrl, { readerRole })
      const changes: Array<[sql: string, part: string]> = [
        ["UPDATE shop.customers SET full_name = 'Ada King' WHERE id = 1", 'data:shop.customers'],
        ["SELECT nextval('shop.invoice_number_seq')", 'catalog:sequences'],
        ["COMMENT ON TABLE shop.orders IS 'changed'", 'catalog:comments'],
        ['DROP INDEX shop.orders_status_ordered_at_idx', 'catalog:indexes'],
      ]
      for (const [sql, part] of changes) {
        const before = await databaseChecksum(scratch.superuserUrl)
        await scalar(scratch.superuserUrl, sql)
        const after = await databaseChecksum(scratch.superuserUrl)
        expect(after.digest).not.toBe(before.digest)
        const changed = Object.keys(after.parts).filter((key) => after.parts[key] !== before.parts[key])
        expect(changed).toContain(part)
      }
    } finally {
      await scratch.drop()
    }
  })
})
