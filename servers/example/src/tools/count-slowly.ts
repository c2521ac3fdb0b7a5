import { setTimeout as sleep } from 'node:timers/promises'
import { z } from '@keel-mcp/core'
import { defineTool } from './shared.js'

/** Long work done right: progress notifications, and it stops when the call is cancelled or times out. */
export const countSlowly = defineTool({
  name: 'count_slowly',
  title: 'Count slowly',
  description: 'Count to n, one step every interval_ms, reporting progress. Demonstrates long-running calls.',
  input: {
    n: z.number().int().min(1).max(1000).describe('Number to count to'),
    interval_ms: z.number().int().min(0).max(1000).default(10).describe('Delay between steps'),
  },
  output: { counted: z.number().int() },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  toolset: 'demo',
  // Clients may run it in the background as a task (tools/call with "task") and poll for it.
  taskSupport: 'optional',
  async run({ n, interval_ms }, { signal, progress }) {
    for (let step = 1; step <= n; step++) {
      await sleep(interval_ms, undefined, { signal })
      await progress(step, n, `counted ${step} of ${n}`)
    }
    return { data: { counted: n } }
  },
})
