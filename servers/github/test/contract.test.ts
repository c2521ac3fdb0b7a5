import { checkToolContract, connectInMemory, toolListSnapshot } from '@keel-mcp/core/testing'
import { describe, expect, it } from 'vitest'
import { server } from '../src/server.js'

describe('github contract', () => {
  it('follows the tool naming and annotation rules', () => {
    const tools = typeof server.tools === 'function' ? [] : server.tools
    expect(checkToolContract(tools, { serverName: 'github' })).toEqual([])
  })

  it('keeps its tool list stable', async () => {
    const connection = await connectInMemory(server)
    try {
      expect(toolListSnapshot((await connection.client.listTools()).tools)).toMatchSnapshot()
    } finally {
      await connection.close()
    }
  })

  it('reports a full store as too_large with a hint', async () => {
    const connection = await connectInMemory(server, { argv: ['--max-notes', '1'] })
    try {
      await connection.client.callTool({ name: 'add_note', arguments: { title: 'a', body: 'b' } })
      const second = await connection.client.callTool({
        name: 'add_note',
        arguments: { title: 'c', body: 'd' },
      })
      expect(second.isError).toBe(true)
      expect(second.content[0].text).toBe(
        'too_large: the store holds at most 1 notes\nHint: Restart the server with a larger --max-notes.',
      )
    } finally {
      await connection.close()
    }
  })

  it('paginates search results', async () => {
    const connection = await connectInMemory(server)
    try {
      for (let index = 0; index < 5; index++) {
        await connection.client.callTool({ name: 'add_note', arguments: { title: `n${index}`, body: 'x' } })
      }
      const first = await connection.client.callTool({ name: 'search_notes', arguments: { limit: 3 } })
      expect(first.structuredContent.notes).toHaveLength(3)
      const second = await connection.client.callTool({
        name: 'search_notes',
        arguments: { limit: 3, cursor: first.structuredContent.nextCursor },
      })
      expect(second.structuredContent.notes.map((note: { title: string }) => note.title)).toEqual([
        'n3',
        'n4',
      ])
      expect(second.structuredContent.nextCursor).toBeUndefined()
    } finally {
      await connection.close()
    }
  })
})
