#!/usr/bin/env node
// Bundles src/index.ts of the package in the current directory into dist/index.js.
//
// Why: a user starts a server on every client launch. Resolving and compiling hundreds of SDK
// modules costs far more than one pre-linked file, so each bin ships as a single file with
// @keel-mcp/core, the MCP SDK and zod inlined. It is CommonJS on purpose: in a CJS bundle every
// module, including the Node built-ins it requires, initialises only when first used, so a stdio
// server never loads the HTTP stack (node:http, tls, http2) that it does not serve. Runtime
// dependencies listed in the package's `dependencies` stay external (loaded lazily, e.g. pg or
// puppeteer) unless the package names them in `keel.bundle`. Sources stay ESM; only the bin is CJS
// (dist/package.json says so, so the bin path stays dist/index.js).
import { chmod, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { build } from 'esbuild'

const root = process.cwd()
const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'))
const inline = new Set(['@keel-mcp/core', 'zod', ...(pkg.keel?.bundle ?? [])])
const external = Object.keys(pkg.dependencies ?? {}).filter((name) => !inline.has(name))
const entries = pkg.keel?.entries ?? { index: 'src/index.ts' }

await rm(join(root, 'dist'), { recursive: true, force: true })
const result = await build({
  absWorkingDir: root,
  entryPoints: entries,
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external,
  splitting: false,
  // Smaller source compiles faster at every start; stacks stay readable enough for the logs.
  minify: true,
  legalComments: 'linked',
  metafile: true,
  logLevel: 'warning',
  // import.meta.url has no CJS counterpart; give the inlined ESM code one.
  define: { 'import.meta.url': '__keelImportMetaUrl' },
  banner: { js: "const __keelImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
})
await writeFile(join(root, 'dist', 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`)
for (const file of Object.keys(result.metafile.outputs)) {
  if (file.endsWith('.js')) await chmod(join(root, file), 0o755)
}
