import { describe, expect, it } from 'vitest'
import { boundHeapGrowth, HEAP_GROWING_PERCENT } from '../src/heap.js'

// The effect on a real bin (V8 using the factor for its next collection's limit) is checked by the
// hardening suite against the built bins: tools/hardening/test/soak.test.ts.
describe('boundHeapGrowth', () => {
  const applied = (execArgv: string[]) => {
    const set: string[] = []
    const result = boundHeapGrowth(execArgv, (flags) => set.push(flags))
    return { result, set }
  }

  it('sets V8’s heap growing percent when node was given none', () => {
    expect(HEAP_GROWING_PERCENT).toBe(50)
    expect(applied([])).toEqual({ result: true, set: ['--heap-growing-percent=50'] })
    expect(applied(['--enable-source-maps', '--max-old-space-size=512'])).toEqual({
      result: true,
      set: ['--heap-growing-percent=50'],
    })
    // A flag that merely starts the same way is not the user's choice of this one.
    expect(applied(['--heap-growing-percentage=3']).result).toBe(true)
  })

  it('leaves the user’s own setting alone, in each spelling V8 accepts', () => {
    for (const execArgv of [
      ['--heap-growing-percent=0'],
      ['--heap_growing_percent=20'],
      ['--heap-growing-percent', '30'],
      ['--trace-gc', '--no-heap-growing-percent'],
    ])
      expect(applied(execArgv), execArgv.join(' ')).toEqual({ result: false, set: [] })
  })
})
