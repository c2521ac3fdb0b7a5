import { checkToolContract, connectInMemory, toolListSnapshot } from '@keel-mcp/core/testing'
import { describe, expect, it } from 'vitest'
import { server } from '../src/server.js'

describe('example contract', () => {
  it('follows the tool naming and annotation rules', () => {
    const tools = typeof server.tools === 'function' ? [] : server.tools
    expect(
      checkToolContract(tools, { serverName: 'example', auditArguments: server.auditArguments }),
    ).toEqual([])
  })

  it('keeps its tool list stable', async () => {
    const connection = await connectInMemory(server)
    try {
      expect(toolListSnapshot((await connection.client.listTools()).tools)).toMatchSnapshot()
    } finally {
      await connection.close()
    }
  })

  it('shows its icon as an inline SVG in serverInfo', async () => {
    const connection = await connectInMemory(server)
    try {
      const icons = (connection.client.getServerVersion() as { icons?: Array<Record<string, unknown>> }).icons
      expect(icons).toEqual([expect.objectContaining({ mimeType: 'image/svg+xml', sizes: ['any'] })])
      expect(String(icons?.[0]?.src)).toMatch(/^data:image\/svg\+xml;base64,/)
    } finally {
      await connection.close()
    }
  })

  it('runs count_slowly as a task that a client polls to its result', async () => {
    const connection = await connectInMemory(server)
    try {
      const { client } = connection
      const created = await client.request('tools/call', {
        name: 'count_slowly',
        arguments: { n: 3, interval_ms: 5 },
        task: { ttl: 60_000 },
      })
      expect(created.task.status).toBe('working')
      const result = await client.request('tasks/result', { taskId: created.task.taskId })
      expect(result.structuredContent).toEqual({ counted: 3 })
      expect((await client.request('tasks/get', { taskId: created.task.taskId })).status).toBe('completed')
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

  it('tells a 2026-07-28 change stream when a note is added, and stops watching when it closes', async () => {
    const updates: string[] = []
    let wake: () => void = () => {}
    const connection = await connectInMemory(server, {
      era: 'modern',
      onResourceUpdated: (params) => {
        updates.push(String(params.uri))
        wake()
      },
    })
    // Counts the watches the resource's subscribe hook holds open.
    const notes = connection.runtime.deps.notes
    const onChange = notes.onChange.bind(notes)
    let watching = 0
    notes.onChange = (listener) => {
      watching++
      const stop = onChange(listener)
      return () => {
        watching--
        stop()
      }
    }
    try {
      const stream = await connection.client.listen({
        resourceSubscriptions: ['note://index', 'note://nope'],
      })
      expect(watching).toBe(1)
      // note://nope is served by no subscribable resource: left out of the acknowledgement.
      expect(stream.honored).toEqual({ resourceSubscriptions: ['note://index'] })
      const arrived = new Promise<void>((resolve) => {
        wake = resolve
      })
      await connection.client.callTool({ name: 'add_note', arguments: { title: 'milk', body: 'buy' } })
      await arrived
      expect(updates).toEqual(['note://index'])
      await stream.close()
      for (let attempt = 0; attempt < 100 && watching > 0; attempt++)
        await new Promise((resolve) => setTimeout(resolve, 10))
      expect(watching).toBe(0)
    } finally {
      await connection.close()
    }
  })
})
