/** A small in-memory note store: the example's domain code. It imports nothing from MCP. */

export interface Note {
  id: string
  title: string
  body: string
  tags: string[]
  createdAt: string
}

export class NoteLimitError extends Error {
  override name = 'NoteLimitError'
}

export class NoteStore {
  readonly #notes = new Map<string, Note>()
  readonly #listeners = new Set<(id: string) => void>()
  #next = 1

  constructor(readonly maxNotes: number) {}

  add(input: { title: string; body: string; tags?: string[] }): Note {
    if (this.#notes.size >= this.maxNotes)
      throw new NoteLimitError(`the store holds at most ${this.maxNotes} notes`)
    const note: Note = {
      id: String(this.#next++),
      title: input.title,
      body: input.body,
      tags: [...new Set(input.tags ?? [])].sort(),
      createdAt: new Date().toISOString(),
    }
    this.#notes.set(note.id, note)
    for (const listener of this.#listeners) listener(note.id)
    return note
  }

  get(id: string): Note | undefined {
    return this.#notes.get(id)
  }

  /** Notes whose title, body or tags contain `query` (case-insensitive), oldest first. */
  search(query: string, tag?: string): Note[] {
    const needle = query.toLowerCase()
    return [...this.#notes.values()].filter(
      (note) =>
        (!tag || note.tags.includes(tag)) &&
        (note.title.toLowerCase().includes(needle) ||
          note.body.toLowerCase().includes(needle) ||
          note.tags.some((candidate) => candidate.includes(needle))),
    )
  }

  tags(): string[] {
    return [...new Set([...this.#notes.values()].flatMap((note) => note.tags))].sort()
  }

  /** Calls `listener` with the id of every note added; returns the unsubscribe function. */
  onChange(listener: (id: string) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }
}
