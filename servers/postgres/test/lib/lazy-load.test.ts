import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedPostgres } from '../harness/index.js'

/**
 * Start-up cost: importing the lib and constructing a Database must not load pg or the
 * WASM parser; the first call does. Checked in a fresh Node process on the lib compiled to JS,
 * with a module hook that records which packages get imported and a look at require's cache for
 * the ones that get required (the lib requires them: see src/lib/load.ts).
 */
const packageDir = fileURLToPath(new URL('../..', import.meta.url))
const heavy = ['pg', 'libpg-query']
let outDir: string

const hooks = `
import { appendFileSync } from 'node:fs'
export async function resolve(specifier, context, next) {
  if (${JSON.stringify(heavy)}.includes(specifier)) appendFileSync(process.env.KEEL_LOAD_LOG, specifier + '\\n')
  return next(specifier, context)
}`

const script = `
import { createRequire, register } from 'node:module'
import { readFileSync, writeFileSync } from 'node:fs'
register('./hooks.mjs', import.meta.url)
const log = process.env.KEEL_LOAD_LOG
writeFileSync(log, '')
const cache = createRequire(import.meta.url).cache
const required = () =>
  ${JSON.stringify(heavy)}.filter((name) => Object.keys(cache).some((file) => file.includes('/node_modules/' + name + '/')))
const loaded = () => [...new Set([...readFileSync(log, 'utf8').split('\\n').filter(Boolean), ...required()])].sort()
const lib = await import('./index.js')
const database = new lib.Database({ connectionString: process.env.KEEL_URL })
const afterConstruct = loaded()
await database.query('SELECT 1')
const afterQuery = loaded()
await database.close()
process.stdout.write(JSON.stringify({ afterConstruct, afterQuery }))
`

beforeAll(async () => {
  // Inside the package, so that bare imports resolve from its node_modules.
  await mkdir(join(packageDir, 'node_modules', '.cache'), { recursive: true })
  outDir = await mkdtemp(join(packageDir, 'node_modules', '.cache', 'lazy-load-'))
  const libDir = join(packageDir, 'src', 'lib')
  for (const file of await readdir(libDir)) {
    if (!file.endsWith('.ts') || file.endsWith('.test.ts')) continue
    const source = await readFile(join(libDir, file), 'utf8')
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
    })
    await writeFile(join(outDir, file.replace(/\.ts$/, '.js')), outputText)
  }
  await writeFile(join(outDir, 'hooks.mjs'), hooks)
  await writeFile(join(outDir, 'probe.mjs'), script)
})

afterAll(async () => {
  if (outDir) await rm(outDir, { recursive: true, force: true })
})

describe('lazy loading', () => {
  it('loads pg and libpg-query on the first call, not on import or construction', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [join(outDir, 'probe.mjs')], {
      env: { ...process.env, KEEL_LOAD_LOG: join(outDir, 'load.log'), KEEL_URL: sharedPostgres().url },
      timeout: 30_000,
    })
    expect(JSON.parse(stdout)).toEqual({ afterConstruct: [], afterQuery: ['libpg-query', 'pg'] })
  })
})
