// The entry the lazy-loading test bundles: a minimal server through core's real `run`.
import { defineServer, defineTool, z } from '../src/index.js'
import { run } from '../src/run.js'

await run(
  defineServer({
    name: 'lazy-check',
    version: '1.0.0',
    description: 'checks what start-up loads',
    tools: [
      defineTool({
        name: 'ping_back',
        title: 'Ping back',
        description: 'Answers pong.',
        input: { word: z.string().default('pong') },
        annotations: { readOnlyHint: true, openWorldHint: false },
        run: ({ word }) => ({ text: word }),
      }),
    ],
    createDeps: () => ({}),
  }),
)
