import path from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  type PythonRun,
  type PythonTarget,
  pythonMcp,
  runPythonClient,
  spawnHttp,
} from '@keel-mcp/core/testing'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { makeTree, useTempDirectories } from './temp-tree.js'

// The Python MCP SDK (a client no one here wrote) drives the built bin over stdio and Streamable
// HTTP, in its default 2026-07-28 mode (`server/discover`) and with the `initialize` handshake.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const tempDirectory = useTempDirectories()

async function workspace() {
  const base = await tempDirectory()
  const root = path.join(base, 'work')
  await makeTree(base, {
    work: { 'notes.md': '# Notes\n\nremember the milk\n', src: { 'main.ts': 'export {}\n' } },
  })
  return root
}

function ok(run: PythonRun, index: number): any {
  const result = run.results[index]
  if (!result || !('ok' in result))
    throw new Error(
      `step ${index}: ${JSON.stringify(result)}; ${run.connectError ?? ''} ${run.stderr.slice(-1500)}`,
    )
  return result.ok
}

function text(result: any): string {
  return result.content.map((block: { text?: string }) => block.text ?? '').join('\n')
}

const servers: Array<{ close(): Promise<unknown> }> = []
beforeAll(async () => {
  await pythonMcp()
}, 300_000)
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

const transports: Array<[string, () => Promise<{ target: PythonTarget; root: string }>]> = [
  [
    'stdio',
    async () => {
      const root = await workspace()
      return { target: { command: process.execPath, args: [BIN, root] }, root }
    },
  ],
  [
    'Streamable HTTP',
    async () => {
      const root = await workspace()
      const server = await spawnHttp(process.execPath, [BIN, root])
      servers.push(server)
      return { target: { url: server.url }, root }
    },
  ],
]

const outside = 'file:///etc/hostname'

describe.each(transports)('the Python MCP SDK over %s', (_transport, setup) => {
  it('in auto mode (2026-07-28) works with files and gets a change stream event after a write from outside', async () => {
    const { target, root } = await setup()
    const uri = `file://${root}/notes.md`
    const run = await runPythonClient({
      target,
      mode: 'auto',
      steps: [
        ...workSteps(root),
        {
          op: 'listen',
          uris: [uri, outside],
          count: 1,
          timeout: 20,
          during: [{ op: 'write_local', path: `${root}/notes.md`, content: '# Notes\n\nbuy bread\n' }],
        },
      ],
    })
    expect(run.protocolVersion).toBe('2026-07-28')
    expect(ok(run, 0).discover.supportedVersions).toContain('2026-07-28')
    checkWork(run, root)
    const listened = ok(run, workSteps(root).length)
    // Only what is watched is acknowledged: a file outside the allowed directories is left out.
    expect(listened.honored).toEqual({ resourceSubscriptions: [uri] })
    expect(listened.events).toEqual([expect.objectContaining({ type: 'ResourceUpdated', uri })])
    const stamped = run.notifications.find((note) => note.method === 'notifications/resources/updated')
    expect(stamped?.params).toMatchObject({
      uri,
      _meta: { 'io.modelcontextprotocol/subscriptionId': expect.any(String) },
    })
  })

  it('with the initialize handshake (2025-11-25) works with files and gets resources/subscribe updates', async () => {
    const { target, root } = await setup()
    const uri = `file://${root}/notes.md`
    const run = await runPythonClient({
      target,
      mode: 'legacy',
      steps: [
        ...workSteps(root),
        { op: 'subscribe', uri },
        { op: 'write_local', path: `${root}/notes.md`, content: 'changed\n' },
        { op: 'wait_notifications', method: 'notifications/resources/updated', count: 1, timeout: 20 },
      ],
    })
    expect(run.protocolVersion).toBe('2025-11-25')
    expect(ok(run, 0).initialize.protocolVersion).toBe('2025-11-25')
    checkWork(run, root)
    expect(ok(run, workSteps(root).length + 2).notifications).toEqual([
      { method: 'notifications/resources/updated', params: expect.objectContaining({ uri }) },
    ])
  })
})

/** Realistic work: search, write, edit, read back, resources, a refused path, bad arguments. */
function workSteps(root: string) {
  return [
    { op: 'info' },
    { op: 'list_tools' },
    { op: 'call_tool', name: 'search_content', arguments: { path: '.', pattern: 'milk' } },
    { op: 'call_tool', name: 'write_file', arguments: { path: 'draft.md', content: 'first draft\n' } },
    {
      op: 'call_tool',
      name: 'edit_file',
      arguments: { path: 'draft.md', edits: [{ old_text: 'first', new_text: 'second' }] },
    },
    { op: 'call_tool', name: 'read_text_file', arguments: { path: 'draft.md' } },
    { op: 'list_resources' },
    { op: 'read_resource', uri: `file://${root}/notes.md` },
    { op: 'call_tool', name: 'read_text_file', arguments: { path: '../outside.txt' } },
    { op: 'call_tool', name: 'read_text_file', arguments: { path: 5 } },
    { op: 'call_tool', name: 'read_text_fil', arguments: { path: 'notes.md' } },
  ]
}

function checkWork(run: PythonRun, root: string) {
  expect(run.connectError).toBeUndefined()
  expect(ok(run, 0).serverInfo.name).toBe('keel-fs')
  expect(ok(run, 0).capabilities.resources.subscribe).toBe(true)
  expect(ok(run, 1).tools.map((tool: { name: string }) => tool.name)).toContain('search_content')
  expect(text(ok(run, 2))).toBe('notes.md:3:remember the milk')
  expect(ok(run, 3).isError).toBe(false)
  expect(text(ok(run, 4))).toContain('+second draft')
  expect(text(ok(run, 5))).toBe('second draft\n')
  expect(ok(run, 6).resources.map((resource: { uri: string }) => resource.uri)).toContain(`file://${root}`)
  expect(ok(run, 7).contents[0].text).toContain('remember the milk')
  expect(ok(run, 8).isError).toBe(true)
  expect(text(ok(run, 8))).toContain('Allowed directories')
  // SEP-1303: the model reads what was wrong with its arguments; an unknown tool stays a protocol error.
  expect(ok(run, 9).isError).toBe(true)
  expect(text(ok(run, 9))).toMatch(
    /^invalid_argument: Invalid arguments for tool read_text_file: path: .*expected string/,
  )
  expect(run.results[10]).toMatchObject({
    error: { code: -32602, message: expect.stringContaining('Unknown tool') },
  })
}
