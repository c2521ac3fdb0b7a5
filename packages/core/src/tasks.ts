import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server'
import { nodeCrypto } from './lazy-crypto.js'

// Tasks (MCP 2025-11-25): a task-augmented tools/call answers at once with a task; the client
// polls tasks/get, fetches tasks/result (which waits for the end), and may tasks/cancel or
// tasks/list. One registry per connection, so one session never sees another's tasks. Every
// task is bounded: in time (its ttl, capped here) and in number (per connection).

/** The `_meta` key that ties messages to a task. */
export const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task'

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled'

/** A task as the protocol shows it. */
export interface TaskView {
  taskId: string
  status: TaskStatus
  statusMessage?: string
  createdAt: string
  lastUpdatedAt: string
  ttl: number
  pollInterval: number
}

/** Bounds of one connection's tasks. */
export interface TaskLimits {
  /** Lifetime when the client asks for none (ms). */
  defaultTtlMs: number
  /** The longest lifetime a client may ask for (ms); longer requests are capped. */
  maxTtlMs: number
  /** Tasks kept (running and finished); the oldest finished ones are dropped first. */
  maxTasks: number
  /** Tasks running at once; a new one past this is refused. */
  maxRunning: number
  /** Suggested polling interval (ms). */
  pollIntervalMs: number
  /** Tasks listed per tasks/list page. */
  pageSize: number
}

export const DEFAULT_TASK_LIMITS: TaskLimits = {
  defaultTtlMs: 5 * 60_000,
  maxTtlMs: 60 * 60_000,
  maxTasks: 64,
  maxRunning: 16,
  pollIntervalMs: 1000,
  pageSize: 50,
}

const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled'])

/** What the work of a task can do while it runs. */
export interface TaskControl {
  readonly taskId: string
  /** Aborted by tasks/cancel, by expiry, and when the connection closes. */
  readonly signal: AbortSignal
  /** Moves between `working` and `input_required` (while the task waits on the client). */
  setStatus(status: 'working' | 'input_required', message?: string): void
}

interface TaskRecord {
  view: TaskView
  controller: AbortController
  result: Record<string, unknown> | undefined
  done: Promise<void>
  finish: () => void
  expiry: NodeJS.Timeout
}

function notFound(taskId: string, expired: boolean): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    expired
      ? `Failed to retrieve task: task ${taskId} has expired (results are kept for the task's ttl)`
      : `Failed to retrieve task: no task ${taskId} on this connection`,
  )
}

/** The tasks of one connection. */
export class TaskRegistry {
  private readonly tasks = new Map<string, TaskRecord>()
  private readonly expired = new Set<string>()
  private closed = false

  constructor(
    private readonly onStatus: (task: TaskView) => void,
    private readonly limits: TaskLimits = DEFAULT_TASK_LIMITS,
  ) {}

  /**
   * Starts `work` as a task and returns it at once, in `working` status. `work` resolves with the
   * call's result; a result with `isError` makes the task `failed`.
   */
  start(
    requestedTtl: number | undefined,
    work: (control: TaskControl) => Promise<Record<string, unknown>>,
  ): TaskView {
    if (this.closed) throw new ProtocolError(ProtocolErrorCode.InvalidRequest, 'The connection is closing')
    const running = [...this.tasks.values()].filter((task) => !TERMINAL.has(task.view.status)).length
    if (running >= this.limits.maxRunning) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        `Too many tasks running on this connection (${this.limits.maxRunning}); wait for one to finish or cancel one`,
      )
    }
    this.evictFinished(this.limits.maxTasks - 1)
    const ttl = Math.min(
      this.limits.maxTtlMs,
      requestedTtl !== undefined && Number.isFinite(requestedTtl) && requestedTtl > 0
        ? Math.floor(requestedTtl)
        : this.limits.defaultTtlMs,
    )
    const now = new Date().toISOString()
    const taskId = nodeCrypto().randomUUID()
    let finish = () => {}
    const done = new Promise<void>((resolve) => {
      finish = resolve
    })
    const record: TaskRecord = {
      view: {
        taskId,
        status: 'working',
        createdAt: now,
        lastUpdatedAt: now,
        ttl,
        pollInterval: this.limits.pollIntervalMs,
      },
      controller: new AbortController(),
      result: undefined,
      done,
      finish,
      expiry: setTimeout(() => this.expire(taskId), ttl),
    }
    record.expiry.unref()
    this.tasks.set(taskId, record)
    const control: TaskControl = {
      taskId,
      signal: record.controller.signal,
      setStatus: (status, message) => {
        if (TERMINAL.has(record.view.status) || record.view.status === status) return
        this.update(record, status, message)
      },
    }
    void Promise.resolve()
      .then(() => work(control))
      .then(
        (result) => {
          record.result = result
          if (record.view.status === 'cancelled') return
          const text = (result.content as Array<{ type: string; text?: string }> | undefined)?.find(
            (block) => block.type === 'text',
          )?.text
          if (result.isError) this.update(record, 'failed', text?.slice(0, 500))
          else this.update(record, 'completed')
        },
        () => {
          // The pipeline turns every failure into a result; reaching here is a bug, reported as failed.
          if (record.view.status === 'cancelled') return
          record.result = {
            content: [{ type: 'text', text: 'internal: the task failed unexpectedly' }],
            isError: true,
          }
          this.update(record, 'failed', 'internal error')
        },
      )
      .finally(() => record.finish())
    return { ...record.view }
  }

  get(taskId: string): TaskView {
    return { ...this.record(taskId).view }
  }

  /** One page of this connection's tasks, oldest first; `cursor` is opaque to the client. */
  list(cursor: string | undefined): { tasks: TaskView[]; nextCursor?: string } {
    let offset = 0
    if (cursor !== undefined) {
      const match = /^o(\d{1,9})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
      if (!match) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor for tasks/list')
      offset = Number(match[1])
    }
    const all = [...this.tasks.values()].map((task) => ({ ...task.view }))
    const tasks = all.slice(offset, offset + this.limits.pageSize)
    const next = offset + tasks.length
    return next < all.length
      ? { tasks, nextCursor: Buffer.from(`o${next}`).toString('base64url') }
      : { tasks }
  }

  /** Cancels a task that has not finished: its signal aborts, its status becomes `cancelled`. */
  cancel(taskId: string): TaskView {
    const record = this.record(taskId)
    if (TERMINAL.has(record.view.status)) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Task ${taskId} is already ${record.view.status} and cannot be cancelled`,
      )
    }
    this.update(record, 'cancelled', 'The task was cancelled by request.')
    record.controller.abort(new Error('task cancelled'))
    return { ...record.view }
  }

  /** The call's result once the task has ended (waits until then, or until `signal` aborts). */
  async result(taskId: string, signal: AbortSignal): Promise<Record<string, unknown>> {
    const record = this.record(taskId)
    if (!TERMINAL.has(record.view.status) || record.result === undefined) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(new ProtocolError(ProtocolErrorCode.InvalidRequest, 'Request cancelled'))
        if (signal.aborted) return onAbort()
        signal.addEventListener('abort', onAbort, { once: true })
        void record.done.then(() => {
          signal.removeEventListener('abort', onAbort)
          resolve()
        })
      })
    }
    if (!this.tasks.has(taskId)) throw notFound(taskId, true)
    const result = record.result ?? {
      content: [{ type: 'text', text: 'cancelled: The task was cancelled' }],
      isError: true,
    }
    const meta = (result._meta as Record<string, unknown> | undefined) ?? {}
    return { ...result, _meta: { ...meta, [RELATED_TASK_META_KEY]: { taskId } } }
  }

  /** Ends every running task (the connection is closing) and forgets them all. */
  close(): void {
    this.closed = true
    for (const record of this.tasks.values()) {
      clearTimeout(record.expiry)
      if (!TERMINAL.has(record.view.status)) {
        record.view = { ...record.view, status: 'cancelled', statusMessage: 'The connection closed' }
        record.controller.abort(new Error('connection closed'))
      }
    }
    this.tasks.clear()
  }

  private record(taskId: string): TaskRecord {
    const record = this.tasks.get(taskId)
    if (!record) throw notFound(taskId, this.expired.has(taskId))
    return record
  }

  private update(record: TaskRecord, status: TaskStatus, message?: string): void {
    const { statusMessage: _previous, ...rest } = record.view
    record.view = {
      ...rest,
      status,
      ...(message ? { statusMessage: message } : {}),
      lastUpdatedAt: new Date().toISOString(),
    }
    this.onStatus({ ...record.view })
  }

  private expire(taskId: string): void {
    const record = this.tasks.get(taskId)
    if (!record) return
    this.tasks.delete(taskId)
    // Remember a bounded number of expired ids, to tell "expired" from "never existed".
    this.expired.add(taskId)
    if (this.expired.size > 1000) this.expired.delete(this.expired.values().next().value as string)
    if (!TERMINAL.has(record.view.status)) record.controller.abort(new Error('task expired'))
    record.finish()
  }

  private evictFinished(keep: number): void {
    for (const [taskId, record] of this.tasks) {
      if (this.tasks.size <= keep) return
      if (!TERMINAL.has(record.view.status)) continue
      clearTimeout(record.expiry)
      this.tasks.delete(taskId)
      this.expired.add(taskId)
    }
  }
}

/** The capability a connection that offers tasks declares. */
export const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } }

interface TaskRequestServer {
  setRequestHandler(
    method: string,
    handler: (
      request: { params: Record<string, unknown> },
      ctx: { mcpReq: { signal: AbortSignal } },
    ) => unknown,
  ): void
}

/** Serves tasks/get, tasks/result, tasks/list and tasks/cancel from one connection's registry. */
export function registerTaskHandlers(server: TaskRequestServer, registry: TaskRegistry): void {
  const taskId = (params: Record<string, unknown>): string => {
    if (typeof params.taskId !== 'string' || params.taskId.length === 0 || params.taskId.length > 200) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'taskId: expected a task id string')
    }
    return params.taskId
  }
  server.setRequestHandler('tasks/get', (request) => registry.get(taskId(request.params)))
  server.setRequestHandler('tasks/result', (request, ctx) =>
    registry.result(taskId(request.params), ctx.mcpReq.signal),
  )
  server.setRequestHandler('tasks/list', (request) =>
    registry.list(typeof request.params?.cursor === 'string' ? request.params.cursor : undefined),
  )
  server.setRequestHandler('tasks/cancel', (request) => registry.cancel(taskId(request.params)))
}
