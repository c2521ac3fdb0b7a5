import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  type Connection,
  connectHttp,
  connectStdio,
  readAuditLines,
  spawnHttp,
  spawnRaw,
} from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { call, ok } from './helpers.js'
import { makeTree, useTempDirectories } from './temp-tree.js'

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const tempDirectory = useTempDirectories()
const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
})

const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13])

async function workspace() {
  const base = await tempDirectory()
  const root = path.join(base, 'work')
  await makeTree(base, {
    work: {
      '.gitignore': 'build/\n',
      'notes.md': '# Notes\n\nremember the milk\n',
      src: { 'main.ts': 'export const answer = 41\n' },
      build: { 'out.js': 'remember' },
      'pic.png': png,
    },
    other: { 'o.txt': 'other\n' },
  })
  return { base, root, other: path.join(base, 'other') }
}

/** Every stdout line must be a JSON-RPC message: stdout belongs to the protocol. */
function expectOnlyJsonRpc(lines: string[]) {
  expect(lines.length).toBeGreaterThan(0)
  for (const line of lines) expect(JSON.parse(line).jsonrpc).toBe('2.0')
}

function runBin(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk
    })
    child.on('exit', (code) => resolve({ code, stdout, stderr }))
  })
}

/** One pass over every tool, as a client would use them. */
async function exerciseEveryTool(connection: Pick<Connection, 'client'>, root: string) {
  const { tools } = await connection.client.listTools()
  expect(tools).toHaveLength(13)
  expect((await ok(connection, 'list_allowed_directories')).structured.directories).toEqual([root])
  expect((await ok(connection, 'directory_tree', { path: '.' })).text).toBe(
    ['.gitignore', 'notes.md', 'pic.png', 'src/', '  main.ts'].join('\n'),
  )
  expect((await ok(connection, 'list_directory', { path: 'src' })).structured.entries).toEqual([
    { name: 'main.ts', type: 'file' },
  ])
  expect((await ok(connection, 'search_files', { path: '.', pattern: '*.ts' })).structured.paths).toEqual([
    'src/main.ts',
  ])
  expect((await ok(connection, 'search_content', { path: '.', pattern: 'remember' })).text).toBe(
    'notes.md:3:remember the milk',
  )
  expect((await ok(connection, 'read_text_file', { path: 'notes.md', tail: 1 })).text).toBe(
    'remember the milk\n',
  )
  expect((await ok(connection, 'read_media_file', { path: 'pic.png' })).content[0]).toMatchObject({
    type: 'image',
    mimeType: 'image/png',
  })
  expect((await ok(connection, 'get_file_info', { path: 'notes.md' })).structured.type).toBe('file')
  await ok(connection, 'create_directory', { path: 'docs/guides' })
  await ok(connection, 'write_file', { path: 'docs/guides/a.md', content: 'draft one\n' })
  expect(
    (
      await ok(connection, 'edit_file', {
        path: 'docs/guides/a.md',
        edits: [{ old_text: 'one', new_text: 'two' }],
      })
    ).text,
  ).toContain('+draft two')
  await ok(connection, 'move_file', { source: 'docs/guides/a.md', destination: 'docs/a.md' })
  const both = await ok(connection, 'read_multiple_files', { paths: ['docs/a.md', 'src/main.ts'] })
  expect(both.structured.files.map((file: { content: string }) => file.content)).toEqual([
    'draft two\n',
    'export const answer = 41\n',
  ])
  const denied = await call(connection, 'read_text_file', { path: '../other/o.txt' })
  expect(denied.isError).toBe(true)
  expect(denied.text).toContain(`Allowed directories: ${root}`)
}

describe.each(['v2', 'v1'] as const)('the built bin over stdio with the %s client', (generation) => {
  it('serves every tool', async () => {
    const { root } = await workspace()
    const connection = await connectStdio({ command: process.execPath, args: [BIN, root], generation })
    open.push(connection)
    await exerciseEveryTool(connection, root)
  })

  it('narrows to the roots the client offers', async () => {
    const { root } = await workspace()
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN, root],
      generation,
      roots: [{ uri: `file://${root}/src` }],
    })
    open.push(connection)
    expect((await ok(connection, 'list_allowed_directories')).structured.directories).toEqual([`${root}/src`])
    expect((await call(connection, 'read_text_file', { path: `${root}/notes.md` })).isError).toBe(true)
  })
})

describe.each(['v2', 'v1'] as const)('the built bin over HTTP with the %s client', (generation) => {
  it('serves every tool over Streamable HTTP', async () => {
    const { root } = await workspace()
    const server = await spawnHttp(process.execPath, [BIN, root])
    open.push(server)
    const connection = await connectHttp(server.url, { generation })
    open.unshift(connection)
    await exerciseEveryTool(connection, root)
  })
})

describe('2026-07-28 change streams with the SDK v2 client', () => {
  it.each(['stdio', 'http'] as const)(
    'deliver notifications/resources/updated on a subscriptions/listen stream (%s)',
    async (transport) => {
      const { root } = await workspace()
      const uri = `file://${root}/notes.md`
      const updates: string[] = []
      let wake: () => void = () => {}
      const options = {
        era: 'modern' as const,
        onResourceUpdated: (params: Record<string, unknown>) => {
          updates.push(String(params.uri))
          wake()
        },
      }
      let connection: Connection
      if (transport === 'stdio') {
        connection = await connectStdio({ command: process.execPath, args: [BIN, root], ...options })
      } else {
        const server = await spawnHttp(process.execPath, [BIN, root])
        open.push(server)
        connection = await connectHttp(server.url, options)
      }
      open.unshift(connection)
      const stream = await connection.client.listen({ resourceSubscriptions: [uri, `file://${root}/../x`] })
      expect(stream.honored).toEqual({ resourceSubscriptions: [uri] })
      const arrived = new Promise<void>((resolve) => {
        wake = resolve
      })
      await ok(connection, 'write_file', { path: 'notes.md', content: 'changed\n' })
      await arrived
      expect(updates).toEqual([uri])
      await stream.close()
    },
  )
})

describe('HTTP sessions', () => {
  it('narrow each session by its own client roots, without leaking into the others', async () => {
    const { base, root, other } = await workspace()
    const server = await spawnHttp(process.execPath, [BIN, base])
    open.push(server)
    const first = await connectHttp(server.url, { roots: [{ uri: `file://${root}` }] })
    const second = await connectHttp(server.url, { roots: [{ uri: `file://${other}` }] })
    const unnarrowed = await connectHttp(server.url, { generation: 'v1' })
    open.unshift(first, second, unnarrowed)
    expect((await ok(first, 'list_allowed_directories')).structured.directories).toEqual([root])
    expect((await ok(second, 'list_allowed_directories')).structured.directories).toEqual([other])
    expect((await ok(unnarrowed, 'list_allowed_directories')).structured.directories).toEqual([base])
    expect((await ok(first, 'read_text_file', { path: 'notes.md' })).text).toContain('milk')
    expect((await call(first, 'read_text_file', { path: `${other}/o.txt` })).isError).toBe(true)
    expect((await ok(second, 'read_text_file', { path: 'o.txt' })).text).toBe('other\n')
    expect((await call(second, 'read_text_file', { path: `${root}/notes.md` })).isError).toBe(true)
    expect((await ok(first, 'list_allowed_directories')).structured.directories).toEqual([root])
  })
})

describe('the wire, raw', () => {
  it('follows roots/list_changed: the next call uses the new roots', async () => {
    const { base, root, other } = await workspace()
    const raw = spawnRaw(process.execPath, [BIN, base])
    open.push({ close: async () => void (await raw.end()) })
    await raw.request('initialize', {
      protocolVersion: '2025-11-25',
      capabilities: { roots: { listChanged: true } },
      clientInfo: { name: 'roots-test', version: '1.0.0' },
    })
    raw.sendJson({ jsonrpc: '2.0', method: 'notifications/initialized' })
    const answerRoots = async (roots: string[]) => {
      const request = await raw.next((message) => message.method === 'roots/list')
      raw.sendJson({
        jsonrpc: '2.0',
        id: request.id,
        result: { roots: roots.map((directory) => ({ uri: `file://${directory}` })) },
      })
    }
    const allowed = async (id: string) => {
      raw.sendJson({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'list_allowed_directories', arguments: {} },
      })
      return raw.next((message) => message.id === id)
    }
    const firstCall = allowed('first')
    await answerRoots([root])
    expect((await firstCall).result.structuredContent.directories).toEqual([root])
    raw.sendJson({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' })
    await answerRoots([other])
    expect((await allowed('second')).result.structuredContent.directories).toEqual([other])
    const read = await raw.request('tools/call', {
      name: 'read_text_file',
      arguments: { path: `${root}/notes.md` },
    })
    expect(read.result.isError).toBe(true)
    const { code } = await raw.end()
    expect(code).toBe(0)
    expectOnlyJsonRpc(raw.lines)
  })

  it('exits with 0 within a second when stdin closes, having written only JSON-RPC to stdout', async () => {
    const { root } = await workspace()
    const raw = spawnRaw(process.execPath, [BIN, root])
    await raw.initialize()
    const listed = await raw.request('tools/list', {})
    expect(listed.result.tools).toHaveLength(13)
    const subscribed = await raw.request('resources/subscribe', { uri: `file://${root}/notes.md` })
    expect(subscribed.result).toEqual({})
    const { code, ms } = await raw.end()
    expect(code).toBe(0)
    expect(ms).toBeLessThan(1000)
    expectOnlyJsonRpc(raw.lines)
  })

  it('answers a bad tool argument with a tool error naming the field, and keeps serving', async () => {
    const { root } = await workspace()
    const raw = spawnRaw(process.execPath, [BIN, root])
    open.push({ close: async () => void (await raw.end()) })
    await raw.initialize()
    const wrong = await raw.request('tools/call', { name: 'read_text_file', arguments: { path: ['x'] } })
    expect(wrong.result.isError).toBe(true)
    expect(wrong.result.content[0].text).toMatch(
      /^invalid_argument: Invalid arguments for tool read_text_file: path: .*expected string/,
    )
    const right = await raw.request('tools/call', {
      name: 'read_text_file',
      arguments: { path: 'src/main.ts' },
    })
    expect(right.result.content[0].text).toBe('export const answer = 41\n')
  })
})

describe('the audit log', () => {
  it('records which files each call touched, and never what was written', async () => {
    const { base, root } = await workspace()
    const file = path.join(base, 'audit.jsonl')
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN, root, '--audit-log', file],
    })
    open.push(connection)
    await ok(connection, 'read_text_file', { path: 'notes.md' })
    await ok(connection, 'write_file', { path: 'plan.md', content: 'the launch date is under embargo' })
    await ok(connection, 'move_file', { source: 'plan.md', destination: 'src/plan.md' })
    await ok(connection, 'read_multiple_files', { paths: ['notes.md', 'src/main.ts'] })
    const lines = await readAuditLines(file, 4)
    expect(lines.map((line) => [line.tool, line.outcome, line.arguments])).toEqual([
      ['read_text_file', 'ok', { path: 'notes.md' }],
      ['write_file', 'ok', { path: 'plan.md' }],
      ['move_file', 'ok', { source: 'plan.md', destination: 'src/plan.md' }],
      ['read_multiple_files', 'ok', { paths: ['notes.md', 'src/main.ts'] }],
    ])
    expect(await readFile(file, 'utf8')).not.toContain('embargo')
  })
})

describe('the command line', () => {
  it('starts with a clear warning when a directory is missing, and serves the others', async () => {
    const { base, root } = await workspace()
    const missing = path.join(base, 'missing')
    const stderr: string[] = []
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN, missing, root],
      onStderr: (chunk) => stderr.push(chunk),
    })
    open.push(connection)
    expect((await ok(connection, 'list_allowed_directories')).structured.directories).toEqual([root])
    expect(stderr.join('')).toContain(`directory ${missing} does not exist; it is ignored`)
  })

  it('starts without directories, warns, and every tool says what to do', async () => {
    const stderr: string[] = []
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN],
      onStderr: (chunk) => stderr.push(chunk),
    })
    open.push(connection)
    const result = await call(connection, 'read_text_file', { path: 'x.txt' })
    expect(result.text).toMatch(
      /^permission_denied: No allowed directories: the server was started without directories/,
    )
    expect(stderr.join('')).toContain('no directories given')
  })

  it('lists no writing tool with --read-only', async () => {
    const { root } = await workspace()
    const connection = await connectStdio({ command: process.execPath, args: [BIN, root, '--read-only'] })
    open.push(connection)
    const names = (await connection.client.listTools()).tools.map((tool) => tool.name)
    expect(names).toEqual([
      'read_text_file',
      'read_media_file',
      'read_multiple_files',
      'list_directory',
      'directory_tree',
      'search_files',
      'search_content',
      'get_file_info',
      'list_allowed_directories',
    ])
  })

  it('prints help naming the directories, and the version', async () => {
    const help = await runBin(['--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Usage: mcp-server-fs [directory...] [options]')
    expect(help.stdout).toContain('--read-only')
    // The destructive toolset is listed, and said to be off unless named.
    expect(help.stdout).toContain('--toolsets')
    expect(help.stdout).toMatch(/destructive +copy_file, delete_file \(off unless named\)/)
    const version = await runBin(['--version'])
    const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'))
    expect(version.stdout.trim()).toBe(pkg.version)
  })

  it.each([
    [
      '--toolsets',
      'files',
      /^mcp-server-fs: Invalid --toolsets: unknown toolset "files"; known: all, default, destructive/,
    ],
    [
      '--tools',
      'read_file',
      /^mcp-server-fs: Invalid --tools: unknown tool "read_file"; known: read_text_file, /,
    ],
    [
      '--exclude-tools',
      'write',
      /^mcp-server-fs: Invalid --exclude-tools: unknown tool "write"; known: .*write_file/,
    ],
  ])('refuses %s %s at start with exit 2, naming what exists', async (flag, value, message) => {
    const { root } = await workspace()
    const { code, stdout, stderr } = await runBin([root, flag, value])
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toMatch(message)
  })
})
