import { defineServer, svgIcon, ToolError, z } from '@keel-mcp/core'
import pkg from '../package.json' with { type: 'json' }
import { type ExampleOptions, options } from './config.js'
import { icon } from './icon.js'
import { NoteLimitError, NoteStore } from './lib/notes.js'
import { addNote } from './tools/add-note.js'
import { countSlowly } from './tools/count-slowly.js'
import { searchNotes } from './tools/search-notes.js'
import type { ExampleDeps } from './tools/shared.js'

export const server = defineServer<ExampleDeps, ExampleOptions>({
  name: 'example',
  version: pkg.version,
  description: 'A small notes server: the living template of a Keel MCP server.',
  icons: [svgIcon(icon)],
  instructions:
    'Notes live in memory for the life of the server. Use search_notes before add_note to avoid duplicates.',
  options,
  toolsets: { notes: 'add_note, search_notes', demo: 'count_slowly' },
  tools: [addNote, searchNotes, countSlowly],
  // What the audit log (--audit-log) records of a call's arguments: identifiers that say what it
  // touched, never content (a note's title or body, a search's text).
  auditArguments: ['tags', 'tag', 'n'],
  resources: [
    {
      name: 'note-index',
      uri: 'note://index',
      title: 'All notes',
      description: 'One line per note: id, title, tags.',
      mimeType: 'text/plain',
      read: (uri, { deps }) => [
        {
          uri: uri.href,
          mimeType: 'text/plain',
          text: deps.notes
            .search('')
            .map((note) => `#${note.id} ${note.title}`)
            .join('\n'),
        },
      ],
      subscribe: (_uri, notify, { deps }) => deps.notes.onChange(() => notify()),
    },
  ],
  resourceTemplates: [
    {
      name: 'note',
      uriTemplate: 'note://notes/{id}',
      title: 'Note',
      description: 'One note as Markdown.',
      mimeType: 'text/markdown',
      list: ({ deps }) =>
        deps.notes
          .search('')
          .map((note) => ({ uri: `note://notes/${note.id}`, name: note.title, mimeType: 'text/markdown' })),
      complete: {
        id: (value, { deps }) =>
          deps.notes
            .search('')
            .map((note) => note.id)
            .filter((id) => id.startsWith(value)),
      },
      read(uri, { id }, { deps }) {
        const note = deps.notes.get(String(id))
        if (!note) throw new ToolError('not_found', `No note ${String(id)}`)
        return [{ uri: uri.href, mimeType: 'text/markdown', text: `# ${note.title}\n\n${note.body}\n` }]
      },
    },
  ],
  prompts: [
    {
      name: 'summarize_notes',
      title: 'Summarize notes',
      description: 'Ask the model to summarise the notes on a topic.',
      args: { topic: z.string().describe('Tag or text the notes are about') },
      complete: { topic: () => [] },
      run({ topic }, { deps }) {
        const notes = deps.notes.search(topic ?? '')
        return {
          messages: [
            {
              role: 'user',
              content: {
                type: 'text',
                text: `Summarise these ${notes.length} notes about "${topic}":\n\n${notes.map((note) => `- ${note.title}: ${note.body}`).join('\n')}`,
              },
            },
          ],
        }
      },
    },
  ],
  // Its start reads nothing but its configuration: a bin answers a client's handshake from the
  // record of an identical start (core's replay.ts).
  handshakeReplay: true,
  createDeps: ({ config }) => ({ notes: new NoteStore(config.options.maxNotes) }),
  mapError: (error) =>
    error instanceof NoteLimitError
      ? new ToolError('too_large', error.message, { hint: 'Restart the server with a larger --max-notes.' })
      : undefined,
})
