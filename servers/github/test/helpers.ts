import { type ClientOptions, type Connection, connectInMemory } from '@keel-mcp/core/testing'
import { createServer } from '../src/server.js'
import { FakeGitHub, RECORDED_TOKEN } from './fake-github.js'

/** The server as shipped, with retry and rate-limit waits shortened to milliseconds. */
export const fastServer = createServer({ retryAfterBaseMs: 1, spaceRequests: false })

const open: Array<{ close(): Promise<unknown> }> = []

export interface Setup {
  fake: FakeGitHub
  connection: Connection
  call(name: string, args?: Record<string, unknown>): Promise<Record<string, any>>
}

/** A fake GitHub and the server in memory pointed at it with the recordings' token. */
export async function setup(
  options: ClientOptions & { argv?: string[]; env?: NodeJS.ProcessEnv; prefix?: string } = {},
): Promise<Setup> {
  const fake = await FakeGitHub.start(options.prefix === undefined ? {} : { prefix: options.prefix })
  open.push(fake)
  const connection = await connectInMemory(fastServer, {
    ...options,
    argv: ['--api-url', fake.url, '--toolsets', 'all', ...(options.argv ?? [])],
    env: { GITHUB_TOKEN: RECORDED_TOKEN, ...options.env },
  })
  open.push(connection)
  return {
    fake,
    connection,
    call: (name, args = {}) => connection.client.callTool({ name, arguments: args }),
  }
}

export async function closeAll(): Promise<void> {
  await Promise.all(
    open
      .splice(0)
      .reverse()
      .map((item) => item.close()),
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

/** The data of a result: structured content, or the JSON line of the text. */
export function dataOf(result: Record<string, any>): Record<string, any> {
  if (result.isError) throw new Error(`tool failed: ${textOf(result)}`)
  if (result.structuredContent) return result.structuredContent as Record<string, any>
  const line = textOf(result)
    .split('\n')
    .find((candidate) => candidate.startsWith('{'))
  if (!line) throw new Error(`no JSON in: ${textOf(result)}`)
  return JSON.parse(line) as Record<string, any>
}

export const json = (body: unknown, status = 200, headers: Record<string, string> = {}) => ({
  status,
  body,
  headers,
})
