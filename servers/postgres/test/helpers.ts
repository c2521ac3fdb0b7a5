import { type ClientOptions, type Connection, connectInMemory } from '@keel-mcp/core/testing'
import { server } from '../src/server.js'
import { adminQuery } from './harness/index.js'

/** Connections opened by a test file; close them in afterEach/afterAll with {@link closeAll}. */
const open: Connection[] = []

/** The server in memory with a real client, connected to `url` through DATABASE_URL. */
export async function connect(
  url: string | undefined,
  options: ClientOptions & { argv?: string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<Connection> {
  const connection = await connectInMemory(server, {
    ...options,
    env: { ...(url === undefined ? {} : { DATABASE_URL: url }), ...options.env },
  })
  open.push(connection)
  return connection
}

export async function closeAll(): Promise<void> {
  await Promise.all(open.splice(0).map((connection) => connection.close()))
}

/** `url` with an application_name, so a test can find its own backends in pg_stat_activity. */
export function withApplicationName(url: string, name: string): string {
  const copy = new URL(url)
  copy.searchParams.set('application_name', name)
  return copy.toString()
}

/** Backends of one application_name that are running a statement right now. */
export function activeBackends(superuserUrl: string, applicationName: string) {
  return adminQuery<{ pid: number; query: string }>(
    superuserUrl,
    `SELECT pid, query FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'`,
    [applicationName],
  )
}

/** The text of a tool result's first content block. */
export function textOf(result: Record<string, any>): string {
  const block = (result.content as Array<{ type: string; text?: string }> | undefined)?.[0]
  return block?.type === 'text' ? (block.text ?? '') : ''
}

/** The error kind a failed tool result starts with (`not_found: …` → `not_found`). */
export function errorKind(result: Record<string, any>): string | undefined {
  return result.isError === true ? /^([a-z_]+):/.exec(textOf(result))?.[1] : undefined
}

/** A query that runs until cancelled and passes the parser gate (pg_sleep does not). */
export const SLOW_QUERY = 'SELECT count(*) FROM bulk.measurements a CROSS JOIN bulk.measurements b'
