import { afterEach, describe, expect, it } from 'vitest'
import { defineServer, svgIcon, ToolError, toolFactory, z } from '../src/index.js'
import { type RunningServer, run } from '../src/run.js'
import { RELATED_TASK_META_KEY, TaskRegistry } from '../src/tasks.js'
import { type ClientOptions, type Connection, connectHttp, connectInMemory } from '../src/testing/index.js'

interface Deps {
  /** Calls of `wait` whose signal was aborted, by the `tag` they were given. */
  aborted: string[]
  started: string[]
}

const defineTool = toolFactory<Deps>()
const ICON = svgIcon(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7"/></svg>',
)

const wait = defineTool({
  name: 'wait',
  title: 'Wait',
  description: 'Waits, reporting progress, until done or cancelled.',
  input: {
    ms: z.number().int().min(0).max(60_000).describe('How long'),
    tag: z.string().default('').describe('A label'),
    fail: z.boolean().default(false).describe('End with a tool error'),
  },
  output: { waited: z.number(), tag: z.string() },
  annotations: { readOnlyHint: true, openWorldHint: false },
  taskSupport: 'optional',
  icons: [ICON],
  async run({ ms, tag, fail }, { deps, signal, progress }) {
    deps.started.push(tag)
    await progress(0, 2, 'started')
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, ms)
      signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer)
          deps.aborted.push(tag)
          reject(signal.reason)
        },
        { once: true },
      )
    })
    await progress(2, 2, 'done')
    if (fail) throw new ToolError('conflict', `wait ${tag} failed on purpose`)
    return { data: { waited: ms, tag } }
  },
})

const background = defineTool({
  name: 'run_in_background',
  title: 'Background',
  description: 'Only runs as a task.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: false },
  taskSupport: 'required',
  run: () => ({ text: 'done in the background' }),
})

const plain = defineTool({
  name: 'echo',
  title: 'Echo',
  description: 'Never a task.',
  input: { message: z.string().describe('Text') },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ message }) => ({ text: message }),
})

const spec = defineServer<Deps, Record<string, never>>({
  name: 'tasks-fixture',
  version: '1.0.0',
  description: 'tasks fixture',
  icons: [ICON],
  tools: [wait, background, plain],
  createDeps: () => ({ aborted: [], started: [] }),
})

const open: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => {})
})

async function memory(options: ClientOptions = {}) {
  const connection = await connectInMemory(spec, options)
  open.push(connection)
  return connection
}

type Http = RunningServer<Deps, Record<string, never>> & {
  http: NonNullable<RunningServer<Deps, Record<string, never>>['http']>
}

async function http(extra: string[] = []): Promise<Http> {
  const server = await run(spec, {
    argv: ['--transport', 'http', '--port', '0', ...extra],
    env: { LOG_LEVEL: 'silent' },
    manageProcess: false,
  })
  if (!server?.http) throw new Error('no http endpoint')
  open.push(server)
  return server as Http
}

async function httpClient(
  server: Http,
  options: Parameters<typeof connectHttp>[1] = {},
): Promise<Connection> {
  const connection = await connectHttp(server.http.url, options)
  open.push(connection)
  return connection
}

type Client = Connection['client']

async function startTask(client: Client, args: Record<string, unknown>, task: Record<string, unknown> = {}) {
  const created = await client.request('tools/call', { name: 'wait', arguments: args, task })
  return created.task as { taskId: string; status: string; ttl: number; pollInterval: number }
}

async function pollUntil(client: Client, taskId: string, statuses: string[]) {
  for (let round = 0; round < 200; round++) {
    const task = await client.request('tasks/get', { taskId })
    if (statuses.includes(task.status)) return task
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`task ${taskId} never reached ${statuses.join('/')}`)
}

async function rejection(promise: Promise<unknown>): Promise<{ code?: number; message: string }> {
  try {
    await promise
  } catch (error) {
    return error as { code?: number; message: string }
  }
  throw new Error('expected a JSON-RPC error')
}

describe.each([
  ['v2', { generation: 'v2' as const }],
  ['v1', { generation: 'v1' as const }],
])('tasks with the %s client (2025 era, in memory)', (_label, generation) => {
  it('offers tasks and lists each tool’s task support and icons', async () => {
    const { client } = await memory(generation)
    expect(client.getServerCapabilities()?.tasks).toEqual({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    })
    const { tools } = await client.listTools()
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]))
    expect(byName.wait?.execution).toEqual({ taskSupport: 'optional' })
    expect(byName.run_in_background?.execution).toEqual({ taskSupport: 'required' })
    expect(byName.echo?.execution).toBeUndefined()
    expect(byName.wait?.icons).toEqual([ICON])
    expect(client.getServerVersion()).toMatchObject({ icons: [ICON] })
  })

  it('runs a call as a task, polled to completion, whose result is what a plain call returns', async () => {
    const statuses: string[] = []
    const { client } = await memory({
      ...generation,
      onTaskStatus: (params) => statuses.push(String(params.status)),
    })
    const task = await startTask(client, { ms: 50, tag: 'a' }, { ttl: 60_000 })
    expect(task.status).toBe('working')
    expect(task.ttl).toBe(60_000)
    expect(task.pollInterval).toBeGreaterThan(0)
    const done = await pollUntil(client, task.taskId, ['completed', 'failed', 'cancelled'])
    expect(done.status).toBe('completed')
    const result = await client.request('tasks/result', { taskId: task.taskId })
    const plainResult = await client.callTool({ name: 'wait', arguments: { ms: 50, tag: 'a' } })
    expect(result.structuredContent).toEqual(plainResult.structuredContent)
    expect(result.content).toEqual(plainResult.content)
    expect(result._meta?.[RELATED_TASK_META_KEY]).toEqual({ taskId: task.taskId })
    await expect.poll(() => statuses).toContain('completed')
  })

  it('makes tasks/result wait for a running task', async () => {
    const { client } = await memory(generation)
    const task = await startTask(client, { ms: 150, tag: 'b' })
    const result = await client.request('tasks/result', { taskId: task.taskId })
    expect(result.structuredContent).toEqual({ waited: 150, tag: 'b' })
    expect((await client.request('tasks/get', { taskId: task.taskId })).status).toBe('completed')
  })

  it('marks a task whose tool failed as failed, with the tool error as its result', async () => {
    const { client } = await memory(generation)
    const task = await startTask(client, { ms: 0, tag: 'c', fail: true })
    const done = await pollUntil(client, task.taskId, ['completed', 'failed'])
    expect(done.status).toBe('failed')
    expect(done.statusMessage).toContain('wait c failed on purpose')
    const result = await client.request('tasks/result', { taskId: task.taskId })
    expect(result.isError).toBe(true)
    expect(result.content[0].text).toBe('conflict: wait c failed on purpose')
  })

  it('cancels a running task: the tool’s signal aborts and the status stays cancelled', async () => {
    const connection = await memory(generation)
    const { client } = connection
    const task = await startTask(client, { ms: 30_000, tag: 'cancel-me' })
    await expect.poll(() => connection.runtime.deps.started).toContain('cancel-me')
    const cancelled = await client.request('tasks/cancel', { taskId: task.taskId })
    expect(cancelled.status).toBe('cancelled')
    await expect.poll(() => connection.runtime.deps.aborted).toContain('cancel-me')
    expect((await client.request('tasks/get', { taskId: task.taskId })).status).toBe('cancelled')
    const again = await rejection(client.request('tasks/cancel', { taskId: task.taskId }))
    expect(again.code).toBe(-32602)
    expect(again.message).toContain('already cancelled')
  })

  it('forgets a task after its ttl and says it expired', async () => {
    const { client } = await memory(generation)
    const task = await startTask(client, { ms: 0, tag: 'short' }, { ttl: 150 })
    await pollUntil(client, task.taskId, ['completed'])
    await new Promise((resolve) => setTimeout(resolve, 300))
    const expired = await rejection(client.request('tasks/get', { taskId: task.taskId }))
    expect(expired.code).toBe(-32602)
    expect(expired.message).toContain('expired')
    const unknown = await rejection(client.request('tasks/result', { taskId: 'no-such-task' }))
    expect(unknown.code).toBe(-32602)
  })

  it('lists this connection’s tasks and refuses a bad cursor', async () => {
    const { client } = await memory(generation)
    const first = await startTask(client, { ms: 0, tag: 'l1' })
    const second = await startTask(client, { ms: 0, tag: 'l2' })
    const listed = await client.request('tasks/list', {})
    expect(listed.tasks.map((task: { taskId: string }) => task.taskId)).toEqual([first.taskId, second.taskId])
    const bad = await rejection(client.request('tasks/list', { cursor: 'not-a-cursor' }))
    expect(bad.code).toBe(-32602)
  })

  it('refuses a task for a tool without task support, and a plain call of a task-only tool (-32601)', async () => {
    const { client } = await memory(generation)
    const notTask = await rejection(
      client.request('tools/call', { name: 'echo', arguments: { message: 'x' }, task: {} }),
    )
    expect(notTask.code).toBe(-32601)
    expect(notTask.message).toContain('does not run as a task')
    const mustTask = await rejection(
      client.request('tools/call', { name: 'run_in_background', arguments: {} }),
    )
    expect(mustTask.code).toBe(-32601)
    expect(mustTask.message).toContain('must be called as a task')
    const created = await client.request('tools/call', { name: 'run_in_background', arguments: {}, task: {} })
    const result = await client.request('tasks/result', { taskId: created.task.taskId })
    expect(result.content).toEqual([{ type: 'text', text: 'done in the background' }])
  })

  it('still answers a client that does not ask for a task with a plain result', async () => {
    const { client } = await memory(generation)
    const result = await client.callTool({ name: 'wait', arguments: { ms: 0, tag: 'plain' } })
    expect(result.structuredContent).toEqual({ waited: 0, tag: 'plain' })
  })
})

describe('tasks over HTTP', () => {
  it('keeps each session’s tasks to itself', async () => {
    const server = await http()
    const alice = await httpClient(server, { generation: 'v1' })
    const bob = await httpClient(server, {})
    const task = await startTask(alice.client, { ms: 0, tag: 'alice' })
    await pollUntil(alice.client, task.taskId, ['completed'])
    const foreign = await rejection(bob.client.request('tasks/get', { taskId: task.taskId }))
    expect(foreign.code).toBe(-32602)
    const foreignResult = await rejection(bob.client.request('tasks/result', { taskId: task.taskId }))
    expect(foreignResult.code).toBe(-32602)
    expect((await bob.client.request('tasks/list', {})).tasks).toEqual([])
  })

  it('cancels a session’s running tasks when the session ends', async () => {
    const server = await http()
    const client = await httpClient(server, { generation: 'v1' })
    await startTask(client.client, { ms: 30_000, tag: 'orphan' })
    await expect.poll(() => server.runtime.deps.started).toContain('orphan')
    await client.close()
    await expect.poll(() => server.runtime.deps.aborted).toContain('orphan')
  })

  it('offers no tasks where there is no connection to poll on (2026-07-28 and --stateless)', async () => {
    const server = await http(['--stateless'])
    const stateless = await httpClient(server, {})
    expect(stateless.client.getServerCapabilities()?.tasks).toBeUndefined()
    const modern = await memory({ era: 'modern' })
    expect(modern.client.getServerCapabilities()?.tasks).toBeUndefined()
    const { tools } = await modern.client.listTools()
    expect(tools.find((tool) => tool.name === 'wait')?.execution).toBeUndefined()
    const result = await modern.client.callTool({ name: 'run_in_background', arguments: {} })
    expect(result.content).toEqual([{ type: 'text', text: 'done in the background' }])
  })
})

describe('TaskRegistry bounds', () => {
  it('refuses more running tasks than its limit and drops the oldest finished ones past its size', async () => {
    const registry = new TaskRegistry(() => {}, {
      defaultTtlMs: 60_000,
      maxTtlMs: 60_000,
      maxTasks: 3,
      maxRunning: 2,
      pollIntervalMs: 100,
      pageSize: 2,
    })
    const never = () => new Promise<Record<string, unknown>>(() => {})
    const quick = async () => ({ content: [] })
    const first = registry.start(undefined, quick)
    await registry.result(first.taskId, new AbortController().signal)
    registry.start(10 * 60 * 60_000, never)
    registry.start(undefined, never)
    expect(() => registry.start(undefined, never)).toThrow(/Too many tasks running/)
    expect(registry.list(undefined).tasks.map((task) => task.ttl)).toEqual([60_000, 60_000])
    expect(registry.list(undefined).nextCursor).toBeDefined()
    registry.close()
    expect(() => registry.get(first.taskId)).toThrow(/no task|expired/)
  })
})
