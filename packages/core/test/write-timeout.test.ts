import { describe, expect, it } from 'vitest'
import { defineServer, defineTool } from '../src/index.js'
import { connectInMemory } from '../src/testing/index.js'

/** Two tools that never finish, one that only reads and one that changes something. */
const server = defineServer({
  name: 'timeouts',
  version: '0.0.0',
  description: 'Tools that time out.',
  tools: [
    defineTool({
      name: 'slow_read',
      title: 'Slow read',
      description: 'Reads for ever.',
      input: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
      timeoutMs: 100,
      run: () => new Promise<never>(() => {}),
    }),
    defineTool({
      name: 'slow_post',
      title: 'Slow post',
      description: 'Posts, and is stopped before the answer.',
      input: {},
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
      timeoutMs: 100,
      run: () => new Promise<never>(() => {}),
    }),
  ],
  createDeps: () => ({}),
})

describe('a timed-out call', () => {
  it('tells the model to try a read again, and to look before repeating a write', async () => {
    const connection = await connectInMemory(server)
    try {
      const read = await connection.client.callTool({ name: 'slow_read', arguments: {} })
      const text = (result: typeof read) => (result.content as Array<{ text: string }>)[0]?.text ?? ''
      expect(read.isError).toBe(true)
      expect(text(read)).toMatch(/^timeout: slow_read did not finish within 100 ms/)
      expect(text(read)).toContain('try again')
      expect(read._meta).toBeUndefined()

      const write = await connection.client.callTool({ name: 'slow_post', arguments: {} })
      expect(write.isError).toBe(true)
      expect(text(write)).toMatch(/^timeout: slow_post did not finish within 100 ms/)
      expect(text(write)).toContain('may have taken effect')
      expect(text(write)).not.toContain('try again')
      expect(write._meta).toEqual({ 'keel/error': { kind: 'timeout', unconfirmed: true } })
    } finally {
      await connection.close()
    }
  })
})
