#!/usr/bin/env node
// `pnpm bundle:mcpb [slug...]`: builds one MCP Bundle (.mcpb) per published server into
// dist-mcpb/ at the repository root, validating each manifest with the mcpb CLI first.
// Expects the servers built (`pnpm bundle:mcpb` runs `pnpm build` before this script).
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { findWorkspaceRoot, listWorkspacePackages } from '@keel-mcp/release-tools/workspace'
import { bundleManifest } from './manifest.mjs'
import { stageServer } from './stage.mjs'

const MCPB_CLI = fileURLToPath(new URL('../node_modules/@anthropic-ai/mcpb/dist/cli/cli.js', import.meta.url))

/** Runs the mcpb CLI; throws with its output when it fails. */
export function mcpb(args, options = {}) {
  return execFileSync(process.execPath, [MCPB_CLI, ...args], { encoding: 'utf8', stdio: 'pipe', ...options })
}

/**
 * Builds the bundles of `slugs` (all servers with an mcpb.json when empty) into `outDir`.
 * @param {{ root?: string, outDir?: string, slugs?: string[] }} [options]
 * @returns {Promise<Array<{ slug: string, file: string, manifest: Record<string, any> }>>}
 */
export async function buildBundles({ root = findWorkspaceRoot(), outDir, slugs = [] } = {}) {
  const out = resolve(outDir ?? join(root, 'dist-mcpb'))
  await mkdir(out, { recursive: true })
  const servers = (await listWorkspacePackages(root)).filter(
    (pkg) => pkg.slug && pkg.published && existsSync(join(pkg.dir, 'mcpb.json')),
  )
  const unknown = slugs.filter((slug) => !servers.some((pkg) => pkg.slug === slug))
  if (unknown.length)
    throw new Error(
      `no bundle for ${unknown.join(', ')}: servers with an mcpb.json are ${servers.map((pkg) => pkg.slug).join(', ')}`,
    )
  const built = []
  for (const pkg of servers.filter((server) => !slugs.length || slugs.includes(server.slug))) {
    const mcpbConfig = JSON.parse(await readFile(join(pkg.dir, 'mcpb.json'), 'utf8'))
    const manifest = bundleManifest({ slug: pkg.slug, manifest: pkg.manifest, mcpb: mcpbConfig })
    const stageDir = await mkdtemp(join(tmpdir(), `keel-mcpb-${pkg.slug}-`))
    try {
      await stageServer({
        packageDir: pkg.dir,
        manifest: pkg.manifest,
        bundleManifest: manifest,
        stageDir,
        repositoryRoot: root,
      })
      mcpb(['validate', join(stageDir, 'manifest.json')])
      const file = join(out, `${pkg.slug}-${pkg.manifest.version}.mcpb`)
      await rm(file, { force: true })
      mcpb(['pack', stageDir, file])
      built.push({ slug: String(pkg.slug), file, manifest })
    } finally {
      await rm(stageDir, { recursive: true, force: true })
    }
  }
  return built
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { out: { type: 'string' } } })
  try {
    for (const { file } of await buildBundles({ outDir: values.out, slugs: positionals }))
      process.stdout.write(`${file}\n`)
  } catch (error) {
    process.stderr.write(`bundle:mcpb: ${error instanceof Error ? error.message : String(error)}\n`)
    if (error?.stdout) process.stderr.write(String(error.stdout))
    process.exit(1)
  }
}
