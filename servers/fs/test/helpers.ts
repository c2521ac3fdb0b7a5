import type { Runtime } from '@keel-mcp/core'
import { type Connection, connectInMemory, type InMemoryOptions } from '@keel-mcp/core/testing'
import { afterEach, expect } from 'vitest'
import { server } from '../src/server.js'
import type { FsDeps } from '../src/tools/shared.js'

/** A tool result as tests look at it. */
export interface CallResult {
  isError: boolean
  text: string
  structured: any
  content: Array<Record<string, any>>
}

const open: Array<{ close(): Promise<void> }> = []

/**
 * Closes every connection opened through {@link connect} after each test. Call once at the top of a test
 * file (like `useTempDirectories`).
 */
export function useConnections(): void {
  afterEach(async () => {
    await Promise.all(open.splice(0).map((connection) => connection.close()))
  })
}

/** The fs server in memory with a real MCP client; closed after the test. */
export async function connect(
  argv: string[],
  options: InMemoryOptions<FsDeps> = {},
): Promise<Connection & { runtime: Runtime<FsDeps, Record<string, unknown>> }> {
  const connection = await connectInMemory(server, { argv, ...options })
  open.push(connection)
  return connection
}

/** Calls a tool and flattens the result. */
export async function call(
  connection: Pick<Connection, 'client'>,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallResult> {
  const result = await connection.client.callTool({ name, arguments: args })
  const content = (result.content ?? []) as Array<Record<string, any>>
  return {
    isError: result.isError === true,
    text: content
      .filter((block) => block.type === 'text')
      .map((block) => block.text as string)
      .join('\n'),
    structured: result.structuredContent,
    content,
  }
}

/** Asserts a successful call and returns it. */
export async function ok(
  connection: Pick<Connection, 'client'>,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallResult> {
  const result = await call(connection, name, args)
  expect(result.isError, result.text).toBe(false)
  return result
}

/** Asserts a tool error of `kind` and returns its text. */
export async function fails(
  connection: Pick<Connection, 'client'>,
  name: string,
  args: Record<string, unknown>,
  kind: string,
): Promise<string> {
  const result = await call(connection, name, args)
  expect(result.isError, result.text).toBe(true)
  expect(result.text.split(':')[0], result.text).toBe(kind)
  return result.text
}

/**
 * Asserts arguments that fail the tool's schema come back as a tool error (SEP-1303) naming the
 * field and the problem, with the issues in `_meta['keel/error']`.
 */
export async function invalidArguments(
  connection: Pick<Connection, 'client'>,
  name: string,
  args: Record<string, unknown>,
  message: RegExp,
): Promise<void> {
  const result = await connection.client.callTool({ name, arguments: args })
  const text = (result.content as Array<{ text?: string }>).map((block) => block.text ?? '').join('\n')
  expect(result.isError, text).toBe(true)
  expect(text.startsWith(`invalid_argument: Invalid arguments for tool ${name}: `), text).toBe(true)
  expect(text).toMatch(message)
  expect(result._meta?.['keel/error']).toMatchObject({ kind: 'invalid_argument', issues: expect.any(Array) })
}

/** Asserts the call is refused at the protocol level (JSON-RPC -32602, e.g. an unknown tool). */
export async function rejected(
  connection: Pick<Connection, 'client'>,
  name: string,
  args: Record<string, unknown>,
  message: RegExp,
): Promise<void> {
  const attempt = connection.client.callTool({ name, arguments: args }).then(
    (result) => ({ settled: 'resolved' as const, result }),
    (error: unknown) => ({ settled: 'rejected' as const, error }),
  )
  const outcome = await attempt
  expect(outcome.settled, JSON.stringify(outcome)).toBe('rejected')
  const error = (outcome as { error: { code?: number; message?: string } }).error
  expect(error.code).toBe(-32602)
  expect(error.message).toMatch(message)
}
