import { afterAll, describe, expect, it } from 'vitest'
import { SERVERS } from '../src/servers.js'
import { StdioPeer } from '../src/wire.js'

// The table itself: each entry's calls do what the suites rely on (mixed calls succeed, error
// calls fail), over stdio against the built bin.
describe.each(SERVERS.map((entry) => [entry.name, entry] as const))('the %s entry', (_name, entry) => {
  const cleanups: Array<() => Promise<unknown>> = []
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup()
  })

  it('has mixed calls that succeed and error calls that fail', async () => {
    const prepared = await entry.prepare()
    cleanups.push(() => prepared.stop())
    const peer = new StdioPeer(prepared.command)
    cleanups.push(() => peer.end())
    await peer.initialize()
    let id = 0
    for (const call of [prepared.cheapCall, ...prepared.mixedCalls]) {
      const answer = await peer.request(++id, 'tools/call', call)
      expect(answer.error, `${call.name}: ${JSON.stringify(answer).slice(0, 400)}`).toBeUndefined()
      expect(
        (answer.result as { isError?: boolean }).isError,
        `${call.name}: ${JSON.stringify(answer).slice(0, 400)}`,
      ).toBeFalsy()
    }
    for (const call of prepared.errorCalls) {
      const answer = await peer.request(++id, 'tools/call', call)
      const failed = answer.error !== undefined || (answer.result as { isError?: boolean }).isError === true
      expect(
        failed,
        `${call.name} ${JSON.stringify(call.arguments)}: ${JSON.stringify(answer).slice(0, 400)}`,
      ).toBe(true)
    }
    expect(peer.impure).toEqual([])
  })
})
