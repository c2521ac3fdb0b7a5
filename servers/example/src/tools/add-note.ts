import { z } from '@keel-mcp/core'
import { defineTool, noteShape } from './shared.js'

export const addNote = defineTool({
  name: 'add_note',
  title: 'Add note',
  description: 'Store a note with a title, a body and optional tags. Returns the stored note with its id.',
  input: {
    title: z.string().min(1).max(200).describe('Short title'),
    body: z.string().max(10_000).describe('The note text'),
    tags: z
      .array(
        z
          .string()
          .regex(/^[a-z0-9-]+$/)
          .max(40),
      )
      .max(10)
      .optional()
      .describe('Lowercase tags, e.g. ["work"]'),
  },
  output: noteShape,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  toolset: 'notes',
  run(input, { deps }) {
    const note = deps.notes.add(input)
    return { data: note, text: `Stored note ${note.id}: ${note.title}` }
  },
})
