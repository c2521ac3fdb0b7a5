import { afterEach, describe, expect, it } from 'vitest'
import { closeAll, setup } from './helpers.js'
import { calls, world } from './world.js'
import { moreCalls, moreWorld } from './world-more.js'

afterEach(closeAll)

// Each client checks structuredContent against the outputSchema it got from tools/list (the v1
// client with Ajv) and throws when they disagree: a call that resolves is a result that validates.
describe.each([
  { label: 'v2 client', generation: 'v2' as const },
  { label: 'v1 client (Ajv)', generation: 'v1' as const },
])('structured results match the listed output schemas ($label)', ({ generation }) => {
  it('calls every tool and gets structuredContent the client validated', async () => {
    const { fake, connection, call } = await setup({ generation })
    moreWorld(fake)
    world(fake)
    const { tools } = await connection.client.listTools()
    expect(tools.filter((tool) => !tool.outputSchema).map((tool) => tool.name)).toEqual([])
    expect([...calls, ...moreCalls].map(([name]) => name).sort()).toEqual(
      tools.map((tool) => String(tool.name)).sort(),
    )
    for (const [name, args] of [...calls, ...moreCalls]) {
      const result = await call(name, args)
      const failure = result.isError ? (result.content as Array<{ text: string }>)[0]?.text : undefined
      expect({ name, failure }).toEqual({ name, failure: undefined })
      expect(result.structuredContent).toBeTypeOf('object')
    }
    expect(fake.unmatched).toEqual([])
  })
})
