import { afterAll, describe, expect, it } from 'vitest'
import { Database, type DatabaseOptions, toLikePattern } from '../../src/lib/database.js'
import { sharedPostgres } from '../harness/index.js'

const shared = sharedPostgres()
const opened: Database[] = []
function open(options: DatabaseOptions = {}): Database {
  const database = new Database({ connectionString: shared.url, ...options })
  opened.push(database)
  return database
}
afterAll(async () => {
  await Promise.all(opened.map((database) => database.close()))
})

const database = open()
const names = (tables: ReadonlyArray<{ schema: string; name: string }>) =>
  tables.map((table) => `${table.schema}.${table.name}`)

describe('toLikePattern', () => {
  it.each([
    ['order', '%order%'],
    ['order_', '%order\\_%'],
    ['100%', '%100\\%%'],
    ['back\\slash', '%back\\\\slash%'],
    ['cust*', 'cust%'],
    ['*_items', '%\\_items'],
    ['ord?rs', 'ord_rs'],
  ])('turns %j into %j', (input, expected) => {
    expect(toLikePattern(input)).toBe(expected)
  })
})

describe('listSchemas', () => {
  it('lists user schemas first with comments, system schemas flagged, no toast or temp schemas', async () => {
    const schemas = await database.listSchemas()
    const byName = new Map(schemas.map((schema) => [schema.name, schema]))
    expect(byName.get('shop')).toMatchObject({
      comment: 'Online shop: customers, products and orders',
      system: false,
      accessible: true,
      tableCount: 5,
    })
    expect(byName.get('analytics')).toMatchObject({ system: false, tableCount: 2 })
    expect(byName.get('public')).toMatchObject({ system: false, tableCount: 1 })
    expect(byName.get('pg_catalog')).toMatchObject({ system: true })
    expect(byName.get('information_schema')).toMatchObject({ system: true })
    expect(
      schemas.some((schema) => schema.name.startsWith('pg_toast') || schema.name.startsWith('pg_temp')),
    ).toBe(false)
    const firstSystem = schemas.findIndex((schema) => schema.system)
    expect(schemas.slice(firstSystem).every((schema) => schema.system)).toBe(true)
  })

  it('honours the schema allow-list', async () => {
    const schemas = await open({ schemas: ['analytics', 'shop'] }).listSchemas()
    expect(schemas.map((schema) => schema.name)).toEqual(['analytics', 'shop'])
  })
})

describe('listTables', () => {
  it('lists tables, views and materialized views of user schemas with estimates and comments', async () => {
    const page = await database.listTables()
    expect(names(page.tables)).toEqual([
      'analytics.daily_revenue',
      'analytics.events',
      'bulk.measurements',
      'public.Mixed Case',
      'shop.customers',
      'shop.order_items',
      'shop.order_totals',
      'shop.orders',
      'shop.products',
    ])
    const customers = page.tables.find((table) => table.name === 'customers')
    expect(customers).toEqual({
      schema: 'shop',
      name: 'customers',
      kind: 'table',
      estimatedRows: 5,
      comment: 'People who can place orders',
    })
    expect(page.tables.find((table) => table.name === 'order_totals')).toMatchObject({
      kind: 'view',
      estimatedRows: null,
      comment: 'Value of each order',
    })
    expect(page.tables.find((table) => table.name === 'daily_revenue')).toMatchObject({
      kind: 'materialized_view',
    })
    expect(page).toMatchObject({ total: 9, offset: 0, nextOffset: null })
  })

  it('filters by schema, kind and a case-insensitive name pattern', async () => {
    expect(names((await database.listTables({ schema: 'shop', pattern: 'ORDER' })).tables)).toEqual([
      'shop.order_items',
      'shop.order_totals',
      'shop.orders',
    ])
    // `_` is a literal underscore, not LIKE's single-character wildcard.
    expect(names((await database.listTables({ pattern: 'order_' })).tables)).toEqual([
      'shop.order_items',
      'shop.order_totals',
    ])
    expect(names((await database.listTables({ pattern: 'cust*' })).tables)).toEqual(['shop.customers'])
    expect(names((await database.listTables({ kinds: ['view', 'materialized_view'] })).tables)).toEqual([
      'analytics.daily_revenue',
      'shop.order_totals',
    ])
    expect((await database.listTables({ pattern: '%' })).tables).toEqual([])
  })

  it('paginates with a total and the next offset', async () => {
    const first = await database.listTables({ schema: 'shop', limit: 2 })
    expect(first).toMatchObject({ total: 5, limit: 2, offset: 0, nextOffset: 2 })
    const last = await database.listTables({ schema: 'shop', limit: 2, offset: 4 })
    expect(last).toMatchObject({ total: 5, nextOffset: null })
    expect(names(last.tables)).toEqual(['shop.products'])
    const beyond = await database.listTables({ schema: 'shop', limit: 2, offset: 10 })
    expect(beyond).toMatchObject({ tables: [], total: 5, nextOffset: null })
  })

  it('lists a system schema only when asked for it', async () => {
    const page = await database.listTables({ schema: 'pg_catalog', pattern: 'pg_class' })
    expect(names(page.tables)).toEqual(['pg_catalog.pg_class'])
  })

  it('treats hostile patterns and schema names as plain data', async () => {
    const page = await database.listTables({
      schema: "shop' OR '1'='1",
      pattern: "'; DROP TABLE shop.orders; --",
    })
    expect(page).toMatchObject({ tables: [], total: 0 })
  })

  it('honours the schema allow-list', async () => {
    const restricted = open({ schemas: ['analytics'] })
    expect(names((await restricted.listTables()).tables)).toEqual([
      'analytics.daily_revenue',
      'analytics.events',
    ])
    expect(await restricted.listTables({ schema: 'shop' })).toMatchObject({ tables: [], total: 0 })
  })
})

describe('describeTable', () => {
  it('describes columns, keys, foreign keys both ways and indexes', async () => {
    const orders = await database.describeTable('shop', 'orders')
    expect(orders).toMatchObject({
      schema: 'shop',
      name: 'orders',
      kind: 'table',
      estimatedRows: 8,
      comment: null,
    })
    expect(orders?.columns).toEqual([
      {
        name: 'id',
        type: 'bigint',
        nullable: false,
        default: "nextval('shop.orders_id_seq'::regclass)",
        comment: null,
        identity: null,
        generated: null,
      },
      expect.objectContaining({ name: 'customer_id', type: 'integer', nullable: false, default: null }),
      expect.objectContaining({
        name: 'status',
        type: 'shop.order_status',
        default: "'pending'::shop.order_status",
      }),
      expect.objectContaining({ name: 'ordered_at', type: 'timestamp with time zone' }),
      expect.objectContaining({ name: 'note', type: 'text', nullable: true }),
    ])
    expect(orders?.primaryKey).toEqual({ name: 'orders_pkey', columns: ['id'] })
    expect(orders?.foreignKeys).toEqual([
      {
        name: 'orders_customer_id_fkey',
        columns: ['customer_id'],
        referencedSchema: 'shop',
        referencedTable: 'customers',
        referencedColumns: ['id'],
        onUpdate: 'no_action',
        onDelete: 'cascade',
        definition: 'FOREIGN KEY (customer_id) REFERENCES shop.customers(id) ON DELETE CASCADE',
      },
    ])
    expect(orders?.referencedBy).toEqual([
      expect.objectContaining({
        name: 'order_items_order_id_fkey',
        schema: 'shop',
        table: 'order_items',
        columns: ['order_id'],
        referencedColumns: ['id'],
      }),
    ])
    expect(orders?.indexes.map((index) => index.name)).toEqual([
      'orders_pkey',
      'orders_customer_id_idx',
      'orders_status_ordered_at_idx',
    ])
    expect(orders?.indexes[2]).toEqual({
      name: 'orders_status_ordered_at_idx',
      definition:
        'CREATE INDEX orders_status_ordered_at_idx ON shop.orders USING btree (status, ordered_at DESC)',
      method: 'btree',
      unique: false,
      primary: false,
      valid: true,
    })
    expect(orders?.totalBytes).toBeGreaterThan(0)
  })

  it('reports identity and generated columns, comments, checks and unique constraints', async () => {
    const customers = await database.describeTable('shop', 'customers')
    expect(customers?.comment).toBe('People who can place orders')
    expect(customers?.columns[0]).toMatchObject({ name: 'id', identity: 'always' })
    expect(customers?.columns[1]).toMatchObject({
      name: 'email',
      comment: 'Login and contact address, unique',
    })
    expect(customers?.columns[3]).toMatchObject({
      name: 'country',
      type: 'character(2)',
      default: "'NL'::bpchar",
    })
    expect(customers?.referencedBy.map((key) => `${key.schema}.${key.table}`)).toEqual([
      'analytics.events',
      'shop.orders',
    ])

    const products = await database.describeTable('shop', 'products')
    expect(products?.columns.find((column) => column.name === 'price_with_vat')).toMatchObject({
      type: 'numeric(10,2)',
      generated: 'stored',
      // Deparsing differs between major versions: round((price * 1.21), 2) on 15.
      default: expect.stringMatching(/^round\(\(?price \* 1\.21\)?, 2\)$/),
    })
    expect(products?.columns.find((column) => column.name === 'sku')?.type).toBe('character varying(32)')
    expect(products?.columns.find((column) => column.name === 'tags')).toMatchObject({
      type: 'text[]',
      default: "'{}'::text[]",
    })
    expect(products?.constraints).toEqual([
      {
        name: 'products_price_check',
        type: 'check',
        columns: ['price'],
        definition: 'CHECK (price >= 0::numeric)',
      },
      { name: 'products_sku_key', type: 'unique', columns: ['sku'], definition: 'UNIQUE (sku)' },
    ])
  })

  it('reports composite keys in key order and ON UPDATE actions', async () => {
    const items = await database.describeTable('shop', 'order_items')
    expect(items?.primaryKey).toEqual({ name: 'order_items_pkey', columns: ['order_id', 'product_id'] })
    expect(items?.foreignKeys.find((key) => key.referencedTable === 'products')).toMatchObject({
      onUpdate: 'cascade',
      onDelete: 'no_action',
    })
  })

  it('describes views and materialized views with their definition', async () => {
    const view = await database.describeTable('shop', 'order_totals')
    expect(view).toMatchObject({ kind: 'view', estimatedRows: null, primaryKey: null, indexes: [] })
    expect(view?.viewDefinition).toContain('sum(')
    expect(view?.columns.map((column) => column.name)).toEqual(['order_id', 'customer_id', 'total'])
    const matview = await database.describeTable('analytics', 'daily_revenue')
    expect(matview?.kind).toBe('materialized_view')
    expect(matview?.comment).toBe('Revenue per day, refreshed nightly')
  })

  it('matches names exactly, including quoted mixed-case names', async () => {
    const mixed = await database.describeTable('public', 'Mixed Case')
    expect(mixed?.columns.map((column) => column.name)).toEqual(['Id', 'Value'])
    expect(await database.describeTable('public', 'mixed case')).toBeNull()
  })

  it('returns null for a missing table', async () => {
    expect(await database.describeTable('shop', 'nope')).toBeNull()
    expect(await database.describeTable("shop'; --", 'orders')).toBeNull()
  })

  it('honours the schema allow-list, also for referencing tables', async () => {
    const restricted = open({ schemas: ['shop'] })
    expect(await restricted.describeTable('analytics', 'events')).toBeNull()
    const customers = await restricted.describeTable('shop', 'customers')
    expect(customers?.referencedBy.map((key) => key.table)).toEqual(['orders'])
  })
})
