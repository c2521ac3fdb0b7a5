import { fileURLToPath } from 'node:url'
import { type Connection, connectHttp, connectStdio, spawnHttp } from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { sharedPostgres, waitFor } from './harness/index.js'
import { activeBackends, closeAll, connect, SLOW_QUERY, withApplicationName } from './helpers.js'

/** `query` and `explain_query` as MCP tasks (2025-11-25): run in the background, polled, cancellable. */
const shared = sharedPostgres()
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))

const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
  await closeAll()
})

type Client = Connection['client']

async function startTask(client: Client, name: string, args: Record<string, unknown>, task = {}) {
  const created = await client.request('tools/call', { name, arguments: args, task })
  return created.task as { taskId: string; status: string }
}

async function rejection(promise: Promise<unknown>): Promise<{ code?: number; message: string }> {
  try {
    await promise
  } catch (error) {
    return error as { code?: number; message: string }
  }
  throw new Error('expected a JSON-RPC error')
}

describe('postgres tools as tasks', () => {
  it('lists query and explain_query as task-capable', async () => {
    const { client } = await connect(shared.url)
    const { tools } = await client.listTools()
    const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]))
    expect(support).toMatchObject({ query: 'optional', explain_query: 'optional' })
    expect(support.list_tables).toBeUndefined()
  })

  it('runs a query as a task whose result is what a plain call returns', async () => {
    const { client } = await connect(shared.url)
    const args = { sql: 'SELECT count(*) AS n FROM bulk.measurements' }
    const task = await startTask(client, 'query', args)
    expect(task.status).toBe('working')
    const result = await client.request('tasks/result', { taskId: task.taskId })
    const plain = await client.callTool({ name: 'query', arguments: args })
    expect(result.structuredContent).toEqual(plain.structuredContent)
    expect((await client.request('tasks/get', { taskId: task.taskId })).status).toBe('completed')
    const plan = await startTask(client, 'explain_query', { sql: 'SELECT 1' })
    expect((await client.request('tasks/result', { taskId: plan.taskId })).isError).toBeFalsy()
  })

  it('cancels the backend when the task is cancelled (checked in pg_stat_activity)', async () => {
    const application = `keel-task-cancel-${Date.now()}`
    const { client } = await connect(withApplicationName(shared.url, application))
    const task = await startTask(client, 'query', { sql: SLOW_QUERY })
    await waitFor(async () =>
      (await activeBackends(shared.superuserUrl, application)).length === 1 ? true : undefined,
    )
    const cancelled = await client.request('tasks/cancel', { taskId: task.taskId })
    expect(cancelled.status).toBe('cancelled')
    await waitFor(async () =>
      (await activeBackends(shared.superuserUrl, application)).length === 0 ? true : undefined,
    )
    expect((await client.request('tasks/get', { taskId: task.taskId })).status).toBe('cancelled')
  })

  it('forgets a finished task after its ttl', async () => {
    const { client } = await connect(shared.url)
    const task = await startTask(client, 'query', { sql: 'SELECT 1' }, { ttl: 150 })
    await client.request('tasks/result', { taskId: task.taskId })
    await new Promise((resolve) => setTimeout(resolve, 300))
    const expired = await rejection(client.request('tasks/get', { taskId: task.taskId }))
    expect(expired.code).toBe(-32602)
    expect(expired.message).toContain('expired')
  })

  it('runs as a task over stdio (the built bin)', async () => {
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN],
      env: { DATABASE_URL: shared.url },
      generation: 'v1',
    })
    open.push(connection)
    const task = await startTask(connection.client, 'query', { sql: 'SELECT 42 AS answer' })
    const result = await connection.client.request('tasks/result', { taskId: task.taskId })
    expect(result.structuredContent.rows).toEqual([[42]])
  })

  it('keeps one HTTP session’s tasks from another (the built bin)', async () => {
    const server = await spawnHttp(process.execPath, [BIN], { env: { DATABASE_URL: shared.url } })
    open.push(server)
    const alice = await connectHttp(server.url, { generation: 'v1' })
    const bob = await connectHttp(server.url)
    open.push(alice, bob)
    const task = await startTask(alice.client, 'query', { sql: 'SELECT 1' })
    await alice.client.request('tasks/result', { taskId: task.taskId })
    const foreign = await rejection(bob.client.request('tasks/get', { taskId: task.taskId }))
    expect(foreign.code).toBe(-32602)
  })
})
