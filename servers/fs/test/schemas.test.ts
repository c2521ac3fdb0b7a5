import { connectInMemory } from '@keel-mcp/core/testing'
import { describe, expect, it } from 'vitest'
import { server } from '../src/server.js'
import { makeTree, useTempDirectories } from './temp-tree.js'

const tempDirectory = useTempDirectories()

const png = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.alloc(24, 1),
])

// Every tool, called on a real directory through both client generations: each client checks
// structuredContent against the outputSchema it got from tools/list (the v1 client with Ajv) and
// throws when they disagree, so a call that resolves is a result that validates.
const calls: Array<[string, Record<string, unknown>]> = [
  ['list_allowed_directories', {}],
  ['read_text_file', { path: 'README.md', head: 1 }],
  ['read_media_file', { path: 'image.png' }],
  ['read_multiple_files', { paths: ['README.md', 'missing.txt'] }],
  ['list_directory', { sizes: true }],
  ['directory_tree', {}],
  ['search_files', { pattern: '*.ts' }],
  ['search_content', { pattern: 'TODO', context: 1 }],
  ['get_file_info', { path: 'src' }],
  ['create_directory', { path: 'notes' }],
  ['write_file', { path: 'notes/a.txt', content: 'one\ntwo\n' }],
  ['edit_file', { path: 'notes/a.txt', edits: [{ old_text: 'two', new_text: 'three' }] }],
  ['move_file', { source: 'notes/a.txt', destination: 'notes/b.txt' }],
]

describe.each([
  { label: 'v2 client', generation: 'v2' as const },
  { label: 'v1 client (Ajv)', generation: 'v1' as const },
])('structured results match the listed output schemas ($label)', ({ generation }) => {
  it('calls every tool and gets structuredContent the client validated', async () => {
    const root = await tempDirectory()
    await makeTree(root, {
      'README.md': '# Project\n\nHello.\n',
      'image.png': png,
      src: { 'app.ts': '// TODO: main\nexport const main = 1\n', lib: { 'helper.ts': 'export {}\n' } },
    })
    const connection = await connectInMemory(server, { generation, argv: [root] })
    try {
      const { tools } = await connection.client.listTools()
      expect(tools.filter((tool) => !tool.outputSchema).map((tool) => tool.name)).toEqual([])
      expect(calls.map(([name]) => name).sort()).toEqual(tools.map((tool) => String(tool.name)).sort())
      for (const [name, args] of calls) {
        const result = await connection.client.callTool({ name, arguments: args })
        const failure = result.isError ? (result.content as Array<{ text: string }>)[0]?.text : undefined
        expect({ name, failure }).toEqual({ name, failure: undefined })
        expect(result.structuredContent).toBeTypeOf('object')
      }
    } finally {
      await connection.close()
    }
  })
})
