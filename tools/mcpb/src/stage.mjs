// Lays out one server as an MCP Bundle directory: manifest.json at the top, the server under
// server/ (its bundled dist/, package.json, README, LICENSE) and, under server/node_modules, exactly
// the runtime packages the bundle loads (the package's dependencies minus what keel-bundle inlines),
// copied from the workspace's install, so a bundle is built offline from the lockfile's versions.
import { existsSync, realpathSync } from 'node:fs'
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join, relative, sep } from 'node:path'

/** Packages keel-bundle inlines into dist/ (see tools/bundle/bundle.mjs): never shipped again. */
export function inlinedDependencies(manifest) {
  return new Set(['@keel-mcp/core', 'zod', ...(manifest.keel?.bundle ?? [])])
}

/** The directory Node would load package `name` from when required from `fromDir`, or undefined. */
export function resolvePackageDir(fromDir, name) {
  let dir = fromDir
  for (;;) {
    const candidate = join(dir, 'node_modules', name)
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate)
    const parent = dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
}

/**
 * Plans a flat node_modules for the runtime dependencies of the package in `packageDir`: each
 * package at the top level the first time its name is seen, and nested under the package that needs
 * it when another version of that name already holds the top (Node's own lookup finds it there).
 * Returns [{ source, target }] with `target` relative to the bundle's server/ directory.
 */
export async function planNodeModules(packageDir, manifest) {
  const inlined = inlinedDependencies(manifest)
  const roots = Object.keys(manifest.dependencies ?? {}).filter((name) => !inlined.has(name))
  /** name → source directory placed at the top level */
  const top = new Map()
  const placed = []
  const seen = new Set()
  // queue of [name, the directory that requires it, where its requirer sits in the bundle, optional]
  const queue = roots.map((name) => ({ name, from: packageDir, at: '', optional: false }))
  while (queue.length) {
    const { name, from, at, optional } = queue.shift()
    const source = resolvePackageDir(from, name)
    if (!source) {
      if (optional) continue
      throw new Error(`${name} (needed from ${from}) is not installed: run pnpm install`)
    }
    let target
    if (!top.has(name)) {
      top.set(name, source)
      target = join('node_modules', name)
    } else if (top.get(name) === source) {
      continue
    } else {
      target = join(at, 'node_modules', name)
    }
    const key = `${source}→${target}`
    if (seen.has(key)) continue
    seen.add(key)
    placed.push({ source, target })
    const dependency = JSON.parse(await readFile(join(source, 'package.json'), 'utf8'))
    for (const child of Object.keys(dependency.dependencies ?? {}))
      queue.push({ name: child, from: source, at: target, optional: false })
    for (const child of Object.keys(dependency.optionalDependencies ?? {}))
      queue.push({ name: child, from: source, at: target, optional: true })
    // Peer dependencies are the requirer's to provide; an optional peer that is not installed
    // (pg's pg-native) stays out, as it does in the workspace.
    for (const [child, meta] of Object.entries(dependency.peerDependenciesMeta ?? {}))
      if (meta?.optional) queue.push({ name: child, from: source, at: target, optional: true })
    for (const child of Object.keys(dependency.peerDependencies ?? {}))
      if (!dependency.peerDependenciesMeta?.[child]?.optional)
        queue.push({ name: child, from: source, at: target, optional: false })
  }
  return placed
}

/** The manifest as npm would publish it: workspace ranges resolved, inlined packages left out. */
export function publishedManifest(manifest) {
  const inlined = inlinedDependencies(manifest)
  const dependencies = Object.fromEntries(
    Object.entries(manifest.dependencies ?? {}).filter(([name]) => !inlined.has(name)),
  )
  const { devDependencies: _dev, scripts: _scripts, exports: _exports, ...rest } = manifest
  return { ...rest, dependencies }
}

/** Copies the server into `stageDir`/server and writes `stageDir`/manifest.json. */
export async function stageServer({ packageDir, manifest, bundleManifest, stageDir, repositoryRoot }) {
  const serverDir = join(stageDir, 'server')
  if (!existsSync(join(packageDir, 'dist', 'index.js')))
    throw new Error(`${relative(repositoryRoot, packageDir)}/dist/index.js is missing: run pnpm build first`)
  await mkdir(serverDir, { recursive: true })
  await cp(join(packageDir, 'dist'), join(serverDir, 'dist'), { recursive: true })
  await writeFile(
    join(serverDir, 'package.json'),
    `${JSON.stringify(publishedManifest(manifest), null, 2)}\n`,
  )
  for (const file of ['README.md', 'LICENSE']) {
    const source = existsSync(join(packageDir, file)) ? join(packageDir, file) : join(repositoryRoot, file)
    await cp(source, join(stageDir, file))
  }
  for (const { source, target } of await planNodeModules(packageDir, manifest)) {
    await cp(source, join(serverDir, target), {
      recursive: true,
      dereference: true,
      // A package's own nested node_modules (pnpm keeps none, but a hoisted install may) is planned
      // separately; copying it would bring what the plan left out.
      filter: (path) => !relative(source, path).split(sep).includes('node_modules'),
    })
  }
  await writeFile(join(stageDir, 'manifest.json'), `${JSON.stringify(bundleManifest, null, 2)}\n`)
  return stageDir
}
