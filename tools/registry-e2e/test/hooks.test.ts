import { describe, expect, it } from 'vitest'
import { defaultCall, preferredCall } from '../src/hooks.mjs'

const tool = (name: string, readOnlyHint: boolean, required: string[] = [], openWorldHint = false) => ({
  name,
  annotations: { readOnlyHint, openWorldHint },
  inputSchema: { type: 'object', properties: {}, required },
})

describe('defaultCall', () => {
  it('picks the first read-only, closed-world tool that needs no arguments', () => {
    const tools = [
      tool('add_note', false),
      tool('fetch_page', true, [], true),
      tool('get_note', true, ['id']),
      tool('search_notes', true),
    ]
    expect(defaultCall(tools)).toEqual({ name: 'search_notes', arguments: {} })
  })

  it('asks for a hook when no tool is harmless to call blind', () => {
    expect(() => defaultCall([tool('post_message', false)])).toThrow(
      'no read-only, closed-world tool without required arguments among post_message: add a hook',
    )
  })
})

describe('preferredCall', () => {
  it('takes the first preferred tool the server has and fills its required arguments', () => {
    const pick = preferredCall(['list_schemas', 'query'], { sql: 'SELECT 1' })
    expect(pick([tool('query', true, ['sql'])])).toEqual({ name: 'query', arguments: { sql: 'SELECT 1' } })
  })

  it('falls back to the default when none of the preferred tools exists', () => {
    expect(preferredCall(['list_schemas'])([tool('list_tables', true)])).toEqual({
      name: 'list_tables',
      arguments: {},
    })
  })

  it('refuses a required argument it has no value for', () => {
    expect(() => preferredCall(['query'])([tool('query', true, ['sql'])])).toThrow('query needs "sql"')
  })
})
