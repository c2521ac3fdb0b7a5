import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generate } from '../src/fuzz.js'
import { FUZZ_COUNT, FUZZ_SEED, MiB, record } from '../src/report.js'
import { fuzzHttp, fuzzStdio } from '../src/run-fuzz.js'
import { type PreparedServer, SERVERS } from '../src/servers.js'
import { HttpPeer, killAll, StdioPeer } from '../src/wire.js'

// Memory after the run may exceed the start by this much at most. Coarse: giant messages (about
// 50 MB in all) are held while parsed and V8 keeps heap it grew for them; the soak's live-heap
// check is the precise leak detector.
const RSS_SLACK = 128 * MiB

afterAll(() => {
  expect(killAll()).toBe(0)
})

// Servers are fuzzed concurrently (each is its own process): the suite stays within CI's budget.
describe.concurrent.each(SERVERS.map((entry) => [entry.name, entry] as const))(
  'fuzzing %s',
  (name, entry) => {
    let prepared: PreparedServer
    beforeAll(async () => {
      prepared = await entry.prepare()
      process.stderr.write(`[fuzz] ${name}: seed ${FUZZ_SEED}, ${FUZZ_COUNT} messages per transport\n`)
    })
    afterAll(async () => {
      await prepared?.stop()
    })

    it(`answers ${FUZZ_COUNT} hostile messages over stdio with the right codes, stdout pure, alive and bounded`, async () => {
      const cases = generate({ seed: FUZZ_SEED, count: FUZZ_COUNT, cheapCall: prepared.cheapCall })
      const peer = new StdioPeer(prepared.command)
      try {
        await peer.initialize()
        // Warm-up: the first calls load lazy modules (clients, parsers); memory is measured after.
        for (let index = 0; index < 20; index++)
          await peer.request(`warm-${index}`, 'tools/call', prepared.cheapCall)
        const report = await fuzzStdio(peer, cases, FUZZ_SEED)
        record('fuzz', {
          server: name,
          transport: 'stdio',
          ...report,
          failures: report.failures.length,
          examples: report.failures.slice(0, 40),
        })
        expect(report.failures).toEqual([])
        expect(peer.impure).toEqual([])
        const after = await peer.request('after', 'tools/call', prepared.cheapCall)
        expect(after.error).toBeUndefined()
        expect(report.rssAfter).toBeLessThan(report.rssBefore + RSS_SLACK)
      } finally {
        const ended = await peer.end()
        expect(ended.killed).toBe(false)
        expect(ended.code).toBe(0)
      }
    })

    it(`answers ${FUZZ_COUNT} hostile messages over HTTP with the right codes, alive and bounded`, async () => {
      const cases = generate({ seed: FUZZ_SEED, count: FUZZ_COUNT, cheapCall: prepared.cheapCall })
      const peer = await HttpPeer.start(prepared.command)
      try {
        await peer.initialize()
        for (let index = 0; index < 20; index++)
          await peer.post(
            JSON.stringify({
              jsonrpc: '2.0',
              id: `warm-${index}`,
              method: 'tools/call',
              params: prepared.cheapCall,
            }),
          )
        const report = await fuzzHttp(peer, cases, FUZZ_SEED)
        record('fuzz', {
          server: name,
          transport: 'http',
          ...report,
          failures: report.failures.length,
          examples: report.failures.slice(0, 40),
        })
        expect(report.failures).toEqual([])
        const after = await peer.post(
          JSON.stringify({ jsonrpc: '2.0', id: 'after', method: 'tools/call', params: prepared.cheapCall }),
        )
        expect(after.answers[0]?.error).toBeUndefined()
        expect(report.rssAfter).toBeLessThan(report.rssBefore + RSS_SLACK)
      } finally {
        const ended = await peer.close()
        expect(ended.killed).toBe(false)
        expect(peer.stdout).toBe('')
      }
    })
  },
)
