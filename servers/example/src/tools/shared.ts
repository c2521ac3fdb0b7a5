import { toolFactory, z } from '@keel-mcp/core'
import type { NoteStore } from '../lib/notes.js'

/** What the example's tools get as `deps`. */
export interface ExampleDeps {
  notes: NoteStore
}

/** `defineTool` with the example's deps typed. */
export const defineTool = toolFactory<ExampleDeps>()

export const noteShape = {
  id: z.string(),
  title: z.string(),
  body: z.string(),
  tags: z.array(z.string()),
  createdAt: z.string(),
}
