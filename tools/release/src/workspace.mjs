// Finds the workspace's packages the way pnpm does (the `packages:` globs of pnpm-workspace.yaml),
// so every release tool iterates over whatever packages exist instead of a hard-coded list.
import { existsSync } from 'node:fs'
import { cp, readdir, readFile } from 'node:fs/promises'
import { dirname, join, relative, resolve, sep } from 'node:path'

/** The npm scope every Keel package is published under. */
export const SCOPE = '@keel-mcp'
/** Package name prefix of a server: `@keel-mcp/server-<slug>`. */
export const SERVER_PREFIX = `${SCOPE}/server-`
/** Bin name prefix of a server: `mcp-server-<slug>`. */
export const BIN_PREFIX = 'mcp-server-'
/** Namespace of the servers' names in the MCP registry (`io.github.keel-mcp/<slug>`). */
export const MCP_NAMESPACE = 'io.github.keel-mcp'
/** The repository every package's `repository` field points at. */
export const REPOSITORY_URL = 'git+https://github.com/keel-mcp/keel.git'

/**
 * @typedef {object} WorkspacePackage
 * @property {string} name            package name
 * @property {string} dir             absolute directory
 * @property {string} relativeDir     directory relative to the workspace root, with `/` separators
 * @property {Record<string, any>} manifest  the parsed package.json
 * @property {boolean} published      not `private`
 * @property {string | undefined} slug  the server slug (`fs` for `@keel-mcp/server-fs`), else undefined
 */

/** Walks up from `from` to the directory holding pnpm-workspace.yaml. */
export function findWorkspaceRoot(from = process.cwd()) {
  let dir = resolve(from)
  for (;;) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return dir
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`no pnpm-workspace.yaml above ${from}`)
    dir = parent
  }
}

/** The `packages:` entries of pnpm-workspace.yaml (a flat YAML list; nothing fancier is needed). */
export async function workspaceGlobs(root) {
  const text = await readFile(join(root, 'pnpm-workspace.yaml'), 'utf8')
  const globs = []
  let inPackages = false
  for (const line of text.split('\n')) {
    if (/^packages:\s*$/.test(line)) {
      inPackages = true
      continue
    }
    if (!inPackages) continue
    const item = /^\s+-\s+['"]?([^'"#]+?)['"]?\s*(#.*)?$/.exec(line)
    if (item) globs.push(item[1])
    else if (/^\S/.test(line)) break
  }
  return globs
}

/** Server slug of a package name, or undefined when it is not a server. */
export function slugOf(name) {
  return typeof name === 'string' && name.startsWith(SERVER_PREFIX)
    ? name.slice(SERVER_PREFIX.length)
    : undefined
}

/**
 * Every package of the workspace, sorted by directory. Supports `dir/*` and plain directory
 * entries (the only forms this repository uses).
 * @returns {Promise<WorkspacePackage[]>}
 */
export async function listWorkspacePackages(root) {
  const dirs = []
  for (const glob of await workspaceGlobs(root)) {
    if (glob.startsWith('!')) continue
    if (glob.endsWith('/*')) {
      const parent = join(root, glob.slice(0, -2))
      if (!existsSync(parent)) continue
      for (const entry of await readdir(parent, { withFileTypes: true })) {
        if (entry.isDirectory()) dirs.push(join(parent, entry.name))
      }
    } else if (!glob.includes('*')) {
      dirs.push(join(root, glob))
    } else {
      throw new Error(`unsupported workspace glob "${glob}" in pnpm-workspace.yaml`)
    }
  }
  const packages = []
  for (const dir of dirs.sort()) {
    const file = join(dir, 'package.json')
    if (!existsSync(file)) continue
    const manifest = JSON.parse(await readFile(file, 'utf8'))
    packages.push({
      name: manifest.name,
      dir,
      relativeDir: relative(root, dir).split(sep).join('/'),
      manifest,
      published: manifest.private !== true,
      slug: slugOf(manifest.name),
    })
  }
  return packages
}

/** The packages that get published (not `private`). */
export async function listPublishedPackages(root) {
  return (await listWorkspacePackages(root)).filter((pkg) => pkg.published)
}

/** What a copy of the workspace leaves out: installs, build output, caches, history. */
const NOT_COPIED = new Set(['node_modules', 'dist', '.turbo', 'coverage', '.git'])

/**
 * Copies the workspace (sources and configuration, no node_modules/dist/.git) to `target`, for
 * work that must never touch the real tree (scaffolding tests, `changeset version`). With
 * `only`, copies everything outside packages/, servers/ and tools/ plus just those package
 * directories (e.g. `['packages/core']`).
 * @param {string} root
 * @param {string} target
 * @param {{ only?: string[] }} [options]
 */
export async function copyWorkspace(root, target, { only } = {}) {
  const filter = (source) => {
    const path = relative(root, source).split(sep)
    if (path.some((part) => NOT_COPIED.has(part) || part.endsWith('.tsbuildinfo'))) return false
    if (!only || path[0] === '') return true
    const rel = path.join('/')
    const outsidePackages = !['packages', 'servers', 'tools'].includes(path[0])
    return (
      outsidePackages ||
      only.some((dir) => rel === dir || rel.startsWith(`${dir}/`) || dir.startsWith(`${rel}/`))
    )
  }
  await cp(root, target, { recursive: true, filter, verbatimSymlinks: true })
}
