// The harness for plain Node 20 scripts (the benchmark), which cannot import TypeScript: the
// harness modules that need no vitest are transpiled with the TypeScript compiler into
// test/harness/dist/ (git-ignored, never published) and imported from there. Type-only syntax is
// all they use, so transpiling file by file is exact.
//
//   const { startPostgres, seedSampleSchema } = await loadHarness()
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const modules = ['postgres', 'seed', 'checksum', 'wait']

/** Transpiles and imports the harness: startPostgres, seedSampleSchema, databaseChecksum, adminQuery, … */
export async function loadHarness() {
  const { default: ts } = await import('typescript')
  const out = join(here, 'dist')
  await mkdir(out, { recursive: true })
  for (const name of modules) {
    const source = await readFile(join(here, `${name}.ts`), 'utf8')
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
      fileName: `${name}.ts`,
    })
    await writeFile(join(out, `${name}.js`), outputText)
  }
  const loaded = await Promise.all(modules.map((name) => import(pathToFileURL(join(out, `${name}.js`)).href)))
  return Object.assign({}, ...loaded)
}
