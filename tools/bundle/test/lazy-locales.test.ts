import { spawnSync } from 'node:child_process'
import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundledFixture } from './fixture.js'

// The bin keeps zod's English messages inline and loads every other locale from
// dist/vendor/zod-locales.js on its first use, with the same results as zod unbundled. The fixture
// lives under packages/core/node_modules so that it resolves zod the way core does.
const FIXTURE = [
  "import { z } from 'zod'",
  "const schema = z.object({ name: z.string().min(3), count: z.number().int(), mode: z.enum(['a', 'b']) })",
  "const messages = () => schema.safeParse({ name: 'ab', count: 1.5, mode: 'c' }).error?.issues.map((issue) => issue.message)",
  'const english = messages()',
  'const locale = process.env.FIXTURE_LOCALE',
  'if (locale) z.config(z.locales[locale]())',
  'const vendor = Object.keys(require.cache).filter((file) => file.includes("/dist/vendor/"))',
  'process.stdout.write(JSON.stringify({ english, translated: messages(), names: Object.keys(z.locales).sort(), vendor }))',
].join('\n')
let work: string

beforeAll(async () => {
  work = await bundledFixture({
    'src/index.ts': FIXTURE,
    // The same program, unbundled (zod as Node loads it), for the expected results.
    'src/plain.mjs': FIXTURE.replace('Object.keys(require.cache)', '[]'),
  })
})

afterAll(async () => {
  await rm(work, { recursive: true, force: true })
})

function run(file: string, locale?: string) {
  const result = spawnSync(process.execPath, [join(work, file)], {
    env: { ...process.env, KEEL_COMPILE_CACHE: '0', ...(locale ? { FIXTURE_LOCALE: locale } : {}) },
    encoding: 'utf8',
  })
  expect(result.status, result.stderr).toBe(0)
  return JSON.parse(result.stdout) as {
    english: string[]
    translated: string[]
    names: string[]
    vendor: string[]
  }
}

describe("the bundled zod's locales", () => {
  it('keeps English inline: no locale file loads when none is configured', () => {
    const bundled = run('dist/index.js')
    expect(bundled.english).toEqual(run('src/plain.mjs').english)
    expect(bundled.english[0]).toContain('>=3 characters')
    expect(bundled.vendor).toEqual([])
  })

  it.each(['de', 'fr', 'ja', 'ptBR', 'en'])('gives the %s messages zod gives unbundled', (locale) => {
    const bundled = run('dist/index.js', locale)
    const plain = run('src/plain.mjs', locale)
    expect(bundled.translated).toEqual(plain.translated)
    expect(bundled.names).toEqual(plain.names)
    expect(bundled.vendor).toEqual(locale === 'en' ? [] : [join(work, 'dist/vendor/zod-locales.js')])
  })

  it('ships the translations in the vendor file, not in the bundle every start compiles', async () => {
    const german = run('src/plain.mjs', 'de').translated[0] ?? ''
    expect(german).not.toBe('')
    const server = await readFile(join(work, 'dist/server.js'), 'utf8')
    const vendor = await readFile(join(work, 'dist/vendor/zod-locales.js'), 'utf8')
    const phrase = 'Zu klein' // the start of zod's German "too small" message
    expect(german).toContain(phrase)
    expect(vendor).toContain(phrase)
    expect(server).not.toContain(phrase)
  })
})
