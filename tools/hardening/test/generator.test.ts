import { describe, expect, it } from 'vitest'
import { checkAnswer, generate, PARSE_ERROR } from '../src/fuzz.js'

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
      fuzzCase.expected.kind === 'tool error' ||
      (fuzzCase.expected.kind === 'error' && fuzzCase.expected.id !== null)
        ? [JSON.stringify(fuzzCase.expected.id)]
        : [],
    )
    expect(new Set(ids).size).toBe(ids.length)
  })
})

describe('checkAnswer for a schema violation (SEP-1303)', () => {
  const fuzzCase = {
    index: 3,
    category: 'tools/call with wrong argument types',
    payload: '{}',
    expected: { kind: 'tool error' as const, id: 'f1-3' },
  }

  it('accepts an invalid_argument tool result and refuses a JSON-RPC error or a success', () => {
    const toolError = {
      id: 'f1-3',
      result: {
        isError: true,
        content: [{ type: 'text', text: 'invalid_argument: Invalid arguments for tool x: a: …' }],
      },
    }
    expect(checkAnswer(fuzzCase, toolError, 1)).toBeUndefined()
    expect(checkAnswer(fuzzCase, { id: 'f1-3', error: { code: -32602, message: 'bad' } }, 1)).toMatch(
      /expected an invalid_argument tool error/,
    )
    expect(
      checkAnswer(fuzzCase, { id: 'f1-3', result: { content: [{ type: 'text', text: 'ok' }] } }, 1),
    ).toMatch(/expected an invalid_argument tool error/)
  })
})
