#!/usr/bin/env node
// pnpm new:server <slug> [--description "…"] [--skip-install]
//
// Scaffolds servers/<slug> from the living template (servers/example), writes the changeset for
// its first release, formats the new files, and links it into the workspace (pnpm install).
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parseArgs } from 'node:util'
import { findRoot } from './root.mjs'
import { scaffold } from './scaffold.mjs'

const usage = `Usage: pnpm new:server <slug> [--description "One line, at most 100 characters"] [--skip-install]

Creates servers/<slug> (package @keel-mcp/server-<slug>, bin mcp-server-<slug>) from servers/example.`

let parsed
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      description: { type: 'string', short: 'd' },
      'skip-install': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
} catch (error) {
  console.error(`new:server: ${error.message}\n\n${usage}`)
  process.exit(1)
}
const { values, positionals } = parsed
if (values.help) {
  console.log(usage)
  process.exit(0)
}
if (positionals.length > 1) {
  console.error(`new:server: one slug at a time (got ${positionals.join(', ')})\n\n${usage}`)
  process.exit(1)
}

const root = findRoot()
let result
try {
  result = await scaffold({ root, slug: positionals[0], description: values.description })
} catch (error) {
  console.error(`new:server: ${error.message}`)
  process.exit(1)
}

const dir = relative(root, result.dir)
console.log(`Created ${dir} (${result.packageName}, bin mcp-server-${positionals[0]})`)
console.log(`Wrote ${relative(root, result.changeset)} (first release: 0.1.0)`)

if (!values['skip-install']) {
  // Adding a package always changes the lockfile, so never install frozen (CI=true would).
  console.log('Linking it into the workspace: pnpm install')
  const install = spawnSync('pnpm', ['install', '--prefer-offline', '--no-frozen-lockfile'], {
    cwd: root,
    stdio: 'inherit',
  })
  if (install.status !== 0) {
    console.error('new:server: pnpm install failed; run it yourself, then continue below.')
    process.exit(1)
  }
}

const biome = join(root, 'node_modules', '.bin', 'biome')
if (existsSync(biome)) {
  // Renamed identifiers change line lengths and import order: leave the new server in house style.
  spawnSync(biome, ['check', '--write', dir], {
    cwd: root,
    stdio: 'ignore',
  })
}

console.log(`
Next:
  pnpm --filter ${result.packageName} build
  pnpm --filter ${result.packageName} test
  node ${dir}/dist/index.js --help
Then replace the template's notes tools with this server's own (docs/adding-a-server.md).`)
