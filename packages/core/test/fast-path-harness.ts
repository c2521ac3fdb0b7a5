import { PassThrough } from 'node:stream'
import { afterAll, beforeAll } from 'vitest'
import { type AnyTool, defineServer, defineTool, type ServerSpec } from '../src/index.js'
import { prepare, type RunningServer, run } from '../src/run.js'
import { serveStdioRuntime } from '../src/serve-stdio.js'
import { type FixtureDeps, type FixtureOptions, fixture } from './fixture.js'

// What the fast-path tests share (fast-path.test.ts, fast-path-modern.test.ts,
// http-fast-path.test.ts, http-session-fast-path.test.ts, client-access.test.ts): tools that ask the client, a 2026-07-28
// envelope, the fixture with those tools, and a stdio connection driven line by line.

export type Message = Record<string, unknown> & { id?: unknown; method?: string }

export const VERSION = 'io.modelcontextprotocol/protocolVersion'
export const CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities'
export const INFO = 'io.modelcontextprotocol/clientInfo'
export const LEVEL = 'io.modelcontextprotocol/logLevel'

/** The `_meta` envelope of a 2026-07-28 client that declares elicitation. */
export function envelopeOf(client: string): Record<string, unknown> {
  return {
    [VERSION]: '2026-07-28',
    [INFO]: { name: client, version: '1.0.0' },
    [CAPABILITIES]: { elicitation: {} },
  }
}

/** `base` with `changes` merged in; a change to `undefined` removes the key. */
export function withChanges(
  base: Record<string, unknown>,
  changes: Record<string, unknown>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base, ...changes }
  for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key]
  return merged
}

export const askModel = defineTool({
  name: 'ask_model',
  title: 'Ask model',
  description: "Asks the client's model one question.",
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    const result = (await client.sample({
      messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }],
      maxTokens: 10,
    })) as { content: { text: string } }
    return { text: `model said: ${result.content.text}` }
  },
})

export const askUser = defineTool({
  name: 'ask_user',
  title: 'Ask user',
  description: 'Asks the user for a name.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    const result = (await client.elicit({
      message: 'Your name?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    })) as { action: string; content?: { name?: string } }
    return { text: `${result.action}: ${result.content?.name ?? ''}` }
  },
})

/** The core fixture with tools that ask the client, and `more`. */
export function askingFixture(...more: AnyTool<FixtureDeps>[]): ServerSpec<FixtureDeps, FixtureOptions> {
  return defineServer({
    ...fixture,
    tools: [...(fixture.tools as AnyTool<FixtureDeps>[]), askUser, askModel, ...more],
  })
}

/**
 * What differs from one run to the next whoever serves it: the error reference of an internal
 * failure (random per call), the duration in a call's debug line, and a signed request state.
 */
export const normalized = (messages: unknown): any =>
  JSON.parse(
    JSON.stringify(messages)
      .replace(/ref [0-9a-f]{8}/g, 'ref REF')
      .replace(/"ref":"[0-9a-f]{8}"/g, '"ref":"REF"')
      .replace(/"durationMs":[0-9.]+/g, '"durationMs":0')
      .replace(/"requestState":"[^"]+"/g, '"requestState":"STATE"'),
  )

/** A stdio connection to `spec`, driven by raw lines; `close` ends it. */
export async function stdioConnection<D = FixtureDeps, C = FixtureOptions>(
  spec: ServerSpec<D, C>,
  options: { fastPath: boolean; argv?: string[] },
) {
  const shutdown = new AbortController()
  const runtime = await prepare(spec, {
    argv: options.argv ?? ['--toolsets', 'all'],
    env: { LOG_LEVEL: 'silent' },
    shutdownSignal: shutdown.signal,
  })
  const input = new PassThrough()
  const output = new PassThrough()
  const seen: Message[] = []
  const waiters: Array<{ test: (message: Message) => boolean; resolve: (message: Message) => void }> = []
  let buffered = ''
  output.on('data', (chunk: Buffer) => {
    buffered += chunk.toString()
    let newline = buffered.indexOf('\n')
    while (newline !== -1) {
      const message = JSON.parse(buffered.slice(0, newline)) as Message
      buffered = buffered.slice(newline + 1)
      newline = buffered.indexOf('\n')
      seen.push(message)
      for (const waiter of waiters.splice(0)) {
        if (waiter.test(message)) waiter.resolve(message)
        else waiters.push(waiter)
      }
    }
  })
  const served = serveStdioRuntime(runtime, { input, output, fastPath: options.fastPath })
  const next = (test: (message: Message) => boolean) =>
    new Promise<Message>((resolve) => {
      const found = seen.find(test)
      if (found) resolve(found)
      else waiters.push({ test, resolve })
    })
  /** Writes raw lines; resolves with everything written out until the answer to `id`. */
  const exchange = async (lines: string, id: unknown) => {
    const from = seen.length
    input.write(lines.endsWith('\n') ? lines : `${lines}\n`)
    await next((message) => message.id === id && message.method === undefined)
    return seen.slice(from)
  }
  const request = (id: unknown, method: string, params?: unknown) =>
    exchange(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) }), id)
  const write = (line: string) => input.write(`${line}\n`)
  const close = async () => {
    shutdown.abort()
    await served.close()
  }
  return { runtime, served, shutdown, request, exchange, write, seen, next, close }
}

/** What {@link stdioConnection} gives for a spec with these deps and options. */
export type StdioConnection<D = FixtureDeps, C = FixtureOptions> = Awaited<
  ReturnType<typeof stdioConnection<D, C>>
>

/** One step of a script: `[id, method, params]`, or a raw line with the id it is answered under. */
export type ScriptStep = [unknown, string, unknown?] | { line: string; id: unknown }

/** Sends each step in turn and gathers, normalized, everything written out until each answer. */
export async function playScript(server: StdioConnection, script: ScriptStep[]) {
  const answers: Message[][] = []
  for (const step of script) {
    answers.push(
      Array.isArray(step)
        ? await server.request(step[0], step[1], step[2])
        : await server.exchange(step.line, step.id),
    )
  }
  return normalized(answers.flat())
}

/**
 * Writes `lines` in one chunk and waits for the answer to `last` and to every id in `ids`; returns
 * everything written out meanwhile, normalized and sorted (concurrent calls finish in any order).
 */
export async function answersOfChunk(server: StdioConnection, lines: string, last: unknown, ids: unknown[]) {
  const from = server.seen.length
  await server.exchange(lines, last)
  await Promise.all(ids.map((id) => server.next((message) => message.id === id)))
  const out = normalized(server.seen.slice(from)) as Message[]
  const key = (message: Message) => JSON.stringify(message)
  return { out: out.sort((a, b) => key(a).localeCompare(key(b))), served: server.served.fastPathServed }
}

/**
 * Writes a call that runs long, waits for its first log message, then shuts the server down as
 * run() does on SIGTERM (the shutdown signal first, then the transport closes): everything written
 * out meanwhile, normalized, and whether the call's signal was aborted.
 */
export async function shutdownDuring(server: StdioConnection, callLine: string) {
  const from = server.seen.length
  server.write(callLine)
  await server.next((message) => message.method === 'notifications/message')
  server.shutdown.abort(new Error('server shutting down'))
  await server.served.close()
  return {
    out: normalized(server.seen.slice(from)) as Message[],
    aborted: server.runtime.deps.seenSignals.at(-1)?.aborted === true,
  }
}

/** A server of `spec` over Streamable HTTP on a free port, with core's fast paths or without (KEEL_FAST_PATH=0). */
export type HttpServer = RunningServer<FixtureDeps, unknown> & {
  http: NonNullable<RunningServer<FixtureDeps, unknown>['http']>
}

export async function startHttp(
  spec: ServerSpec<FixtureDeps, FixtureOptions>,
  fastPath: boolean,
  extra: string[] = [],
): Promise<HttpServer> {
  const server = await run(spec, {
    argv: ['--transport', 'http', '--port', '0', '--toolsets', 'all', ...extra],
    env: { LOG_LEVEL: 'silent', ...(fastPath ? {} : { KEEL_FAST_PATH: '0' }) },
    manageProcess: false,
  })
  if (!server?.http) throw new Error('no http endpoint')
  return server as HttpServer
}

/**
 * The same server of `spec` twice over HTTP, with core's fast paths and without, started before the
 * enclosing describe block's tests and closed after them; read `fast` and `sdk` inside the tests.
 */
export function httpPair(
  spec: ServerSpec<FixtureDeps, FixtureOptions>,
  extra: string[] = [],
): { readonly fast: HttpServer; readonly sdk: HttpServer } {
  const servers: { fast?: HttpServer; sdk?: HttpServer } = {}
  beforeAll(async () => {
    servers.fast = await startHttp(spec, true, extra)
    servers.sdk = await startHttp(spec, false, extra)
  })
  afterAll(async () => {
    await servers.fast?.close('test done')
    await servers.sdk?.close('test done')
  })
  const started = (server: HttpServer | undefined) => {
    if (!server) throw new Error('the server pair has not started: read it inside a test')
    return server
  }
  return {
    get fast() {
      return started(servers.fast)
    },
    get sdk() {
      return started(servers.sdk)
    },
  }
}
