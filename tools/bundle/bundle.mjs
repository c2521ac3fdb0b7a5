#!/usr/bin/env node
// Bundles src/index.ts of the package in the current directory into dist/index.js.
//
// Why: a user starts a server on every client launch. Resolving and compiling hundreds of SDK
// modules costs ~60 ms more than one pre-linked file, so each bin ships as a single ESM file with
// @keel-mcp/core, the MCP SDK and zod inlined. Runtime dependencies listed in the package's
// `dependencies` stay external (they are loaded lazily, e.g. pg or puppeteer) unless the package
// names them in `keel.bundle`.
import { chmod, readFile, rm } from 'node:fs/promises'
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
  format: 'esm',
  target: 'node20',
  external,
  splitting: false,
  // Smaller source compiles faster at every start; stacks stay readable enough for the logs.
  minify: true,
  legalComments: 'linked',
  metafile: true,
  logLevel: 'warning',
  // Some inlined dependencies are CommonJS and call require(); give the ESM bundle one.
  banner: {
    js: "import { createRequire as __keelCreateRequire } from 'node:module';\nconst require = __keelCreateRequire(import.meta.url);",
  },
})
for (const file of Object.keys(result.metafile.outputs)) {
  if (file.endsWith('.js')) await chmod(join(root, file), 0o755)
}
