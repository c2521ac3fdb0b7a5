#!/usr/bin/env node
// Keeps each server's server.json (MCP registry metadata) at its package.json version. Runs right
// after `changeset version` (see the root `version-packages` script), so the version PR carries
// both; `--check` only reports drift (exit 1).
//
//   node tools/release/src/sync-server-json.mjs [--check] [--root <dir>]
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { findWorkspaceRoot, listWorkspacePackages } from './workspace.mjs'

/**
 * server.json with its version fields set from the manifest; `changed` says whether anything moved.
 * @param {Record<string, any>} server
 * @param {Record<string, any>} manifest
 */
export function syncedServerJson(server, manifest) {
  const next = structuredClone(server)
  next.version = manifest.version
  for (const entry of next.packages ?? []) {
    if (entry.registryType === 'npm' && entry.identifier === manifest.name) entry.version = manifest.version
  }
  return { server: next, changed: JSON.stringify(next) !== JSON.stringify(server) }
}

/** Syncs (or, with `check`, only inspects) every package's server.json; returns what drifted. */
export async function syncServerJsonFiles(root, { check = false } = {}) {
  const drifted = []
  for (const pkg of await listWorkspacePackages(root)) {
    const file = join(pkg.dir, 'server.json')
    if (!existsSync(file)) continue
    const current = JSON.parse(await readFile(file, 'utf8'))
    const { server, changed } = syncedServerJson(current, pkg.manifest)
    if (!changed) continue
    drifted.push({ name: pkg.name, file, from: current.version, to: server.version })
    if (!check) await writeFile(file, `${JSON.stringify(server, null, 2)}\n`)
  }
  return drifted
}

async function main() {
  const { values } = parseArgs({ options: { check: { type: 'boolean' }, root: { type: 'string' } } })
  const root = values.root ?? findWorkspaceRoot()
  const drifted = await syncServerJsonFiles(root, { check: values.check })
  for (const { name, from, to } of drifted)
    console.log(`${values.check ? 'out of sync' : 'synced'}: ${name} server.json ${from} -> ${to}`)
  if (values.check && drifted.length) {
    console.error(
      'server.json versions differ from package.json: run `pnpm version-packages` (or this script)',
    )
    process.exit(1)
  }
  if (!drifted.length) console.log('server.json versions match package.json')
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main()
