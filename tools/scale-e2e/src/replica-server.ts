import { setTimeout as sleep } from 'node:timers/promises'
import { defineServer, handleArgument, toolFactory, z } from '@keel-mcp/core'

// A small server built on core to run as several replicas: each tool shows one thing a session
// needs across replicas (who served the call, progress, questions to the client, log level).

const defineTool = toolFactory<Record<string, never>>()
const readOnly = { readOnlyHint: true, openWorldHint: false } as const

const whoami = defineTool({
  name: 'whoami',
  title: 'Who am I',
  description: 'Which replica process served this call, and what the session looks like to it.',
  input: {},
  output: {
    pid: z.number(),
    session: z.string(),
    client: z.string(),
    capabilities: z.array(z.string()),
    subject: z.string(),
  },
  annotations: readOnly,
  run: (_input, { session, client, auth }) => ({
    data: {
      pid: process.pid,
      subject: auth?.subject ?? '',
      session: session.id ?? '',
      client: client.info ? `${client.info.name} ${client.info.version}` : '',
      capabilities: Object.keys(client.capabilities ?? {}).sort(),
    },
  }),
})

const count = defineTool({
  name: 'count',
  title: 'Count',
  description: 'Counts to `to`, one progress notification per step.',
  input: {
    to: z.number().int().min(1).max(500).describe('Last number'),
    step_ms: z.number().int().min(1).max(2000).default(20).describe('ms per step'),
  },
  annotations: readOnly,
  timeoutMs: 120_000,
  async run({ to, step_ms }, { progress, signal }) {
    for (let step = 1; step <= to; step++) {
      await sleep(step_ms, undefined, { signal })
      await progress(step, to, `step ${step}`)
    }
    return { text: `counted to ${to} on ${process.pid}` }
  },
})

const talk = defineTool({
  name: 'talk',
  title: 'Talk',
  description: 'Writes one log line at each level (the client sees those at or above its level).',
  input: {},
  annotations: readOnly,
  run: (_input, { log }) => {
    log.debug('debug line')
    log.info('info line')
    log.warn('warning line')
    return { text: `talked on ${process.pid}` }
  },
})

let tallied = 0

const tally = defineTool({
  name: 'tally',
  title: 'Tally',
  description: "Adds one to this replica's tally (a write: with OAuth on it needs the write scope).",
  input: {},
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  run: () => ({ text: `tally ${++tallied} on ${process.pid}` }),
})

const askName = defineTool({
  name: 'ask_name',
  title: 'Ask name',
  description: 'Asks the user for a name, then a colour (two elicitations).',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_input, { client }) {
    const name = (await client.elicit({
      message: 'Your name?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    })) as { content?: { name?: string } }
    const colour = (await client.elicit({
      message: 'Your colour?',
      requestedSchema: { type: 'object', properties: { colour: { type: 'string' } }, required: ['colour'] },
    })) as { content?: { colour?: string } }
    return { text: `${name.content?.name} likes ${colour.content?.colour} (asked by ${process.pid})` }
  },
})

const askModel = defineTool({
  name: 'ask_model',
  title: 'Ask model',
  description: "Asks the client's model to say something.",
  input: { prompt: z.string().max(200).describe('Prompt') },
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run({ prompt }, { client }) {
    const result = (await client.sample({
      messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
      maxTokens: 20,
    })) as { content: { text: string } }
    return { text: `model said: ${result.content.text}` }
  },
})

const listRoots = defineTool({
  name: 'list_roots',
  title: 'List roots',
  description: "The client's roots.",
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_input, { client }) {
    const roots = await client.roots()
    return { text: (roots ?? []).map((root) => root.uri).join(',') }
  },
})

// A counter per state handle (SEP-2567): which replica holds it and who may use it.
const counters = new Map<string, number>()
const counter = handleArgument('Counter handle from open_counter')

const openCounter = defineTool({
  name: 'open_counter',
  title: 'Open counter',
  description: 'Opens a counter on this replica; returns its handle.',
  input: {},
  output: { pid: z.number(), counter: z.string().optional() },
  annotations: readOnly,
  handle: { kind: 'counter', opens: 'always' },
  run: () => ({ data: { pid: process.pid } }),
})

const bump = defineTool({
  name: 'bump',
  title: 'Bump',
  description: 'Adds one to the counter; says which replica holds it.',
  input: { counter },
  output: { pid: z.number(), value: z.number(), subject: z.string(), counter: z.string().optional() },
  annotations: readOnly,
  handle: { kind: 'counter' },
  run: (_input, { handle, auth }) => {
    const key = handle?.key ?? ''
    const value = (counters.get(key) ?? 0) + 1
    counters.set(key, value)
    return { data: { pid: process.pid, value, subject: auth?.subject ?? '' } }
  },
})

export const server = defineServer({
  name: 'scale-replica',
  version: '0.0.0',
  description: 'A replica of a Keel server, for the scale-out tests.',
  tools: [whoami, count, talk, tally, askName, askModel, listRoots, openCounter, bump],
  handles: { counter: { opener: 'open_counter', close: (key) => void counters.delete(key) } },
  resources: [
    {
      name: 'ticks',
      uri: 'replica://ticks',
      title: 'Ticks',
      description: 'Changes every 200 ms while someone is subscribed.',
      mimeType: 'text/plain',
      read: (uri) => [{ uri: uri.href, mimeType: 'text/plain', text: `${process.pid} ${Date.now()}` }],
      subscribe: (_uri, notify, { log }) => {
        log.info(`watching ticks on ${process.pid}`)
        const timer = setInterval(notify, 200)
        return () => {
          clearInterval(timer)
          log.info(`stopped watching ticks on ${process.pid}`)
        }
      },
    },
  ],
  createDeps: () => ({}),
})
