#!/usr/bin/env node
// `pnpm servers:link`: puts every server's command (`mcp-server-<slug>`) on the PATH from this
// checkout, pointing at the built bin (servers/<slug>/dist/index.js), so clients can be configured
// with the same command a published install gives. `pnpm servers:unlink` removes them again.
//
// The commands go where npm puts global commands (`npm prefix -g`, bin/ on POSIX), which is on the
// PATH of anyone who runs `npx`; `--dir DIR` picks another directory. Only links this script made
// (pointing into this checkout) are replaced or removed: another install of the same command is
// left alone and reported.
import { execFileSync } from 'node:child_process'
import { existsSync, lstatSync, readlinkSync } from 'node:fs'
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { delimiter, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { BIN_PREFIX, findWorkspaceRoot, listPublishedPackages } from './workspace.mjs'

const WINDOWS = process.platform === 'win32'

/** npm's directory for global commands. */
export function globalBinDir() {
  const prefix = execFileSync(WINDOWS ? 'npm.cmd' : 'npm', ['prefix', '-g'], { encoding: 'utf8' }).trim()
  return WINDOWS ? prefix : join(prefix, 'bin')
}

/** The servers of the workspace with the bin each declares. */
export async function serverBins(root) {
  const bins = []
  for (const pkg of await listPublishedPackages(root)) {
    if (!pkg.slug) continue
    const name = `${BIN_PREFIX}${pkg.slug}`
    const target = pkg.manifest.bin?.[name]
    if (target) bins.push({ name, slug: pkg.slug, file: join(pkg.dir, target) })
  }
  return bins
}

/** Where a link for `name` points, or undefined when nothing (or no link) is there. */
function linkTarget(path) {
  try {
    if (lstatSync(path).isSymbolicLink()) return resolve(join(path, '..'), readlinkSync(path))
  } catch {}
  return undefined
}

async function shimOwnedBy(path, root) {
  if (!existsSync(path)) return false
  return (await readFile(path, 'utf8').catch(() => '')).includes(root)
}

/** Links (or, with `unlink`, removes) every server command in `dir`. Returns one line per bin. */
export async function linkServers({ root = findWorkspaceRoot(), dir = globalBinDir(), unlink = false } = {}) {
  const lines = []
  await mkdir(dir, { recursive: true })
  for (const { name, file } of await serverBins(root)) {
    const path = join(dir, WINDOWS ? `${name}.cmd` : name)
    const current = WINDOWS ? undefined : linkTarget(path)
    const ours = WINDOWS ? await shimOwnedBy(path, root) : current?.startsWith(root)
    const taken = existsSync(path) || current !== undefined
    if (unlink) {
      if (ours) {
        await rm(path, { force: true })
        lines.push(`removed ${path}`)
      }
      continue
    }
    if (taken && !ours) {
      lines.push(`skipped ${name}: ${path} exists and is not from this checkout`)
      continue
    }
    if (!existsSync(file)) throw new Error(`${file} is missing: run pnpm build first`)
    await rm(path, { force: true })
    if (WINDOWS) await writeFile(path, `@node "${file}" %*\r\n`)
    else await symlink(file, path)
    lines.push(`${name} → ${file}`)
  }
  return lines
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { dir: { type: 'string' }, unlink: { type: 'boolean' } } })
  try {
    const dir = values.dir ? resolve(values.dir) : globalBinDir()
    const lines = await linkServers({ dir, unlink: values.unlink ?? false })
    for (const line of lines) process.stdout.write(`${line}\n`)
    if (!values.unlink) {
      const onPath = (process.env.PATH ?? '')
        .split(delimiter)
        .some((entry) => resolve(entry) === resolve(dir))
      if (!onPath)
        process.stdout.write(`\n${dir} is not on your PATH: add it, or run the commands by full path.\n`)
      process.stdout.write(
        '\nNext: mcp-server-fs --help, or use "command": "mcp-server-fs" in a client (README: From a checkout).\n',
      )
    }
  } catch (error) {
    process.stderr.write(`servers:link: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  }
}
