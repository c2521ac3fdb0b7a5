// Preloaded into a server by alloc.mjs (`node --expose-gc --import <this file> …`). SIGUSR2 #1
// forces a full collection and starts V8's GC profiler; SIGUSR2 #2 forces another and writes to
// stderr, as `ALLOC_PROBE {json}`, the heap bytes allocated in between (for each collection, the
// heap used before it less what the previous one left), the collections' time and the process's
// CPU time. With ALLOC_PROFILE=<file>, V8's sampling heap profiler (collected objects included)
// runs over the same window and its profile is written to that file (Chrome DevTools reads it).
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector'
import v8 from 'node:v8'

let marks = 0
let session
let profiler
let cpu
let base
process.on('SIGUSR2', () => {
  marks++
  const file = process.env.ALLOC_PROFILE
  if (marks === 1) {
    globalThis.gc()
    base = v8.getHeapStatistics().used_heap_size
    if (file) {
      session = new Session()
      session.connect()
      session.post('HeapProfiler.startSampling', {
        samplingInterval: 512,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      })
    }
    profiler = new v8.GCProfiler()
    profiler.start()
    cpu = process.cpuUsage()
    process.stderr.write('ALLOC_PROBE started\n')
    return
  }
  if (marks !== 2) return
  const used = process.cpuUsage(cpu)
  globalThis.gc()
  const { statistics } = profiler.stop()
  let allocated = 0
  let previous = base
  let gcMicros = 0
  let scavenges = 0
  let others = 0
  statistics.forEach((entry, index) => {
    allocated += entry.beforeGC.heapStatistics.usedHeapSize - previous
    previous = entry.afterGC.heapStatistics.usedHeapSize
    // The last one is the forced collection that closes the window: its bytes count, its time not.
    if (index === statistics.length - 1) return
    gcMicros += entry.cost
    if (entry.gcType === 'Scavenge') scavenges++
    else others++
  })
  const result = { allocated, gcMicros, scavenges, others, cpuMicros: used.user + used.system }
  const report = () => process.stderr.write(`ALLOC_PROBE ${JSON.stringify(result)}\n`)
  if (!file) return report()
  session.post('HeapProfiler.stopSampling', (error, answer) => {
    if (!error) writeFileSync(file, JSON.stringify(answer.profile))
    report()
  })
})
