import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { defineServer, defineTool } from '../src/index.js'
import { type RunningServer, run } from '../src/run.js'
import { type Connection, connectInMemory, type InMemoryOptions } from '../src/testing/index.js'
import { askModel, askUser } from './fast-path-harness.js'

const spec = defineServer({
  name: 'client-access',
  version: '0.0.0',
  description: 'Tools that ask the client.',
  tools: [askModel, askUser],
  createDeps: () => ({}),
})

const open: Connection[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((connection) => connection.close()))
})

async function connect(options: InMemoryOptions<unknown> = {}) {
  const connection = await connectInMemory(spec, options)
  open.push(connection)
  return connection.client
}

describe('ClientAccess', () => {
  it('refuses sampling at once with an unavailable error when the client did not declare it', async () => {
    const client = await connect()
    const result = await client.callTool({ name: 'ask_model' }, { timeout: 5_000 })
    expect(result.isError).toBe(true)
    expect(result.content[0].text).toMatch(/^unavailable: The client does not offer sampling/)
  })

  it('refuses elicitation at once with an unavailable error when the client did not declare it', async () => {
    const client = await connect()
    const result = await client.callTool({ name: 'ask_user' }, { timeout: 5_000 })
    expect(result.isError).toBe(true)
    expect(result.content[0].text).toMatch(/^unavailable: The client does not offer elicitation/)
  })

  it('samples through a client that declared sampling', async () => {
    const client = await connect({
      onSample: () => ({ role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'test' }),
    })
    const result = await client.callTool({ name: 'ask_model' })
    expect(result.content[0].text).toBe('model said: hi')
  })

  it('elicits through a client that declared elicitation', async () => {
    const client = await connect({ onElicit: () => ({ action: 'accept', content: { name: 'Ada' } }) })
    const result = await client.callTool({ name: 'ask_user' })
    expect(result.content[0].text).toBe('accept: Ada')
  })
})

const askBoth = defineTool({
  name: 'ask_both',
  title: 'Ask both',
  description: 'Asks the user, then the model, and counts its runs.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    runs++
    const answer = (await client.elicit({
      message: 'Topic?',
      requestedSchema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
    })) as { action: string; content?: { topic?: string } }
    const model = (await client.sample({
      messages: [{ role: 'user', content: { type: 'text', text: `Write about ${answer.content?.topic}` } }],
      maxTokens: 10,
    })) as { content: { text: string } }
    return { text: `${answer.content?.topic}: ${model.content.text}` }
  },
})
let runs = 0

const askNamed = defineTool({
  name: 'ask_named',
  title: 'Ask named',
  description: 'Asks under a key of its choosing.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    const answer = (await client.elicit(
      { message: 'Name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } },
      { key: 'user_name' },
    )) as { content?: { name?: string } }
    return { text: `hello ${answer.content?.name}` }
  },
})

const modernSpec = defineServer({
  name: 'client-access-modern',
  version: '0.0.0',
  description: 'Tools that ask the client, on 2026-07-28.',
  tools: [askModel, askUser, askBoth, askNamed],
  createDeps: () => ({}),
})

describe('ClientAccess on 2026-07-28 requests (input_required rounds)', () => {
  const connectModern = async (options: InMemoryOptions<unknown>) => {
    const connection = await connectInMemory(modernSpec, { ...options, era: 'modern' })
    open.push(connection)
    return connection.client
  }

  it('elicits through an input_required round and the retried call', async () => {
    const prompts: string[] = []
    const client = await connectModern({
      onElicit: (params) => {
        prompts.push(params.message)
        return { action: 'accept', content: { name: 'Grace' } }
      },
    })
    const result = await client.callTool({ name: 'ask_user' })
    expect(prompts).toEqual(['Your name?'])
    expect(result.content[0].text).toBe('accept: Grace')
  })

  it('answers several questions in order, one round each', async () => {
    runs = 0
    const client = await connectModern({
      onElicit: () => ({ action: 'accept', content: { topic: 'tides' } }),
      onSample: (params) => ({
        role: 'assistant',
        content: { type: 'text', text: `ok (${params.messages[0].content.text})` },
        model: 'test',
      }),
    })
    const result = await client.callTool({ name: 'ask_both' })
    expect(result.content[0].text).toBe('tides: ok (Write about tides)')
    expect(runs).toBe(3)
  })

  it('asks under the key the tool chose', async () => {
    const client = await connectModern({ onElicit: () => ({ action: 'accept', content: { name: 'Lin' } }) })
    const result = await client.callTool({ name: 'ask_named' })
    expect(result.content[0].text).toBe('hello Lin')
  })

  it('refuses with -32021 when the request declares no sampling capability', async () => {
    const client = await connectModern({})
    await expect(client.callTool({ name: 'ask_model' })).rejects.toMatchObject({ code: -32021 })
  })
})

describe('ClientAccess over Streamable HTTP (2025-era session)', () => {
  // A request to the client made during a call travels on that call's own response stream: a
  // client that never opened the standalone GET stream (or whose GET stream another replica holds)
  // still sees it, and the call does not wait for its timeout.
  let server: RunningServer<unknown, unknown> & { http: NonNullable<RunningServer<unknown, unknown>['http']> }
  beforeAll(async () => {
    const running = await run(spec, {
      argv: ['--transport', 'http', '--port', '0'],
      env: { LOG_LEVEL: 'silent' },
      manageProcess: false,
    })
    if (!running?.http) throw new Error('no http endpoint')
    server = running as typeof server
  })
  afterAll(async () => {
    await server?.close()
  })

  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }

  /** Reads SSE events from a response body until `until` returns true for one; at most 10 s. */
  async function readEvents(response: Response, until: (message: Record<string, unknown>) => boolean) {
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    const messages: Record<string, unknown>[] = []
    let buffered = ''
    const deadline = setTimeout(() => void reader.cancel(), 10_000)
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return messages
        buffered += decoder.decode(value, { stream: true })
        let end = buffered.indexOf('\n\n')
        while (end >= 0) {
          const data = buffered
            .slice(0, end)
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trim())
            .join('\n')
          buffered = buffered.slice(end + 2)
          end = buffered.indexOf('\n\n')
          if (!data) continue
          const message = JSON.parse(data) as Record<string, unknown>
          messages.push(message)
          if (until(message)) return messages
        }
      }
    } finally {
      clearTimeout(deadline)
      reader.releaseLock()
    }
  }

  it.each([
    [
      'ask_model',
      'sampling/createMessage',
      { role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'm' },
      'model said: hi',
    ],
    ['ask_user', 'elicitation/create', { action: 'accept', content: { name: 'Ada' } }, 'accept: Ada'],
  ])("sends %s's %s on the call's own stream, without a GET stream", async (tool, method, answer, text) => {
    const init = await fetch(server.http.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: { sampling: {}, elicitation: {} },
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
    })
    const session = init.headers.get('mcp-session-id') as string
    await init.text()
    const sessionHeaders = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }
    await (
      await fetch(server.http.url, {
        method: 'POST',
        headers: sessionHeaders,
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      })
    ).text()

    const call = await fetch(server.http.url, {
      method: 'POST',
      headers: sessionHeaders,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: tool, arguments: {} },
      }),
    })
    expect(call.headers.get('content-type')).toMatch(/text\/event-stream/)
    const asked = await readEvents(call, (message) => message.method === method)
    const question = asked.at(-1) as { id: number | string; method: string }
    expect(question.method).toBe(method)

    const reply = await fetch(server.http.url, {
      method: 'POST',
      headers: sessionHeaders,
      body: JSON.stringify({ jsonrpc: '2.0', id: question.id, result: answer }),
    })
    expect(reply.status).toBe(202)
    const rest = await readEvents(call, (message) => message.id === 2)
    const result = rest.at(-1) as { id: number; result: { content: { text: string }[] } }
    expect(result.id).toBe(2)
    expect(result.result.content[0]?.text).toBe(text)
  })
})
