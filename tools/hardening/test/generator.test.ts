import { describe, expect, it } from 'vitest'
import { generate, PARSE_ERROR } from '../src/fuzz.js'

const cheapCall = { name: 'read_text_file', arguments: { path: 'notes.md' } }

describe('the fuzz generator', () => {
  it('gives the same messages for the same seed, and others for another seed', () => {
    const first = generate({ seed: 42, count: 2000, cheapCall, maxGiantBytes: 70_000 })
    const again = generate({ seed: 42, count: 2000, cheapCall, maxGiantBytes: 70_000 })
    const other = generate({ seed: 43, count: 2000, cheapCall, maxGiantBytes: 70_000 })
    expect(again.map((fuzzCase) => fuzzCase.payload)).toEqual(first.map((fuzzCase) => fuzzCase.payload))
    expect(other.map((fuzzCase) => fuzzCase.payload)).not.toEqual(first.map((fuzzCase) => fuzzCase.payload))
  })

  it('draws every category, one line each, and expects -32700 exactly for what does not parse', () => {
    const cases = generate({ seed: 20261124, count: 10_000, cheapCall, maxGiantBytes: 70_000 })
    expect(new Set(cases.map((fuzzCase) => fuzzCase.category)).size).toBe(23)
    for (const fuzzCase of cases) {
      expect(fuzzCase.payload).not.toContain('\n')
      let parses = true
      try {
        JSON.parse(fuzzCase.payload)
      } catch {
        parses = false
      }
      const expectsParseError = fuzzCase.expected.kind === 'error' && fuzzCase.expected.code === PARSE_ERROR
      expect(expectsParseError, `#${fuzzCase.index} ${fuzzCase.payload.slice(0, 100)}`).toBe(!parses)
    }
  })

  it('gives every request that must be answered a distinct id', () => {
    const cases = generate({ seed: 7, count: 10_000, cheapCall, maxGiantBytes: 70_000 })
    const ids = cases.flatMap((fuzzCase) =>
      fuzzCase.expected.kind === 'answer' ||
      (fuzzCase.expected.kind === 'error' && fuzzCase.expected.id !== null)
        ? [JSON.stringify(fuzzCase.expected.id)]
        : [],
    )
    expect(new Set(ids).size).toBe(ids.length)
  })
})
