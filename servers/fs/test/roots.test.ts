import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { call, connect, fails, ok, useConnections } from './helpers.js'
import { makeTree, useTempDirectories } from './temp-tree.js'

const tempDirectory = useTempDirectories()
useConnections()

async function setup() {
  const base = await tempDirectory()
  const project = path.join(base, 'project')
  await makeTree(base, {
    project: { 'top.txt': 'top\n', src: { 'a.ts': 'a\n' }, docs: { 'b.md': 'b\n' } },
    elsewhere: { 'c.txt': 'c\n' },
  })
  return { base, project, elsewhere: path.join(base, 'elsewhere') }
}

const uri = (directory: string) => ({ uri: `file://${directory}` })

describe.each(['v2', 'v1'] as const)('client roots (%s client)', (generation) => {
  it('narrow the configured directories to a root inside them', async () => {
    const { project } = await setup()
    const connection = await connect([project], { generation, roots: [uri(path.join(project, 'src'))] })
    const allowed = await ok(connection, 'list_allowed_directories')
    expect(allowed.structured).toEqual({ directories: [path.join(project, 'src')], narrowed: true })
    expect(allowed.text).toBe(`Allowed directories (narrowed by the client's roots):\n${project}/src`)
    expect((await ok(connection, 'read_text_file', { path: 'a.ts' })).text).toBe('a\n')
    const denied = await fails(
      connection,
      'read_text_file',
      { path: path.join(project, 'top.txt') },
      'permission_denied',
    )
    expect(denied).toContain(`Allowed directories: ${project}/src`)
  })

  it('never widen: a root containing the configured directory leaves just that directory', async () => {
    const { base, project } = await setup()
    const connection = await connect([project], { generation, roots: [uri(base)] })
    expect((await ok(connection, 'list_allowed_directories')).structured.directories).toEqual([project])
    await fails(
      connection,
      'read_text_file',
      { path: path.join(base, 'elsewhere', 'c.txt') },
      'permission_denied',
    )
  })
})

describe('client roots', () => {
  it('outside every configured directory leave nothing accessible, and say why', async () => {
    const { project, elsewhere } = await setup()
    const connection = await connect([project], { roots: [uri(elsewhere)] })
    const text = await fails(
      connection,
      'read_text_file',
      { path: path.join(elsewhere, 'c.txt') },
      'permission_denied',
    )
    expect(text).toContain(
      `The client's roots (${elsewhere}) lie outside the server's allowed directories (${project})`,
    )
    const allowed = await ok(connection, 'list_allowed_directories')
    expect(allowed.structured).toEqual({ directories: [], narrowed: true })
    expect(allowed.text).toMatch(/^None\. The client's roots/)
  })

  it('keep only the part that overlaps when some roots are inside and some outside', async () => {
    const { project, elsewhere } = await setup()
    const connection = await connect([project], { roots: [uri(elsewhere), uri(path.join(project, 'docs'))] })
    expect((await ok(connection, 'list_allowed_directories')).structured.directories).toEqual([
      path.join(project, 'docs'),
    ])
    expect((await ok(connection, 'search_files', { path: '.', pattern: '*' })).structured.paths).toEqual([
      'b.md',
    ])
  })

  it('are used as they are when the server was started without directories', async () => {
    const { elsewhere } = await setup()
    const connection = await connect([], { roots: [uri(elsewhere)] })
    expect((await ok(connection, 'list_allowed_directories')).structured).toEqual({
      directories: [elsewhere],
      narrowed: true,
    })
    expect((await ok(connection, 'read_text_file', { path: 'c.txt' })).text).toBe('c\n')
  })

  it('do not stand in for configured directories that could not be used', async () => {
    const { base, elsewhere } = await setup()
    const missing = path.join(base, 'missing')
    const connection = await connect([missing], { roots: [uri(elsewhere)] })
    const text = await fails(
      connection,
      'read_text_file',
      { path: path.join(elsewhere, 'c.txt') },
      'permission_denied',
    )
    expect(text).toBe(
      `permission_denied: None of the configured directories can be used (${missing} does not exist). Fix the server's arguments and restart it.`,
    )
  })

  it('change nothing when the list is empty or holds no local directories', async () => {
    const { project } = await setup()
    for (const roots of [[], [{ uri: 'https://example.com/repo' }]]) {
      const connection = await connect([project], { roots })
      expect((await ok(connection, 'list_allowed_directories')).structured).toEqual({
        directories: [project],
        narrowed: false,
      })
    }
  })
})

describe('no directories at all', () => {
  it('serves anyway and every tool says to pass directories or offer roots', async () => {
    const connection = await connect([])
    const text = await fails(connection, 'read_text_file', { path: 'x.txt' }, 'permission_denied')
    expect(text).toContain('the server was started without directories and the client offers no roots')
    expect(text).toContain('mcp-server-fs <dir>')
    await fails(connection, 'write_file', { path: 'x.txt', content: 'x' }, 'permission_denied')
    const allowed = await call(connection, 'list_allowed_directories')
    expect(allowed.isError).toBe(false)
    expect(allowed.structured).toEqual({ directories: [], narrowed: false })
  })
})
