import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Database, type DatabaseOptions } from '../../src/lib/database.js'
import { classifyPgError, QueryCancelledError, redactConnectionString } from '../../src/lib/errors.js'
import {
  adminQuery,
  type PostgresInstance,
  postgresUrl,
  sharedPostgres,
  startPostgres,
  waitFor,
} from '../harness/index.js'
import { rejection } from './rejection.js'

const shared = sharedPostgres()
const opened: Database[] = []
function open(options: DatabaseOptions): Database {
  const database = new Database(options)
  opened.push(database)
  return database
}
afterAll(async () => {
  await Promise.all(opened.map((database) => database.close()))
})

describe('PostgreSQL restart', () => {
  // A cluster of its own: restarting the shared one would break the other test files.
  let cluster: PostgresInstance
  beforeAll(async () => {
    cluster = await startPostgres({ restartable: true })
  })
  afterAll(async () => {
    await cluster?.stop()
  })

  it('the pool recovers after a restart and the process survives the dropped connections', async () => {
    const backgroundErrors: Error[] = []
    const database = open({
      connectionString: cluster.url,
      poolSize: 3,
      onBackgroundError: (error) => backgroundErrors.push(error),
    })
    // Fill the pool with idle connections that the restart will kill.
    await Promise.all([1, 2, 3].map((n) => database.query('SELECT $1::int', [n])))
    await cluster.restart()
    // The first call after the restart may meet a dead idle connection: it must still succeed.
    expect((await database.query('SELECT 42')).rows).toEqual([[42]])
    expect((await database.listSchemas()).some((schema) => schema.name === 'public')).toBe(true)
    await Promise.all([1, 2, 3].map((n) => database.query('SELECT $1::int', [n])))
    // The restart dropped the idle connections; the pool reported them instead of crashing.
    expect(backgroundErrors.length).toBeGreaterThan(0)
  })
})

describe('connection failures', () => {
  it('an unreachable server is classified as unavailable without echoing the URL', async () => {
    const url = 'postgres://alice:hunter2@127.0.0.1:1/app'
    const database = open({ connectionString: url, connectionTimeoutMs: 2_000 })
    const classified = classifyPgError(await rejection(database.query('SELECT 1')))
    expect(classified).toMatchObject({ kind: 'unavailable', reason: 'connection_failed' })
    expect(JSON.stringify(classified)).not.toMatch(/alice|hunter2|127\.0\.0\.1/)
  })

  it('a wrong password is classified as unauthenticated without echoing user or password', async () => {
    const { hostname, port, pathname } = new URL(shared.url)
    const user = shared.passwordRole?.user ?? 'keel_no_such_role'
    const password = 'definitely-wrong-password'
    const url = postgresUrl({
      user,
      password,
      host: hostname,
      port: Number(port),
      database: pathname.slice(1),
    })
    const database = open({ connectionString: url })
    const error = await rejection(database.query('SELECT 1'))
    const classified = classifyPgError(error)
    expect(classified).toMatchObject({ kind: 'unauthenticated', reason: 'authentication_failed' })
    if (shared.passwordRole !== null) expect(classified.sqlstate).toBe('28P01')
    expect(JSON.stringify(classified)).not.toContain(user)
    expect(JSON.stringify(classified)).not.toContain(password)
    expect(redactConnectionString(url)).not.toContain(password)
  })

  it('the right password works for the password-auth role', async () => {
    const role = shared.passwordRole ?? { user: shared.appRole, password: '' }
    const target = new URL(shared.url)
    const url = postgresUrl({
      user: role.user,
      password: role.password || decodeURIComponent(target.password),
      host: target.hostname,
      port: Number(target.port),
      database: target.pathname.slice(1),
    })
    expect((await open({ connectionString: url }).query('SELECT current_user')).rows).toEqual([[role.user]])
  })
})

describe('role switching', () => {
  // Logged in as superuser, switched to a least-privilege role on every connection.
  const options = (extra: Partial<DatabaseOptions> = {}): DatabaseOptions => ({
    connectionString: shared.superuserUrl,
    role: shared.readerRole,
    ...extra,
  })

  it('runs every call as the configured role', async () => {
    const database = open(options({ poolSize: 2 }))
    const results = await Promise.all(
      [1, 2, 3, 4].map(() => database.readQuery("SELECT current_user, current_setting('is_superuser')")),
    )
    for (const result of results) expect(result.rows).toEqual([[shared.readerRole, 'off']])
    expect((await database.health()).user).toBe(shared.readerRole)
  })

  it('grants what the role may read and nothing more', async () => {
    const database = open(options())
    expect((await database.query('SELECT count(*) FROM shop.customers')).rows).toEqual([['5']])
    const denied = classifyPgError(await rejection(database.query('SELECT * FROM shop.orders')))
    expect(denied).toMatchObject({ kind: 'permission_denied', reason: 'insufficient_privilege' })
    // Even without the parser gate, superuser-only functions are out of reach.
    const file = classifyPgError(await rejection(database.readQuery("SELECT pg_read_file('PG_VERSION')")))
    expect(file.kind).toBe('permission_denied')
  })

  it('cannot be undone from inside a call', async () => {
    const database = open(options({ poolSize: 1 }))
    // RESET ROLE inside the transaction is rolled back with it.
    await database.readQuery("SELECT set_config('role', 'none', false)")
    expect((await database.readQuery('SELECT current_user')).rows).toEqual([[shared.readerRole]])
  })

  it('cancels a running statement although the role may not signal the login role', async () => {
    const applicationName = 'keel-test-role-cancel'
    const database = open(options({ poolSize: 3, applicationName }))
    const controller = new AbortController()
    const running = database.readQuery('SELECT pg_sleep(60)', [], { signal: controller.signal })
    const active = () =>
      adminQuery(
        shared.superuserUrl,
        `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'`,
        [applicationName],
      )
    await waitFor(async () => ((await active()).length > 0 ? true : undefined))
    controller.abort()
    expect(await rejection(running)).toBeInstanceOf(QueryCancelledError)
    await waitFor(async () => ((await active()).length === 0 ? true : undefined), 5_000)
  })

  it('fails clearly when the role does not exist', async () => {
    const database = open(options({ role: 'keel_role_that_does_not_exist' }))
    const classified = classifyPgError(await rejection(database.query('SELECT 1')))
    expect(classified.message).toContain('keel_role_that_does_not_exist')
    expect(classified).toMatchObject({ kind: 'internal', reason: 'configuration' })
  })
})
