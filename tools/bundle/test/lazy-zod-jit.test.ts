import { spawnSync } from 'node:child_process'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundledFixture } from './fixture.js'

// The bin's copy of zod compiles an object schema's parser on the schema's eighth parse instead of
// its first. The same program run from zod's own files and from the bin must print the same
// results, parse by parse, before and after the compiled parser takes over; and only the bin must
// compile nothing during the first seven parses. The fixture lives under packages/core/node_modules
// so that it resolves zod the way core does.
let work: string

const PROGRAM = `
import { z } from 'zod'
// Counts the parsers zod compiles (it makes each with \`new Function\`).
let compiled = 0
const RealFunction = globalThis.Function
globalThis.Function = new Proxy(RealFunction, {
  construct(target, args) {
    compiled++
    return Reflect.construct(target, args)
  },
})
const schemas = {
  plain: z.object({ name: z.string(), count: z.number().int().optional() }),
  strict: z.strictObject({ id: z.union([z.string(), z.number().int()]) }),
  loose: z.looseObject({ kind: z.enum(['a', 'b']).default('a') }),
  catchall: z.object({ tag: z.string() }).catchall(z.number()),
  nested: z.object({ inner: z.object({ list: z.array(z.object({ v: z.boolean() })) }).optional() }),
  transformed: z.object({ at: z.string().transform((text) => text.length), n: z.coerce.number() }),
}
const inputs = [
  { name: 'ada', count: 3 },
  { name: 'ada', count: 1.5, extra: true },
  { id: 'x' },
  { id: 7, stray: 1 },
  { kind: 'b', more: [1] },
  {},
  { tag: 't', a: 1, b: 'no' },
  { inner: { list: [{ v: true }, { v: 'no' }] } },
  { at: 'four', n: '12' },
  { at: 5, n: 'x' },
  null,
  [],
  '__proto__',
  JSON.parse('{"__proto__": {"name": "x"}, "name": "y"}'),
]
// Step by step: at each step every schema parses one input (the next one, in turn), so after step
// n every schema has been parsed n times.
const steps = []
const before = compiled
for (let step = 1; step <= 20; step++) {
  const input = inputs[(step - 1) % inputs.length]
  const results = {}
  for (const [key, schema] of Object.entries(schemas)) {
    const parsed = schema.safeParse(input)
    results[key] = parsed.success ? { data: parsed.data } : { issues: parsed.error.issues }
  }
  steps.push({ step, compiledSoFar: compiled - before, results })
}
process.stdout.write(JSON.stringify(steps) + '\\n')
`

beforeAll(async () => {
  work = await bundledFixture({ 'src/index.ts': PROGRAM, 'src/plain.mjs': PROGRAM })
})

afterAll(async () => {
  await rm(work, { recursive: true, force: true })
})

type Step = { step: number; compiledSoFar: number; results: unknown }
const runs = (args: string[]): Step[] => {
  const run = spawnSync(process.execPath, args, {
    env: { ...process.env, KEEL_COMPILE_CACHE: '0' },
    encoding: 'utf8',
  })
  expect(run.status, run.stderr).toBe(0)
  return JSON.parse(run.stdout)
}

describe("the bin's zod", () => {
  it('parses as zod does at every step, before and after it compiles a parser', () => {
    const bundled = runs([join(work, 'dist/index.js')])
    const plain = runs([join(work, 'src/plain.mjs')])
    expect(bundled).toHaveLength(20)
    expect(bundled.map(({ results }) => results)).toEqual(plain.map(({ results }) => results))
    // Issues as well as successes are compared.
    const all = JSON.stringify(plain.map(({ results }) => results))
    expect(all).toContain('"issues"')
    expect(all).toContain('"data"')
  })

  it('compiles no parser during the first seven parses of a schema, and compiles them from the eighth', () => {
    const bundled = runs([join(work, 'dist/index.js')]).map(({ compiledSoFar }) => compiledSoFar)
    const plain = runs([join(work, 'src/plain.mjs')]).map(({ compiledSoFar }) => compiledSoFar)
    // zod itself compiles each top-level object schema's parser on its first parse (the six of
    // them; plus, once, its probe of whether \`new Function\` is allowed).
    expect(plain[0]).toBeGreaterThanOrEqual(6)
    // The bin's zod: at most the probe during seven parses, then the six parsers on the eighth.
    expect(bundled.slice(0, 7).every((count) => count <= 1)).toBe(true)
    expect((bundled[7] ?? 0) - (bundled[6] ?? 0)).toBeGreaterThanOrEqual(6)
    expect(bundled.at(-1)).toBeGreaterThanOrEqual(6)
  })
})
