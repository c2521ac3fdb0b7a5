import { paginate, ToolError, z } from '@keel-mcp/core'
import { defineTool, noteShape } from './shared.js'

export const searchNotes = defineTool({
  name: 'search_notes',
  title: 'Search notes',
  description:
    'Find notes whose title, body or tags contain a text. Paginated: pass nextCursor back as cursor.',
  input: {
    query: z.string().max(200).default('').describe('Text to look for; empty lists every note'),
    tag: z.string().optional().describe('Only notes with this tag'),
    limit: z.number().int().min(1).max(100).default(20).describe('Notes per page'),
    cursor: z.string().optional().describe('nextCursor from the previous page'),
  },
  output: { notes: z.array(z.object(noteShape)), nextCursor: z.string().optional() },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  toolset: 'notes',
  run({ query, tag, limit, cursor }, { deps }) {
    const matches = deps.notes.search(query, tag)
    let page: ReturnType<typeof paginate<(typeof matches)[number]>>
    try {
      page = paginate(matches, { cursor, limit, key: `${query}\u0000${tag ?? ''}` })
    } catch (error) {
      throw new ToolError('invalid_argument', (error as Error).message, {
        hint: 'Start again without a cursor.',
      })
    }
    const text = page.page.length
      ? page.page
          .map((note) => `#${note.id} ${note.title}${note.tags.length ? ` [${note.tags.join(', ')}]` : ''}`)
          .join('\n')
      : 'No notes match.'
    return {
      data: { notes: page.page, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) },
      text: page.nextCursor ? `${text}\n(more: cursor "${page.nextCursor}")` : text,
    }
  },
})
