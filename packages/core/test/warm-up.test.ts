import { afterEach, describe, expect, it } from 'vitest'
import { defineServer, toolFactory, z } from '../src/index.js'
import { installObserver } from '../src/observe/hooks.js'
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

describe('warmCall', () => {
  interface CallDeps {
    runs: Array<{ requestId: string | number; probe: number }>
    called: Promise<void>
    onCall: () => void
  }
  const defineCallTool = toolFactory<CallDeps>()
  const callSpec = () =>
    defineServer<CallDeps>({
      name: 'warm-call',
      version: '1.0.0',
      description: 'warm call fixture',
      tools: [
        defineCallTool({
          name: 'probe',
          title: 'Probe',
          description: 'Records each run.',
          input: { probe: z.number() },
          output: { runs: z.number() },
          annotations: { readOnlyHint: true, openWorldHint: false },
          run: (input, { deps, requestId }) => {
            deps.runs.push({ requestId, probe: input.probe })
            deps.onCall()
            return { data: { runs: deps.runs.length } }
          },
        }),
      ],
      createDeps() {
        let onCall = () => {}
        const called = new Promise<void>((resolve) => {
          onCall = resolve
        })
        return { runs: [], called, onCall }
      },
      warmCall: { tool: 'probe', arguments: { probe: 7 } },
    })

  it('runs the call once through the pipeline after initialize, with its arguments checked, and answers nothing', async () => {
    const connection = await connectInMemory(callSpec())
    open.push(connection)
    const deps = connection.runtime.deps
    await deps.called
    expect(deps.runs).toEqual([{ requestId: 'warm-up', probe: 7 }])
    const result = await connection.client.callTool({ name: 'probe', arguments: { probe: 1 } })
    expect(result.structuredContent).toEqual({ runs: 2 })
    expect(deps.runs.map((run) => run.probe)).toEqual([7, 1])
  })

  it('is not observed (no metrics, audit line or rate budget): no one made the call', async () => {
    const observed: string[] = []
    installObserver({
      sizes: false,
      request: () => ({ run: (work: () => unknown) => work(), end() {} }),
      call: (start: { tool: string }) => {
        observed.push(start.tool)
        return { run: (work: () => Promise<unknown>) => work(), end() {} }
      },
      upstream: (_system: string, _operation: string, work: () => Promise<unknown>) => work(),
    } as never)
    try {
      const connection = await connectInMemory(callSpec())
      open.push(connection)
      const deps = connection.runtime.deps
      await deps.called
      await connection.client.callTool({ name: 'probe', arguments: { probe: 1 } })
      expect(deps.runs.map((run) => run.probe)).toEqual([7, 1])
      expect(observed).toEqual(['probe'])
    } finally {
      installObserver(undefined)
    }
  })
})
