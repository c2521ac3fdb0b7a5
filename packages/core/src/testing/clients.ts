import { randomUUID } from 'node:crypto'
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { createMcpHandler, InMemoryServerEventBus } from '@modelcontextprotocol/server'
import { z } from 'zod'
import { createInstance, type Runtime } from '../build-server.js'
import { ListenWatches, prepareListen } from '../change-streams.js'
import type { ServerSpec } from '../define.js'
import { createLogger } from '../logger.js'
import { prepare } from '../run.js'

// Results of raw requests are returned as they came: the test asserts on them.
const anyResult = z.looseObject({})

/** The client calls tests use, the same for the v2 and the v1 SDK clients. */
export interface TestClient {
  /** `v2` (`@modelcontextprotocol/client`) or `v1` (`@modelcontextprotocol/sdk`). */
  readonly generation: 'v1' | 'v2'
  listTools(
    params?: Record<string, unknown>,
  ): Promise<{ tools: Array<Record<string, any>>; nextCursor?: string }>
  callTool(
    params: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> },
    options?: {
      signal?: AbortSignal
      onprogress?: (progress: Record<string, unknown>) => void
      timeout?: number
    },
  ): Promise<Record<string, any>>
  listResources(params?: Record<string, unknown>): Promise<Record<string, any>>
  listResourceTemplates(params?: Record<string, unknown>): Promise<Record<string, any>>
  readResource(params: { uri: string }): Promise<Record<string, any>>
  listPrompts(params?: Record<string, unknown>): Promise<Record<string, any>>
  getPrompt(params: { name: string; arguments?: Record<string, string> }): Promise<Record<string, any>>
  complete(params: Record<string, unknown>): Promise<Record<string, any>>
  subscribeResource(params: { uri: string }): Promise<unknown>
  /**
   * v2 with `era: 'modern'` only: opens a 2026-07-28 `subscriptions/listen` stream; its change
   * notifications reach the `on…` callbacks (e.g. `onResourceUpdated`). Resolves once acknowledged.
   */
  listen(filter: {
    resourceSubscriptions?: string[]
    toolsListChanged?: boolean
  }): Promise<{ honored: Record<string, unknown>; close(): Promise<void> }>
  setLoggingLevel(level: string): Promise<unknown>
  ping(): Promise<unknown>
  getServerVersion(): { name: string; version: string } | undefined
  getServerCapabilities(): Record<string, any> | undefined
  getInstructions(): string | undefined
  /**
   * Sends any request (e.g. `tasks/get`, which the clients have no helper for) and returns the
   * result unvalidated; JSON-RPC errors reject as the client raises them.
   */
  request(
    method: string,
    params?: Record<string, unknown>,
    options?: { signal?: AbortSignal; timeout?: number },
  ): Promise<Record<string, any>>
  close(): Promise<void>
}

/** A connected client plus whatever must be closed with it. */
export interface Connection {
  client: TestClient
  /** Closes the client and the server side. */
  close(): Promise<void>
}

/** Options shared by the connect helpers. */
export interface ClientOptions {
  /** Which SDK generation's client to use (default `v2`). */
  generation?: 'v1' | 'v2'
  /** v2 only: negotiate the 2026-07-28 era (`modern`) or the 2025 handshake (`legacy`, default). */
  era?: 'legacy' | 'modern'
  /** Roots the client offers (enables the roots capability). */
  roots?: Array<{ uri: string; name?: string }>
  /** Called with every `notifications/message` the server sends. */
  onLog?: (params: Record<string, unknown>) => void
  /** Called with every `notifications/resources/updated`. */
  onResourceUpdated?: (params: Record<string, unknown>) => void
  /** Answers sampling requests (enables the sampling capability). */
  onSample?: (params: Record<string, any>) => Promise<Record<string, unknown>> | Record<string, unknown>
  /** Answers elicitation requests (enables the elicitation capability). */
  onElicit?: (params: Record<string, any>) => Promise<Record<string, unknown>> | Record<string, unknown>
  /** Called with every `notifications/tasks/status` (2025-11-25 tasks). */
  onTaskStatus?: (params: Record<string, unknown>) => void
  /** Called on every `notifications/tools/list_changed`. */
  onToolListChanged?: () => void
}

const CLIENT_INFO = { name: 'keel-test-client', version: '1.0.0' }

function capabilitiesOf(options: ClientOptions): Record<string, unknown> {
  return {
    ...(options.roots ? { roots: { listChanged: true } } : {}),
    ...(options.onSample ? { sampling: {} } : {}),
    ...(options.onElicit ? { elicitation: { form: {} } } : {}),
  }
}

function wireV2(client: Client, options: ClientOptions) {
  const anyClient = client as any
  if (options.roots) anyClient.setRequestHandler('roots/list', () => ({ roots: options.roots }))
  if (options.onSample)
    anyClient.setRequestHandler('sampling/createMessage', (request: any) => options.onSample!(request.params))
  if (options.onElicit)
    anyClient.setRequestHandler('elicitation/create', (request: any) => options.onElicit!(request.params))
  if (options.onLog)
    anyClient.setNotificationHandler('notifications/message', (n: any) => options.onLog!(n.params))
  if (options.onResourceUpdated) {
    anyClient.setNotificationHandler('notifications/resources/updated', (n: any) =>
      options.onResourceUpdated!(n.params),
    )
  }
  if (options.onTaskStatus)
    anyClient.setNotificationHandler('notifications/tasks/status', (n: any) =>
      options.onTaskStatus!(n.params),
    )
  if (options.onToolListChanged)
    anyClient.setNotificationHandler('notifications/tools/list_changed', () => options.onToolListChanged!())
}

function adapt(client: any, generation: 'v1' | 'v2', extraClose?: () => Promise<void>): TestClient {
  return {
    generation,
    listTools: (params) => client.listTools(params),
    // v1's callTool takes a result schema second; v2's takes the options there.
    callTool: (params, options) =>
      generation === 'v1' ? client.callTool(params, undefined, options) : client.callTool(params, options),
    listResources: (params) => client.listResources(params),
    listResourceTemplates: (params) => client.listResourceTemplates(params),
    readResource: (params) => client.readResource(params),
    listPrompts: (params) => client.listPrompts(params),
    getPrompt: (params) => client.getPrompt(params),
    complete: (params) => client.complete(params),
    subscribeResource: (params) => client.subscribeResource(params),
    async listen(filter) {
      if (generation !== 'v2') throw new Error('subscriptions/listen needs the v2 client')
      const subscription = await client.listen(filter)
      return { honored: subscription.honoredFilter, close: () => subscription.close() }
    },
    setLoggingLevel: (level) => client.setLoggingLevel(level),
    ping: () => client.ping(),
    getServerVersion: () => client.getServerVersion(),
    getServerCapabilities: () => client.getServerCapabilities(),
    getInstructions: () => client.getInstructions(),
    request: (method, params, options) => client.request({ method, params }, anyResult, options),
    async close() {
      await client.close().catch(() => {})
      await extraClose?.()
    },
  }
}

async function v1Client(options: ClientOptions) {
  const { Client: V1Client } = await import('@modelcontextprotocol/sdk/client/index.js')
  const types = await import('@modelcontextprotocol/sdk/types.js')
  const client = new V1Client(CLIENT_INFO, { capabilities: capabilitiesOf(options) as never })
  if (options.roots) client.setRequestHandler(types.ListRootsRequestSchema, () => ({ roots: options.roots! }))
  if (options.onSample)
    client.setRequestHandler(types.CreateMessageRequestSchema, (r) => options.onSample!(r.params) as never)
  if (options.onElicit)
    client.setRequestHandler(types.ElicitRequestSchema, (r) => options.onElicit!(r.params) as never)
  if (options.onLog)
    client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => options.onLog!(n.params))
  if (options.onResourceUpdated) {
    client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (n) =>
      options.onResourceUpdated!(n.params),
    )
  }
  if (options.onTaskStatus) {
    client.setNotificationHandler(types.TaskStatusNotificationSchema, (n) =>
      options.onTaskStatus!(n.params as never),
    )
  }
  if (options.onToolListChanged)
    client.setNotificationHandler(types.ToolListChangedNotificationSchema, () => options.onToolListChanged!())
  return client
}

function v2Client(options: ClientOptions) {
  const client = new Client(CLIENT_INFO, {
    capabilities: capabilitiesOf(options) as never,
    ...(options.era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {}),
  } as never)
  wireV2(client, options)
  return client
}

/** Options of {@link connectInMemory}. */
export interface InMemoryOptions<D> extends ClientOptions {
  argv?: string[]
  env?: NodeJS.ProcessEnv
  /** Replace the deps `createDeps` would build. */
  deps?: D
}

/**
 * Runs a server in this process and connects a real SDK client to it: the 2025 era over an
 * in-memory pair, or (`era: 'modern'`) the 2026-07-28 era through the HTTP handler's `fetch`.
 */
export async function connectInMemory<D, C>(
  spec: ServerSpec<D, C>,
  options: InMemoryOptions<D> = {},
): Promise<Connection & { runtime: Runtime<D, C> }> {
  const shutdown = new AbortController()
  const runtime = await prepare(spec, {
    argv: options.argv ?? [],
    env: options.env ?? {},
    shutdownSignal: shutdown.signal,
    logger: createLogger({ level: 'silent', name: spec.name }, {}),
  })
  if (options.deps !== undefined) runtime.deps = options.deps
  const disposeAll = async () => {
    shutdown.abort()
    await spec.dispose?.(runtime.deps)
  }
  if (options.era === 'modern') {
    // As the HTTP front door does: listen streams have their resources watched (change-streams.ts).
    const bus = new InMemoryServerEventBus()
    const watches = new ListenWatches(runtime, (uri) => bus.publish({ kind: 'resource_updated', uri }))
    const handler = createMcpHandler(() => createInstance(runtime, { connection: 'request' }), { bus })
    const fetchInMemory = async (url: string | URL | Request, init?: RequestInit) => {
      const request = new Request(url, init)
      if (typeof init?.body !== 'string' || !init.body.includes('subscriptions/listen'))
        return handler.fetch(request)
      const prepared = await prepareListen(watches, JSON.parse(init.body), (release) =>
        request.signal.addEventListener('abort', release, { once: true }),
      )
      return handler.fetch(new Request(request, { body: JSON.stringify(prepared) }))
    }
    const client = v2Client(options)
    await client.connect(
      new StreamableHTTPClientTransport(new URL('http://in-memory.test/mcp'), {
        fetch: fetchInMemory,
      } as never),
    )
    const adapted = adapt(client, 'v2', async () => {
      await handler.close()
      watches.close()
      await disposeAll()
    })
    return { client: adapted, close: () => adapted.close(), runtime }
  }
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
  const server = createInstance(runtime, {
    forwardProcessLogs: true,
    connection: 'stdio',
    connectionId: `memory-${randomUUID()}`,
  })
  await server.connect(serverTransport)
  let adapted: TestClient
  if (options.generation === 'v1') {
    const client = await v1Client(options)
    await client.connect(clientTransport as never)
    adapted = adapt(client, 'v1')
  } else {
    const client = v2Client(options)
    await client.connect(clientTransport)
    adapted = adapt(client, 'v2')
  }
  return {
    client: adapted,
    runtime,
    async close() {
      await adapted.close()
      await server.close().catch(() => {})
      await disposeAll()
    },
  }
}

/** Options of {@link connectStdio}. */
export interface StdioOptions extends ClientOptions {
  command: string
  args?: string[]
  env?: Record<string, string>
  cwd?: string
  /** Receives the server's stderr lines. */
  onStderr?: (chunk: string) => void
}

/** Spawns a server bin and connects a real client over stdio. */
export async function connectStdio(options: StdioOptions): Promise<Connection & { pid: number | null }> {
  const env = { ...(process.env as Record<string, string>), ...options.env }
  if (options.generation === 'v1') {
    const { StdioClientTransport: V1Stdio } = await import('@modelcontextprotocol/sdk/client/stdio.js')
    const transport = new V1Stdio({
      command: options.command,
      args: options.args ?? [],
      env,
      stderr: 'pipe',
      ...(options.cwd ? { cwd: options.cwd } : {}),
    })
    transport.stderr?.on('data', (chunk: Buffer) => options.onStderr?.(chunk.toString()))
    const client = await v1Client(options)
    await client.connect(transport)
    const adapted = adapt(client, 'v1')
    return { client: adapted, close: () => adapted.close(), pid: transport.pid }
  }
  const transport = new StdioClientTransport({
    command: options.command,
    args: options.args ?? [],
    env,
    stderr: 'pipe',
    ...(options.cwd ? { cwd: options.cwd } : {}),
  })
  transport.stderr?.on('data', (chunk: Buffer) => options.onStderr?.(chunk.toString()))
  const client = v2Client(options)
  await client.connect(transport)
  const adapted = adapt(client, 'v2')
  return { client: adapted, close: () => adapted.close(), pid: transport.pid }
}

/** Options of {@link connectHttp}. */
export interface HttpOptions extends ClientOptions {
  /** Bearer token to send. */
  token?: string
}

/** Connects a real client to a Streamable HTTP endpoint. */
export async function connectHttp(url: string, options: HttpOptions = {}): Promise<Connection> {
  const requestInit = options.token ? { headers: { authorization: `Bearer ${options.token}` } } : undefined
  if (options.generation === 'v1') {
    const { StreamableHTTPClientTransport: V1Http } = await import(
      '@modelcontextprotocol/sdk/client/streamableHttp.js'
    )
    const client = await v1Client(options)
    const transport = new V1Http(new URL(url), requestInit ? { requestInit } : {})
    await client.connect(transport as never)
    const adapted = adapt(client, 'v1')
    return {
      client: adapted,
      // End the session (DELETE) while the transport still knows its id, then close.
      async close() {
        await transport.terminateSession().catch(() => {})
        await adapted.close()
      },
    }
  }
  const client = v2Client(options)
  const transport = new StreamableHTTPClientTransport(new URL(url), requestInit ? { requestInit } : {})
  await client.connect(transport)
  const adapted = adapt(client, 'v2')
  return { client: adapted, close: () => adapted.close() }
}
