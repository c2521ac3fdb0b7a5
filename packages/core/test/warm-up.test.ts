import { afterEach, describe, expect, it } from 'vitest'
import { defineServer, toolFactory, z } from '../src/index.js'
import { type Connection, connectInMemory } from '../src/testing/index.js'

interface Deps {
  warmUps: number
  fail: boolean
  warmed: Promise<void>
  onWarm: () => void
}

const defineTool = toolFactory<Deps>()

function spec(fail: boolean) {
  return defineServer<Deps>({
    name: 'warm',
    version: '1.0.0',
    description: 'warm-up fixture',
    tools: [
      defineTool({
        name: 'count',
        title: 'Count',
        description: 'How many warm-ups ran.',
        input: {},
        output: { warmUps: z.number() },
        annotations: { readOnlyHint: true, openWorldHint: false },
        run: (_input, { deps }) => ({ data: { warmUps: deps.warmUps } }),
      }),
    ],
    createDeps() {
      let onWarm = () => {}
      const warmed = new Promise<void>((resolve) => {
        onWarm = resolve
      })
      return { warmUps: 0, fail, warmed, onWarm }
    },
    warmUp(deps) {
      deps.warmUps++
      deps.onWarm()
      if (deps.fail) throw new Error('database down')
    },
  })
}

const open: Connection[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((connection) => connection.close()))
})

describe('warmUp', () => {
  it('runs once, after the client has initialized, without holding up the answer', async () => {
    const connection = await connectInMemory(spec(false))
    open.push(connection)
    const deps = connection.runtime.deps
    await deps.warmed
    expect(deps.warmUps).toBe(1)
    const result = await connection.client.callTool({ name: 'count', arguments: {} })
    expect(result.structuredContent).toEqual({ warmUps: 1 })
  })

  it('runs once on the 2026-07-28 era too, which has no initialize', async () => {
    const connection = await connectInMemory(spec(false), { era: 'modern' })
    open.push(connection)
    await connection.runtime.deps.warmed
    await connection.client.callTool({ name: 'count', arguments: {} })
    const result = await connection.client.callTool({ name: 'count', arguments: {} })
    expect(result.structuredContent).toEqual({ warmUps: 1 })
  })

  it('leaves the server serving when it fails (the first call then does the work)', async () => {
    const connection = await connectInMemory(spec(true))
    open.push(connection)
    await connection.runtime.deps.warmed
    const result = await connection.client.callTool({ name: 'count', arguments: {} })
    expect(result.isError).toBeFalsy()
  })
})
