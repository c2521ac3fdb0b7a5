import { describe, expect, it } from 'vitest'
import { changedPart } from './snapshot.js'

describe('changedPart', () => {
  it('says when nothing changed', () => {
    expect(changedPart(['- a', '- b'], ['- a', '- b'])).toEqual({
      text: 'No change in the page.',
      changed: 0,
    })
  })

  it('shows changed lines with the ancestors that place them, and counts removals', () => {
    const before = ['- main', '  - list', '    - item "one"', '    - item "two"', '- footer']
    const after = ['- main', '  - list', '    - item "one"', '    - item "three"', '- footer']
    const { text, changed } = changedPart(before, after)
    expect(changed).toBe(1)
    expect(text).toBe(
      'Changed part of the page (1 new or changed lines, 1 removed):\n- main\n  - list\n    - item "three"',
    )
  })

  it('treats repeated identical lines by count', () => {
    const { changed } = changedPart(['- text: "x"'], ['- text: "x"', '- text: "x"'])
    expect(changed).toBe(1)
  })
})
