import { type Connection, connectInMemory } from '@keel-mcp/core/testing'
import { afterEach } from 'vitest'
import { createServer } from '../src/server.js'
import { BOT_TOKEN, type FakeSlack, startFakeSlack, USER_TOKEN } from './fake-slack.js'

const open: Array<{ close(): Promise<unknown> }> = []
export function useCleanup(): void {
  afterEach(async () => {
    for (const item of open.splice(0).reverse()) await item.close()
  })
}

/** Short retry waits: the fake answers at once, and a test must not sit out Slack's back-off. */
export const testServer = createServer({ minRetryMs: 10, retries: 2 })

export async function fake(options: Parameters<typeof startFakeSlack>[0] = {}): Promise<FakeSlack> {
  const slack = await startFakeSlack(options)
  open.push(slack)
  return slack
}

export async function connect(
  slack: FakeSlack,
  argv: string[] = [],
  env: Record<string, string> = {},
): Promise<Connection> {
  const connection = await connectInMemory(testServer, {
    argv,
    env: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_API_URL: slack.url, ...env },
  })
  open.push(connection)
  return connection
}

export { BOT_TOKEN, USER_TOKEN }

/** A call's text and its JSON payload (the line after the untrusted marker). */
export async function call(connection: Connection, name: string, args: Record<string, unknown> = {}) {
  const result = await connection.client.callTool({ name, arguments: args })
  const text = ((result.content ?? []) as Array<{ text?: string }>)
    .map((block) => block.text ?? '')
    .join('\n')
  const json = text.split('\n').find((line) => line.startsWith('{'))
  return { isError: result.isError === true, text, data: json ? JSON.parse(json) : undefined }
}
