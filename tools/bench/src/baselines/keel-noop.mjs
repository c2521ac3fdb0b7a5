// A Keel server with one no-op tool: the floor of core's per-call path (validation, signal and
// timeout, logging, output capping, result projection) with no domain work. Its bench twin is
// sdk-noop.mjs, the SDK's plain server with the same tool. Takes core's usual flags
// (`--transport http --port N --stateless`).
import { defineServer, defineTool, run, z } from '@keel-mcp/core'

const noop = defineTool({
  name: 'noop',
  title: 'No-op',
  description: 'Returns its text argument unchanged.',
  input: { text: z.string().max(1000).default('') },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  run: ({ text }) => ({ text: text || 'ok' }),
})

void run(
  defineServer({
    name: 'bench-noop',
    version: '0.0.0',
    description: 'Benchmark baseline: one no-op tool.',
    tools: [noop],
    createDeps: () => ({}),
  }),
)
