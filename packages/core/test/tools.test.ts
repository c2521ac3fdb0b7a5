import { afterEach, describe, expect, it } from 'vitest'
import { ConfigError } from '../src/index.js'
import {
  type Connection,
  connectInMemory,
  type InMemoryOptions,
  type TestClient,
} from '../src/testing/index.js'
import { type FixtureDeps, fixture } from './fixture.js'

const open: Connection[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((connection) => connection.close()))
})

async function connect(options: InMemoryOptions<FixtureDeps> = {}) {
  const connection = await connectInMemory(fixture, options)
  open.push(connection)
  return connection
}

async function expectRpcError(
  promise: Promise<unknown>,
  code: number,
): Promise<Error & { code: number; data?: any }> {
  const error = await promise.then(
    () => {
      throw new Error('expected a JSON-RPC error')
    },
    (caught: unknown) => caught as Error & { code: number },
  )
  expect(error.code).toBe(code)
  return error
}

const generations: Array<{
  label: string
  options: { generation?: 'v1' | 'v2'; era?: 'legacy' | 'modern' }
}> = [
  { label: 'v2 client, 2025 era', options: {} },
  { label: 'v2 client, 2026-07-28 era', options: { era: 'modern' } },
  { label: 'v1 client', options: { generation: 'v1' } },
]

describe.each(generations)('tool calls ($label)', ({ options }) => {
  let client: TestClient
  const setup = async () => {
    client = (await connect(options)).client
  }

  it('lists every tool with its schema, annotations and output schema', async () => {
    await setup()
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual([
      'echo',
      'increment',
      'fail',
      'slow',
      'hang',
      'get_picture',
    ])
    const echo = tools.find((tool) => tool.name === 'echo')!
    // Listed compact: idempotentHint means nothing on a read-only tool (see tool-schema.test.ts).
    expect(echo.annotations).toEqual({ readOnlyHint: true, openWorldHint: false })
    expect(echo.inputSchema).toMatchObject({
      type: 'object',
      properties: { message: { type: 'string', description: 'Text to echo' } },
      required: ['message'],
    })
    expect(echo.outputSchema).toMatchObject({ type: 'object', properties: { echoed: { type: 'string' } } })
  })

  it('returns structuredContent and a text fallback', async () => {
    await setup()
    const result = await client.callTool({ name: 'echo', arguments: { message: 'hi', times: 2 } })
    expect(result.isError).toBeFalsy()
    expect(result.structuredContent).toEqual({ echoed: 'hi hi' })
    expect(result.content[0]).toEqual({ type: 'text', text: '{"echoed":"hi hi"}' })
  })

  it('answers schema-invalid arguments with a tool error naming the field and the problem (SEP-1303)', async () => {
    await setup()
    const result = await client.callTool({ name: 'echo', arguments: { message: 42 } })
    expect(result.isError).toBe(true)
    expect(result.structuredContent).toBeUndefined()
    expect(result.content[0].text).toMatch(
      /^invalid_argument: Invalid arguments for tool echo: message: .*expected string, received number\nHint: /,
    )
    expect(result._meta?.['keel/error']).toEqual({
      kind: 'invalid_argument',
      issues: [{ path: 'message', message: expect.stringMatching(/expected string/) }],
    })
  })

  it('refuses unknown arguments instead of ignoring them', async () => {
    await setup()
    const result = await client.callTool({ name: 'echo', arguments: { message: 'x', mesage: 'y' } })
    expect(result.isError).toBe(true)
    expect(result.content[0].text).toContain('unknown argument(s): mesage')
  })

  it('answers an unknown tool with -32602 listing the available tools', async () => {
    await setup()
    const error = await expectRpcError(client.callTool({ name: 'nope', arguments: {} }), -32602)
    expect(error.message).toContain('Unknown tool "nope"')
    expect(error.message).toContain('echo')
  })

  it('turns a ToolError into an isError result with kind, message and hint', async () => {
    await setup()
    const result = await client.callTool({ name: 'fail', arguments: { how: 'tool_error' } })
    expect(result.isError).toBe(true)
    expect(result.content[0].text).toBe('not_found: No such widget\nHint: Call list_widgets first')
  })

  it('hides stacks, server paths and secrets of unexpected errors behind a reference', async () => {
    await setup()
    const result = await client.callTool({ name: 'fail', arguments: { how: 'crash' } })
    expect(result.isError).toBe(true)
    const text = result.content[0].text as string
    expect(text).toMatch(/^internal: fail failed unexpectedly \(ref [0-9a-f]{8}\)/)
    expect(text).not.toContain('/srv/app')
    expect(text).not.toContain('tok_fixture_secret')
    expect(text).not.toContain('TypeError')
  })

  it('redacts secrets and URL credentials inside tool error messages', async () => {
    await setup()
    const result = await client.callTool({ name: 'fail', arguments: { how: 'secret' } })
    const text = result.content[0].text as string
    expect(text).toContain('unavailable: could not reach postgres://admin:[redacted]@db.internal:5432/prod')
    expect(text).not.toContain('hunter2hunter2')
    expect(text).not.toContain('tok_fixture_secret_0123456789')
  })

  it("applies the server's error mapper", async () => {
    await setup()
    const result = await client.callTool({ name: 'fail', arguments: { how: 'mapped' } })
    expect(result.content[0].text).toBe('rate_limited: The API is rate limiting us\nHint: Wait a minute.')
  })

  it('maps errno codes without echoing the server path', async () => {
    await setup()
    const result = await client.callTool({ name: 'fail', arguments: { how: 'errno' } })
    expect(result.content[0].text).toBe('not_found: No such file or directory')
  })

  it('treats data that breaks the output schema as an internal error', async () => {
    await setup()
    const result = await client.callTool({ name: 'fail', arguments: { how: 'bad_output' } })
    expect(result.isError).toBe(true)
    expect(result.content[0].text).toMatch(/^internal:/)
  })

  it('times out a tool that never finishes and keeps serving', async () => {
    await setup()
    const result = await client.callTool({ name: 'hang', arguments: {} })
    expect(result.isError).toBe(true)
    expect(result.content[0].text).toMatch(/^timeout: hang did not finish within 300 ms/)
    const after = await client.callTool({ name: 'echo', arguments: { message: 'still here' } })
    expect(after.structuredContent).toEqual({ echoed: 'still here' })
  })

  it('returns images and resource links as given', async () => {
    await setup()
    const result = await client.callTool({ name: 'get_picture', arguments: {} })
    expect(result.content.map((block: { type: string }) => block.type)).toEqual(['image', 'resource_link'])
  })
})

describe('long work', () => {
  it('sends increasing progress notifications when the client asks', async () => {
    const { client } = await connect()
    const updates: Array<Record<string, unknown>> = []
    const result = await client.callTool(
      { name: 'slow', arguments: { steps: 3, step_ms: 5 } },
      { onprogress: (update) => updates.push(update) },
    )
    expect(result.content[0].text).toBe('done after 3 steps')
    expect(updates.map((update) => update.progress)).toEqual([1, 2, 3])
    expect(updates[0]).toMatchObject({ total: 3, message: 'step 1' })
  })

  it('aborts the signal the tool sees when the client cancels', async () => {
    const { client, runtime } = await connect()
    const controller = new AbortController()
    const call = client.callTool(
      { name: 'slow', arguments: { steps: 50, step_ms: 50 } },
      { signal: controller.signal },
    )
    await expect.poll(() => runtime.deps.seenSignals.length).toBe(1)
    controller.abort('user pressed stop')
    await expect(call).rejects.toThrow()
    await expect.poll(() => runtime.deps.seenSignals[0]?.aborted).toBe(true)
  })

  it('uses the tool timeout when it is shorter than the work', async () => {
    const { client } = await connect()
    const result = await client.callTool({ name: 'slow', arguments: { steps: 10, step_ms: 400 } })
    expect(result.content[0].text).toMatch(/^timeout: slow did not finish within 2000 ms/)
  })
})

describe('logging', () => {
  it('forwards warnings from a tool call by default, and info once the client lowers the level', async () => {
    const messages: Array<Record<string, unknown>> = []
    const { client } = await connect({ onLog: (params) => messages.push(params) })
    await client.callTool({ name: 'slow', arguments: { steps: 1, step_ms: 1 } })
    await expect.poll(() => messages.length).toBe(1)
    expect(messages[0]).toMatchObject({ level: 'warning', data: { message: 'slow started', steps: 1 } })
    messages.length = 0
    await client.setLoggingLevel('info')
    await client.callTool({ name: 'slow', arguments: { steps: 1, step_ms: 1 } })
    await expect.poll(() => messages.map((message) => message.level)).toEqual(['warning', 'info'])
  })

  it('forwards nothing below the level the client set', async () => {
    const messages: Array<Record<string, unknown>> = []
    const { client } = await connect({ onLog: (params) => messages.push(params) })
    await client.setLoggingLevel('error')
    await client.callTool({ name: 'slow', arguments: { steps: 1, step_ms: 1 } })
    await client.ping()
    expect(messages).toEqual([])
  })
})

describe('tool selection', () => {
  const names = async (argv: string[]) => {
    const { client } = await connect({ argv })
    return (await client.listTools()).tools.map((tool) => tool.name)
  }

  it('--read-only removes every tool that writes', async () => {
    expect(await names(['--read-only'])).not.toContain('increment')
    expect(await names(['--read-only'])).toContain('echo')
  })

  it('--toolsets keeps only the named toolsets', async () => {
    expect(await names(['--toolsets', 'basic'])).toEqual(['echo', 'increment'])
  })

  it('--read-only wins over --tools', async () => {
    expect(await names(['--tools', 'increment,echo', '--read-only'])).toEqual(['echo'])
  })

  it('--exclude-tools hides tools', async () => {
    expect(await names(['--exclude-tools', 'hang,fail'])).toEqual([
      'echo',
      'increment',
      'slow',
      'get_picture',
    ])
  })

  it('a hidden tool cannot be called', async () => {
    const { client } = await connect({ argv: ['--read-only'] })
    await expectRpcError(client.callTool({ name: 'increment', arguments: {} }), -32602)
  })

  it.each([['--tools'], ['--exclude-tools']])(
    'an unknown name in %s is a usage error (exit 2) listing the known tools',
    async (flag) => {
      const refused = await connectInMemory(fixture, { argv: [flag, 'echo,ecko'] }).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(refused).toBeInstanceOf(ConfigError)
      expect((refused as ConfigError).exitCode).toBe(2)
      expect((refused as ConfigError).message).toMatch(
        new RegExp(`^Invalid ${flag}: unknown tool "ecko"; known: echo, increment, `),
      )
    },
  )
})

describe('resources, prompts and completions', () => {
  it('lists and reads fixed and templated resources', async () => {
    const { client } = await connect()
    const { resources } = await client.listResources()
    expect(resources.map((resource: { uri: string }) => resource.uri)).toEqual([
      'fixture://status',
      'fixture://items/1',
    ])
    const templates = await client.listResourceTemplates()
    expect(templates.resourceTemplates[0]).toMatchObject({
      uriTemplate: 'fixture://items/{id}',
      name: 'item',
    })
    const read = await client.readResource({ uri: 'fixture://items/1' })
    expect(read.contents).toEqual([{ uri: 'fixture://items/1', text: 'item one' }])
  })

  it('answers a missing resource with a JSON-RPC error, not a crash', async () => {
    const { client } = await connect()
    const error = await expectRpcError(client.readResource({ uri: 'fixture://items/2' }), -32602)
    expect(error.message).toContain('fixture://items/2')
  })

  it('gets a prompt with its arguments and completes them', async () => {
    const { client } = await connect()
    const prompt = await client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } })
    expect(prompt.messages[0].content.text).toBe('Say hello to Ada')
    const completion = await client.complete({
      ref: { type: 'ref/prompt', name: 'greet' },
      argument: { name: 'name', value: 'al' },
    })
    expect(completion.completion.values).toEqual(['alice', 'albert'])
    const templateCompletion = await client.complete({
      ref: { type: 'ref/resource', uri: 'fixture://items/{id}' },
      argument: { name: 'id', value: '1' },
    })
    expect(templateCompletion.completion.values).toEqual(['1', '10'])
  })

  it('completes a template variable using the values already chosen for the others', async () => {
    const { client } = await connect()
    const complete = (shelf: string | undefined) =>
      client.complete({
        ref: { type: 'ref/resource', uri: 'fixture://shelves/{shelf}/{item}' },
        argument: { name: 'item', value: 'b' },
        ...(shelf ? { context: { arguments: { shelf } } } : {}),
      })
    expect((await complete('b')).completion.values).toEqual(['bolt', 'bracket'])
    expect((await complete(undefined)).completion.values).toEqual(['bolt'])
  })

  it('refuses a subscription the server declines with a JSON-RPC error', async () => {
    const { client } = await connect()
    await client.subscribeResource({ uri: 'fixture://items/1' })
    const error = await expectRpcError(client.subscribeResource({ uri: 'fixture://items/2' }), -32602)
    expect(error.message).toContain('permission_denied: cannot watch fixture://items/2')
  })

  it('sends resource updates to a subscribed client', async () => {
    const updates: Array<Record<string, unknown>> = []
    const { client } = await connect({ onResourceUpdated: (params) => updates.push(params) })
    await client.subscribeResource({ uri: 'fixture://status' })
    await expect.poll(() => updates.length).toBeGreaterThan(0)
    expect(updates[0]).toEqual({ uri: 'fixture://status' })
  })
})

describe('server identity', () => {
  it('reports name, version and instructions built from config', async () => {
    const { client } = await connect({ argv: ['--api-url', 'http://127.0.0.1:9/api'] })
    expect(client.getServerVersion()).toMatchObject({ name: 'keel-fixture', version: '9.9.9' })
    expect(client.getInstructions()).toBe('Fixture talking to http://127.0.0.1:9/api')
  })

  it('promises no list-changed notifications: the lists are fixed for the life of the process', async () => {
    const { client } = await connect()
    expect(client.getServerCapabilities()).toMatchObject({
      tools: { listChanged: false },
      resources: { subscribe: true, listChanged: false },
      prompts: { listChanged: false },
      logging: {},
      completions: {},
    })
  })

  it('disposes dependencies when closed', async () => {
    const connection = await connectInMemory(fixture)
    await connection.close()
    expect(connection.runtime.deps.disposed).toBe(1)
  })
})
