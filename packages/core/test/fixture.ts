import { setTimeout as sleep } from 'node:timers/promises'
import { defineServer, type OptionSpecs, ToolError, toolFactory, z } from '../src/index.js'

export interface FixtureDeps {
  secret: string
  disposed: number
  counter: number
  seenSignals: AbortSignal[]
}

export interface FixtureOptions {
  apiUrl: string
  apiToken: string | undefined
}

const defineTool = toolFactory<FixtureDeps>()

export const echo = defineTool({
  name: 'echo',
  title: 'Echo',
  description: 'Echo a message back.',
  input: {
    message: z.string().max(1000).describe('Text to echo'),
    times: z.number().int().min(1).max(3).default(1).describe('Repeats'),
  },
  output: { echoed: z.string() },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  toolset: 'basic',
  run: ({ message, times }) => ({ data: { echoed: Array(times).fill(message).join(' ') } }),
})

export const increment = defineTool({
  name: 'increment',
  title: 'Increment',
  description: 'Add one to the counter.',
  input: {},
  annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
  toolset: 'basic',
  run: (_input, { deps }) => ({ text: `counter=${++deps.counter}` }),
})

export const fail = defineTool({
  name: 'fail',
  title: 'Fail',
  description: 'Fail in a chosen way.',
  input: {
    how: z.enum(['tool_error', 'crash', 'secret', 'mapped', 'bad_output', 'errno']).describe('Failure mode'),
  },
  output: { never: z.string() },
  annotations: { readOnlyHint: true, openWorldHint: false },
  toolset: 'faults',
  run({ how }, { deps }) {
    switch (how) {
      case 'tool_error':
        throw new ToolError('not_found', 'No such widget', { hint: 'Call list_widgets first' })
      case 'crash':
        throw new TypeError(
          `Cannot read properties of undefined at /srv/app/internal.js:10 token=${deps.secret}`,
        )
      case 'secret':
        throw new ToolError(
          'unavailable',
          `could not reach postgres://admin:hunter2hunter2@db.internal:5432/prod with ${deps.secret}`,
        )
      case 'mapped':
        throw Object.assign(new Error('upstream said 429'), { status: 429 })
      case 'errno':
        throw Object.assign(new Error('ENOENT: no such file, open /etc/hidden'), { code: 'ENOENT' })
      default:
        return { data: { wrong: 1 } as never }
    }
  },
})

export const slow = defineTool({
  name: 'slow',
  title: 'Slow',
  description: 'Wait, reporting progress; honours cancellation.',
  input: {
    steps: z.number().int().min(1).max(100).describe('Steps'),
    step_ms: z.number().int().min(1).max(5000).describe('ms per step'),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  toolset: 'faults',
  timeoutMs: 2000,
  async run({ steps, step_ms }, { signal, progress, deps, log }) {
    deps.seenSignals.push(signal)
    log.warn('slow started', { steps })
    log.info('slow info line')
    for (let step = 1; step <= steps; step++) {
      await sleep(step_ms, undefined, { signal })
      await progress(step, steps, `step ${step}`)
    }
    return { text: `done after ${steps} steps` }
  },
})

export const hang = defineTool({
  name: 'hang',
  title: 'Hang',
  description: 'Never finishes and ignores its signal (to prove core times it out anyway).',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: false },
  toolset: 'faults',
  timeoutMs: 300,
  run: () => new Promise<never>(() => {}),
})

export const picture = defineTool({
  name: 'get_picture',
  title: 'Picture',
  description: 'Return an image and a resource link.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: () => ({
    content: [
      {
        type: 'image',
        data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
        mimeType: 'image/png',
      },
      { type: 'resource_link', uri: 'fixture://items/1', name: 'item 1' },
    ],
  }),
})

export const options: OptionSpecs<FixtureOptions> = {
  apiUrl: {
    flag: 'api-url',
    env: 'FIXTURE_API_URL',
    type: 'string',
    description: 'API base URL',
    schema: z.url({ error: 'must be a URL' }).default('https://api.example.com'),
  },
  apiToken: {
    flag: 'api-token',
    env: 'FIXTURE_TOKEN',
    type: 'string',
    secret: true,
    description: 'API token',
    schema: z.string().optional(),
  },
}

export const disposed: string[] = []

export const fixture = defineServer<FixtureDeps, FixtureOptions>({
  name: 'fixture',
  version: '9.9.9',
  description: 'core test fixture',
  instructions: (config) => `Fixture talking to ${config.options.apiUrl}`,
  options,
  toolsets: { basic: 'echo, increment', faults: 'fail, slow, hang' },
  tools: [echo, increment, fail, slow, hang, picture],
  resources: [
    {
      name: 'status',
      uri: 'fixture://status',
      description: 'Status text',
      mimeType: 'text/plain',
      read: (uri, { deps }) => [{ uri: uri.href, text: `counter=${deps.counter}` }],
      subscribe: (_uri, notify) => {
        const timer = setInterval(notify, 20)
        return () => clearInterval(timer)
      },
    },
  ],
  resourceTemplates: [
    {
      name: 'item',
      uriTemplate: 'fixture://items/{id}',
      description: 'An item',
      list: () => [{ uri: 'fixture://items/1', name: 'item 1' }],
      complete: { id: (value) => ['1', '2', '10'].filter((id) => id.startsWith(value)) },
      read(uri, { id }) {
        if (id !== '1') throw new ToolError('not_found', `no item ${String(id)}`)
        return [{ uri: uri.href, text: 'item one' }]
      },
      async subscribe(uri) {
        await Promise.resolve()
        if (!uri.href.endsWith('/1')) throw new ToolError('permission_denied', `cannot watch ${uri.href}`)
        return () => {}
      },
    },
    {
      name: 'shelf-item',
      uriTemplate: 'fixture://shelves/{shelf}/{item}',
      description: 'An item on a shelf',
      complete: {
        shelf: (value) => ['a', 'b'].filter((shelf) => shelf.startsWith(value)),
        item: (value, { arguments: chosen }) =>
          (chosen.shelf === 'b' ? ['bolt', 'bracket'] : ['anchor', 'axle', 'bolt']).filter((item) =>
            item.startsWith(value),
          ),
      },
      read: (uri) => [{ uri: uri.href, text: 'on the shelf' }],
    },
  ],
  prompts: [
    {
      name: 'greet',
      description: 'Greet someone',
      args: { name: z.string().describe('Who') },
      complete: { name: (value) => ['alice', 'albert', 'bob'].filter((name) => name.startsWith(value)) },
      run: ({ name }) => ({
        messages: [{ role: 'user', content: { type: 'text', text: `Say hello to ${name}` } }],
      }),
    },
  ],
  createDeps: ({ config, addSecret }) => {
    const secret = config.options.apiToken ?? 'tok_fixture_secret_0123456789'
    addSecret(secret)
    return { secret, disposed: 0, counter: 0, seenSignals: [] }
  },
  dispose(deps) {
    deps.disposed++
    disposed.push('disposed')
  },
  mapError(error) {
    const status = (error as { status?: unknown }).status
    if (status === 429)
      return new ToolError('rate_limited', 'The API is rate limiting us', { hint: 'Wait a minute.' })
    return undefined
  },
})
