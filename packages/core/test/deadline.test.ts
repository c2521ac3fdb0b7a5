import { describe, expect, it } from 'vitest'
import { cancelDeadline, defineServer, defineTool, setDeadline, z } from '../src/index.js'
import { type Connection, connectInMemory } from '../src/testing/index.js'

/** An entry that records its name when it expires, and a promise of that. */
function entry(name: string, expired: string[]) {
  let done!: () => void
  const settled = new Promise<void>((resolve) => {
    done = resolve
  })
  return {
    expire: () => {
      expired.push(name)
      done()
    },
    settled,
  }
}

describe('shared deadlines', () => {
  it('expires the entries of one duration in the order they were set, and not the cancelled ones', async () => {
    const expired: string[] = []
    const first = entry('first', expired)
    const cancelled = entry('cancelled', expired)
    const third = entry('third', expired)
    setDeadline(first, 40)
    setDeadline(cancelled, 40)
    await new Promise((resolve) => setTimeout(resolve, 15))
    setDeadline(third, 40)
    cancelDeadline(cancelled, 40)
    await third.settled
    expect(expired).toEqual(['first', 'third'])
  })

  it('keeps separate durations apart: a shorter one set later expires first', async () => {
    const expired: string[] = []
    const long = entry('long', expired)
    setDeadline(long, 80)
    setDeadline(entry('short', expired), 20)
    await long.settled
    expect(expired).toEqual(['short', 'long'])
  })

  it('expires an entry set again after its bucket emptied', async () => {
    const expired: string[] = []
    const again = entry('again', expired)
    setDeadline(again, 30)
    cancelDeadline(again, 30)
    const witness = entry('witness', expired)
    setDeadline(witness, 30)
    await witness.settled
    setDeadline(again, 30)
    await again.settled
    expect(expired).toEqual(['witness', 'again'])
  })
})

describe('a deadline beyond what a Node timer holds', () => {
  it('neither expires early nor overflows the timer (Node would fire it after 1 ms, and warn)', async () => {
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(warning.name)
    process.on('warning', onWarning)
    try {
      const expired: string[] = []
      const far = entry('far', expired)
      setDeadline(far, 2 ** 33)
      const near = entry('near', expired)
      setDeadline(near, 20)
      await near.settled
      await new Promise((resolve) => setImmediate(resolve))
      cancelDeadline(far, 2 ** 33)
      expect(expired).toEqual(['near'])
      expect(warnings).not.toContain('TimeoutOverflowWarning')
    } finally {
      process.off('warning', onWarning)
    }
  })
})

describe('the tool context', () => {
  it('keeps its signal, logger, client and functions when a wrapper spreads it', async () => {
    const seen: Record<string, string> = {}
    const inner = (context: Record<string, unknown>) => {
      for (const key of [
        'deps',
        'signal',
        'log',
        'client',
        'requestId',
        'session',
        'progress',
        'enableTools',
      ])
        seen[key] = typeof context[key]
      return { text: (context.signal as AbortSignal).aborted ? 'aborted' : 'running' }
    }
    const tool = defineTool({
      name: 'spread',
      title: 'Spread',
      description: 'Calls an inner run with a spread copy of its context.',
      input: { text: z.string().optional() },
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      run: (_args, context) => inner({ ...context, deps: { wrapped: true } }),
    })
    const connection: Connection = await connectInMemory(
      defineServer({
        name: 'spread',
        version: '0.0.0',
        description: 'A tool that spreads its context.',
        tools: [tool],
        createDeps: () => ({}),
      }),
    )
    try {
      const result = await connection.client.callTool({ name: 'spread', arguments: {} })
      expect(result.content).toEqual([{ type: 'text', text: 'running' }])
      expect(seen).toEqual({
        deps: 'object',
        signal: 'object',
        log: 'object',
        client: 'object',
        requestId: 'number',
        session: 'object',
        progress: 'function',
        enableTools: 'function',
      })
    } finally {
      await connection.close()
    }
  })
})
