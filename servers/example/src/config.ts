import { type OptionSpecs, z } from '@keel-mcp/core'

/** The example's own options (the common flags come from core). */
export interface ExampleOptions {
  maxNotes: number
}

export const options: OptionSpecs<ExampleOptions> = {
  maxNotes: {
    flag: 'max-notes',
    env: 'EXAMPLE_MAX_NOTES',
    type: 'string',
    placeholder: 'n',
    description: 'Most notes the store keeps (default 1000).',
    schema: z.coerce
      .number({ error: 'must be a number' })
      .int()
      .min(1, 'must be at least 1')
      .max(1_000_000)
      .default(1000),
  },
}
