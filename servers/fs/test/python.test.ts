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

describe.each(transports)('the Python MCP SDK over %s', (_transport, setup) => {
  it.each([
    ['auto', '2026-07-28'],
    ['legacy', '2025-11-25'],
  ] as const)('in %s mode reads, searches, writes and edits files (protocol %s)', async (mode, version) => {
    const { target, root } = await setup()
    const file = `py-${mode}.md`
    const run = await runPythonClient({
      target,
      mode,
      steps: [
        { op: 'info' },
        { op: 'list_tools' },
        { op: 'call_tool', name: 'search_content', arguments: { path: '.', pattern: 'milk' } },
        { op: 'call_tool', name: 'write_file', arguments: { path: file, content: 'first draft\n' } },
        {
          op: 'call_tool',
          name: 'edit_file',
          arguments: { path: file, edits: [{ old_text: 'first', new_text: 'second' }] },
        },
        { op: 'call_tool', name: 'read_text_file', arguments: { path: file } },
        { op: 'list_resources' },
        { op: 'read_resource', uri: `file://${root}/notes.md` },
        { op: 'call_tool', name: 'read_text_file', arguments: { path: '../outside.txt' } },
      ],
    })
    expect(run.connectError).toBeUndefined()
    expect(run.protocolVersion).toBe(version)
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
  })
})
