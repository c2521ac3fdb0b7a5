import type { TestClient } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminQuery, type PostgresInstance, sharedPostgres, startPostgres, waitFor } from './harness/index.js'
import { closeAll, connect, errorKind, textOf } from './helpers.js'

/**
 * Two databases in one server: the shared cluster as the default (DATABASE_URL) and a cluster of
 * this file's own as `--database second=…`, each with its own pool. The second is stopped
 * mid-test: calls to it fail fast as unavailable, and the default keeps answering.
 */
const shared = sharedPostgres()
let second: PostgresInstance
let client: TestClient

beforeAll(async () => {
  second = await startPostgres({ restartable: true, database: 'keel_second' })
  await adminQuery(
    second.superuserUrl,
    `CREATE SCHEMA inventory;
     CREATE TABLE inventory.parts (id int PRIMARY KEY, name text NOT NULL);
     INSERT INTO inventory.parts VALUES (1, 'bolt'), (2, 'nut');`,
  )
  client = (await connect(shared.url, { argv: ['--database', `second=${second.url}`, '--pool-size', '3'] }))
    .client
})

afterAll(async () => {
  await closeAll()
  await second?.stop()
})

const databaseOf = async (database?: string) => {
  const result = await client.callTool({
    name: 'query',
    arguments: { sql: 'SELECT current_database()', ...(database ? { database } : {}) },
  })
  return result.isError ? errorKind(result) : result.structuredContent.rows[0][0]
}

describe('several databases in one server', () => {
  it('serves the default and the named database, each tool taking database', async () => {
    expect(await databaseOf()).toBe('keel_test')
    expect(await databaseOf('second')).toBe('keel_second')
    const tables = await client.callTool({ name: 'list_tables', arguments: { database: 'second' } })
    expect(tables.structuredContent.tables.map((table: { name: string }) => table.name)).toEqual(['parts'])
    const described = await client.callTool({
      name: 'describe_table',
      arguments: { database: 'second', table: 'parts' },
    })
    expect(described.structuredContent.schema).toBe('inventory')
  })

  it('lists database on every tool, since there is a choice', async () => {
    for (const tool of (await client.listTools()).tools) {
      expect(tool.inputSchema.properties).toHaveProperty('database')
    }
  })

  it('names the databases there are when a call names another', async () => {
    const result = await client.callTool({ name: 'query', arguments: { sql: 'SELECT 1', database: 'third' } })
    expect(errorKind(result)).toBe('invalid_argument')
    expect(textOf(result)).toContain('Use one of: default, second')
  })

  it('lists and reads the resources of each database under its own name', async () => {
    const { resources } = await client.listResources()
    const uris = resources.map((resource: { uri: string }) => resource.uri)
    expect(uris).toContain('postgres://keel_test/shop/orders')
    expect(uris).toContain('postgres://second/inventory/parts')
    const { contents } = await client.readResource({ uri: 'postgres://second/inventory/parts' })
    expect(JSON.parse(String(contents[0]?.text)).name).toBe('parts')
  })

  it('takes the named databases from POSTGRES_DATABASES too, the first of them the default without DATABASE_URL', async () => {
    const viaEnv = (
      await connect(undefined, { env: { POSTGRES_DATABASES: `one=${second.url},two=${shared.url}` } })
    ).client
    const ask = async (database?: string) =>
      (
        await viaEnv.callTool({
          name: 'query',
          arguments: { sql: 'SELECT current_database()', ...(database ? { database } : {}) },
        })
      ).structuredContent.rows[0][0]
    expect([await ask(), await ask('one'), await ask('two')]).toEqual([
      'keel_second',
      'keel_second',
      'keel_test',
    ])
  })

  it('keeps serving the default while the second is stopped mid-call, and reports the second unavailable', async () => {
    const running = client.callTool({
      name: 'query',
      arguments: { sql: 'SELECT count(*) FROM generate_series(1, 200000000)', database: 'second' },
    })
    // The slow call is running on the second's server when its cluster goes down.
    await waitFor(async () => {
      const rows = await adminQuery(
        second.superuserUrl,
        "SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%generate_series(1, 200000000)%' AND pid <> pg_backend_pid()",
      )
      return rows.length > 0 ? true : undefined
    })
    await second.stop()
    expect(errorKind(await running)).toBe('unavailable')
    const [down, up, schemas] = await Promise.all([
      databaseOf('second'),
      databaseOf(),
      client.callTool({ name: 'list_schemas', arguments: {} }),
    ])
    expect(down).toBe('unavailable')
    const failed = await client.callTool({ name: 'list_schemas', arguments: { database: 'second' } })
    expect(textOf(failed)).not.toContain(new URL(second.url).password)
    expect(up).toBe('keel_test')
    expect(schemas.isError).toBeFalsy()
    // Listing resources leaves the stopped database out instead of failing.
    const { resources } = await client.listResources()
    expect(resources.map((resource: { uri: string }) => resource.uri)).toContain(
      'postgres://keel_test/shop/orders',
    )
    expect(resources.some((resource: { uri: string }) => resource.uri.startsWith('postgres://second/'))).toBe(
      false,
    )
  })
})
