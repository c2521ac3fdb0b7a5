import { checkToolContract, toolListSnapshot } from '@keel-mcp/core/testing'
import { describe, expect, it } from 'vitest'
import { server, tools } from '../src/server.js'
import { call, connect, invalidArguments, ok, rejected, useConnections } from './helpers.js'
import { makeTree, useTempDirectories } from './temp-tree.js'

const tempDirectory = useTempDirectories()
useConnections()

const readingTools = [
  'read_text_file',
  'read_media_file',
  'read_multiple_files',
  'list_directory',
  'directory_tree',
  'search_files',
  'search_content',
  'get_file_info',
  'list_allowed_directories',
]
const writingTools = ['write_file', 'edit_file', 'create_directory', 'move_file']

describe('fs contract', () => {
  it('follows the tool naming and annotation rules', () => {
    expect(checkToolContract(tools, { serverName: 'fs', auditArguments: server.auditArguments })).toEqual([])
  })

  it('keeps its tool list stable', async () => {
    const connection = await connect([await tempDirectory()])
    expect(toolListSnapshot((await connection.client.listTools()).tools)).toMatchSnapshot()
  })

  it('lists every tool, reading ones first, and keeps the list under 12 kB', async () => {
    const connection = await connect([await tempDirectory()])
    const { tools: listed } = await connection.client.listTools()
    expect(listed.map((tool) => tool.name)).toEqual([...readingTools, ...writingTools])
    expect(Buffer.byteLength(JSON.stringify({ tools: listed }))).toBeLessThan(12_000)
  })

  it('marks exactly the writing tools as not read-only, and the overwriting ones destructive', async () => {
    const connection = await connect([await tempDirectory()])
    const { tools: listed } = await connection.client.listTools()
    // Listed as the spec reads hints: an absent one means its default (core lists only what differs).
    const defaults = {
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    }
    const annotations = Object.fromEntries(
      listed.map((tool) => [tool.name, { ...defaults, ...tool.annotations } as typeof defaults]),
    )
    for (const name of readingTools)
      expect(annotations[name]).toMatchObject({ readOnlyHint: true, openWorldHint: false })
    for (const name of writingTools)
      expect(annotations[name]).toMatchObject({ readOnlyHint: false, openWorldHint: false })
    expect(annotations.write_file?.destructiveHint).toBe(true)
    expect(annotations.edit_file?.destructiveHint).toBe(true)
    expect(annotations.move_file?.destructiveHint).toBe(true)
    expect(annotations.create_directory?.destructiveHint).toBe(false)
  })

  // The goal is 155 tokens a tool with descriptions that still say when to use which tool. The structure
  // alone (13 input and output schemas, annotations, names) is ≈ 125 a tool; with the descriptions the
  // default tools list ≈ 153 (from 203), all 15 ≈ 150.
  it('keeps the default catalogue within 155 tokens a tool (bytes of the tools/list result ÷ 4)', async () => {
    const connection = await connect([await tempDirectory()])
    const { tools } = await connection.client.listTools()
    expect(tools).toHaveLength(13)
    expect(Buffer.byteLength(JSON.stringify({ tools })) / 4 / tools.length).toBeLessThanOrEqual(155)
  })

  it('gives every tool an output schema', async () => {
    const connection = await connect([await tempDirectory()])
    const { tools: listed } = await connection.client.listTools()
    expect(listed.filter((tool) => !tool.outputSchema).map((tool) => tool.name)).toEqual([])
  })

  it('removes every writing tool from the list with --read-only, and says so in the instructions', async () => {
    const directory = await tempDirectory()
    const connection = await connect([directory, '--read-only'])
    const { tools: listed } = await connection.client.listTools()
    expect(listed.map((tool) => tool.name)).toEqual(readingTools)
    expect(connection.client.getInstructions()).toContain('Read-only')
    await rejected(connection, 'write_file', { path: 'x.txt', content: 'x' }, /Unknown tool "write_file"/)
  })

  it('names itself and explains paths in its instructions', async () => {
    const connection = await connect([await tempDirectory()])
    expect(connection.client.getServerVersion()).toMatchObject({ name: 'keel-fs' })
    expect(connection.client.getInstructions()).toContain('relative paths resolve against the first')
    expect(server.positionals?.name).toBe('directory')
  })
})

describe('bad input', () => {
  it.each([
    ['a number for a path', 'read_text_file', { path: 7 }, /path: Invalid input: expected string/],
    ['a missing required field', 'write_file', { path: 'a.txt' }, /content/],
    ['an unknown argument', 'read_text_file', { path: 'a.txt', lines: 3 }, /unknown argument\(s\): lines/],
    ['a zero head', 'read_text_file', { path: 'a.txt', head: 0 }, /head/],
    ['a fractional line number', 'read_text_file', { path: 'a.txt', start_line: 1.5 }, /start_line/],
    ['a head beyond safe integers', 'read_text_file', { path: 'a.txt', head: 2 ** 60 }, /head/],
    ['an empty edit list', 'edit_file', { path: 'a.txt', edits: [] }, /edits/],
    [
      'an empty old_text',
      'edit_file',
      { path: 'a.txt', edits: [{ old_text: '', new_text: 'x' }] },
      /old_text/,
    ],
    ['no paths', 'read_multiple_files', { paths: [] }, /paths/],
    ['a string for a list', 'directory_tree', { path: '.', exclude: 'dist' }, /exclude/],
    ['an unknown sort', 'list_directory', { path: '.', sort: 'color' }, /sort/],
    ['too much context', 'search_content', { path: '.', pattern: 'x', context: 100 }, /context/],
  ])('refuses %s with a tool error naming the field', async (_name, tool, args, message) => {
    const directory = await tempDirectory()
    await makeTree(directory, { 'a.txt': 'alpha\n' })
    const connection = await connect([directory])
    await invalidArguments(connection, tool, args, message)
    // The server keeps serving.
    expect((await ok(connection, 'read_text_file', { path: 'a.txt' })).text).toBe('alpha\n')
  })

  it('keeps serving after tool errors and protocol errors alike', async () => {
    const directory = await tempDirectory()
    await makeTree(directory, { 'a.txt': 'alpha\n' })
    const connection = await connect([directory])
    expect((await call(connection, 'read_text_file', { path: 'missing.txt' })).isError).toBe(true)
    await rejected(connection, 'no_such_tool', {}, /Unknown tool/)
    expect(await connection.client.ping()).toEqual({})
    expect((await ok(connection, 'read_text_file', { path: 'a.txt' })).text).toBe('alpha\n')
  })
})
