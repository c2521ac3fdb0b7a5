import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { LISTING_TTL_MS } from '../src/build-server.js'
import { defineServer, defineTool } from '../src/index.js'
import { type Connection, connectInMemory, type InMemoryOptions } from '../src/testing/index.js'

const open: Connection[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((connection) => connection.close()))
})

const read = { readOnlyHint: true, openWorldHint: false } as const
const enable = defineTool({
  name: 'enable_more',
  title: 'Enable more',
  description: 'Enables the more toolset.',
  toolset: 'base',
  input: { names: z.array(z.string()).describe('Tools') },
  output: { enabled: z.array(z.string()), lasting: z.boolean() },
  annotations: read,
  async run({ names }, context) {
    return { data: await context.enableTools(names) }
  },
})
const extra = defineTool({
  name: 'extra',
  title: 'Extra',
  description: 'A tool of the more toolset.',
  toolset: 'more',
  input: {},
  annotations: read,
  run: () => ({ text: 'extra ran' }),
})
const writer = defineTool({
  name: 'write_more',
  title: 'Write more',
  description: 'A writer of the more toolset.',
  toolset: 'more',
  input: {},
  annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
  run: () => ({ text: 'wrote' }),
})

const server = defineServer({
  name: 'dynamic',
  version: '1.0.0',
  description: 'Dynamic tools',
  toolsets: { base: 'enabler', more: 'more tools' },
  defaultToolsets: ['base'],
  dynamicTools: true,
  tools: [enable, extra, writer],
  createDeps: () => ({}),
})

async function connect(options: InMemoryOptions<unknown> = {}) {
  const connection = await connectInMemory(server, { env: {}, ...options })
  open.push(connection)
  return connection
}

const names = async (connection: Connection) =>
  (await connection.client.listTools()).tools.map((tool) => String(tool.name))

describe('tools enabled at run time (dynamicTools)', () => {
  it('adds tools to the connection, promises and sends tools/list_changed', async () => {
    let changes = 0
    const connection = await connect({ onToolListChanged: () => changes++ })
    expect(connection.client.getServerCapabilities()?.tools).toEqual({ listChanged: true })
    expect(await names(connection)).toEqual(['enable_more'])
    await expect(connection.client.callTool({ name: 'extra', arguments: {} })).rejects.toThrow(/Unknown tool/)
    const result = await connection.client.callTool({
      name: 'enable_more',
      arguments: { names: ['extra', 'nope'] },
    })
    expect(result.structuredContent).toEqual({ enabled: ['extra'], lasting: true })
    await expect.poll(() => changes).toBe(1)
    expect(await names(connection)).toEqual(['enable_more', 'extra'])
    expect((await connection.client.callTool({ name: 'extra', arguments: {} })).content[0].text).toBe(
      'extra ran',
    )
    // Enabling again changes nothing and sends nothing.
    const again = await connection.client.callTool({ name: 'enable_more', arguments: { names: ['extra'] } })
    expect(again.structuredContent).toEqual({ enabled: [], lasting: true })
  })

  it('keeps each connection to its own list', async () => {
    const first = await connect()
    const second = await connect()
    await first.client.callTool({ name: 'enable_more', arguments: { names: ['extra'] } })
    expect(await names(second)).toEqual(['enable_more'])
  })

  it('never enables what --read-only removed', async () => {
    const connection = await connect({ argv: ['--read-only'] })
    const result = await connection.client.callTool({
      name: 'enable_more',
      arguments: { names: ['write_more'] },
    })
    expect(result.structuredContent).toEqual({ enabled: [], lasting: true })
    expect(await names(connection)).toEqual(['enable_more'])
  })

  it('says nothing lasts on a 2026-07-28 lone request', async () => {
    const connection = await connect({ era: 'modern' })
    const result = await connection.client.callTool({ name: 'enable_more', arguments: { names: ['extra'] } })
    expect(result.structuredContent).toEqual({ enabled: ['extra'], lasting: false })
    expect(await names(connection)).toEqual(['enable_more'])
  })
})

describe('tools the server hides (hiddenTools)', () => {
  const state: { hidden: ReadonlySet<string> } = { hidden: new Set() }
  const learn = defineTool({
    name: 'learn',
    title: 'Learn',
    description: 'Learns that extra is not allowed.',
    input: {},
    annotations: read,
    run() {
      if (!state.hidden.has('extra')) state.hidden = new Set(['extra'])
      return { text: 'learned' }
    },
  })
  const hiding = defineServer({
    name: 'hiding',
    version: '1.0.0',
    description: 'Hidden tools',
    tools: [learn, { ...extra, toolset: 'default' }],
    hiddenTools: () => state.hidden,
    createDeps: () => ({}),
  })

  it('stops listing and serving a tool once hidden, and tells the client after the call that hid it', async () => {
    state.hidden = new Set()
    let changes = 0
    const connection = await connectInMemory(hiding, { env: {}, onToolListChanged: () => changes++ })
    open.push(connection)
    expect(connection.client.getServerCapabilities()?.tools).toEqual({ listChanged: true })
    expect(await names(connection)).toEqual(['learn', 'extra'])
    await connection.client.callTool({ name: 'learn', arguments: {} })
    await expect.poll(() => changes).toBe(1)
    expect(await names(connection)).toEqual(['learn'])
    await expect(connection.client.callTool({ name: 'extra', arguments: {} })).rejects.toThrow(/Unknown tool/)
    await connection.client.callTool({ name: 'learn', arguments: {} })
    expect(changes).toBe(1)
  })
})

describe('tools hidden with a reason (hiddenTools as a map)', () => {
  it('answers a call to a hidden tool with a permission_denied tool error giving the reason', async () => {
    const asked: unknown[] = []
    const hidden = new Map([['extra', 'the token lacks the "issues" permission']])
    const spec = defineServer({
      name: 'reasons',
      version: '1.0.0',
      description: 'Hidden tools with reasons',
      tools: [enable, { ...extra, toolset: 'base' }],
      hiddenTools: (_deps, auth) => {
        asked.push(auth)
        return hidden
      },
      createDeps: () => ({}),
    })
    const connection = await connectInMemory(spec, { env: {} })
    open.push(connection)
    expect(await names(connection)).toEqual(['enable_more'])
    const result = await connection.client.callTool({ name: 'extra', arguments: {} })
    expect(result.isError).toBe(true)
    expect((result.content as Array<{ text: string }>)[0]?.text).toBe(
      'permission_denied: the token lacks the "issues" permission',
    )
    // No credential in memory: the server is asked for the hidden tools of no caller in particular.
    expect(asked.length).toBeGreaterThan(0)
    expect(asked.every((auth) => auth === undefined)).toBe(true)
  })
})

describe('2026-07-28 cache hints of the tool list', () => {
  it('tells clients not to reuse the list of a server that hides tools as it learns', async () => {
    const hides = defineServer({
      name: 'hides',
      version: '1.0.0',
      description: 'Hides',
      tools: [{ ...extra, toolset: 'default' }],
      hiddenTools: () => undefined,
      createDeps: () => ({}),
    })
    const fixed = defineServer({ ...hides, name: 'fixed', hiddenTools: undefined })
    const ttlOf = async (spec: typeof hides) => {
      const connection = await connectInMemory(spec, { env: {}, era: 'modern' })
      open.push(connection)
      return (await connection.client.request('tools/list', {})).ttlMs
    }
    expect(await ttlOf(hides)).toBe(0)
    expect(await ttlOf(fixed)).toBe(LISTING_TTL_MS)
  })
})
