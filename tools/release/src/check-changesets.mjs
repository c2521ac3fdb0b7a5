#!/usr/bin/env node
// CI rule: a change to the source of a published package must come with a changeset naming that
// package. Compared against a base: BASE_REF (e.g. origin/main in a pull request), else the
// merge-base with origin/main or main. Tests and notes under src/ (`*.test.ts`, `*.md`) need none;
// anything else can be waived on purpose with an empty changeset (`pnpm changeset --empty`).
//
//   BASE_REF=origin/main node tools/release/src/check-changesets.mjs
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { findWorkspaceRoot, listPublishedPackages } from './workspace.mjs'

/** Files under src/ that are not shipped code: tests, fixtures, snapshots, notes. */
const NOT_SHIPPED = /(^|\/)(__tests__|__fixtures__|__snapshots__)\/|\.(test|spec)\.[cm]?[jt]sx?$|\.(md|snap)$/

/**
 * The releases a changeset file declares (its front matter), `[]` for an empty changeset.
 * @param {string} text
 * @returns {{ releases: Array<{ name: string, type: string }>, summary: string } | undefined}
 */
export function parseChangeset(text) {
  const match = /^---\r?\n([\s\S]*?)\r?\n?---\r?\n?([\s\S]*)$/.exec(text.trimStart())
  if (!match) return undefined
  const releases = []
  for (const line of match[1].split(/\r?\n/)) {
    const entry = /^\s*["']?([^"':]+)["']?\s*:\s*(major|minor|patch|none)\s*$/.exec(line)
    if (entry) releases.push({ name: entry[1].trim(), type: entry[2] })
  }
  return { releases, summary: match[2].trim() }
}

/**
 * Which published packages had source changes, and which of those no changeset names.
 * @param {{ changedFiles: string[], packages: Array<{ name: string, relativeDir: string }>,
 *   changesets: Array<{ file: string, text: string }> }} input
 */
export function findMissingChangesets({ changedFiles, packages, changesets }) {
  /** @type {Map<string, string[]>} */
  const touched = new Map()
  for (const file of changedFiles) {
    const pkg = packages.find((candidate) => file.startsWith(`${candidate.relativeDir}/src/`))
    if (!pkg || NOT_SHIPPED.test(file)) continue
    touched.set(pkg.name, [...(touched.get(pkg.name) ?? []), file])
  }
  const named = new Set()
  let waived = false
  const invalid = []
  for (const { file, text } of changesets) {
    const parsed = parseChangeset(text)
    if (!parsed) {
      invalid.push(file)
      continue
    }
    if (parsed.releases.length === 0) waived = true
    for (const release of parsed.releases) named.add(release.name)
  }
  const missing = waived ? [] : [...touched.keys()].filter((name) => !named.has(name))
  return { touched, missing, waived, invalid }
}

function git(root, args) {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()
}

function tryGit(root, args) {
  try {
    return git(root, args)
  } catch {
    return undefined
  }
}

/**
 * The commit to compare against, or a note saying why there is none.
 * @returns {{ base?: string, label?: string, note?: string }}
 */
export function resolveBase(root, env = process.env) {
  if (tryGit(root, ['rev-parse', '--git-dir']) === undefined) return { note: 'not a git repository' }
  const head = tryGit(root, ['rev-parse', 'HEAD'])
  if (head === undefined) return { note: 'the repository has no commit yet' }
  if (env.BASE_REF) {
    const base = tryGit(root, ['merge-base', 'HEAD', env.BASE_REF])
    if (base === undefined)
      throw new Error(`BASE_REF=${env.BASE_REF} is not a commit here (fetch it, e.g. fetch-depth: 0)`)
    return { base, label: env.BASE_REF }
  }
  for (const candidate of ['origin/main', 'main']) {
    if (tryGit(root, ['rev-parse', '--verify', '--quiet', `${candidate}^{commit}`]) === undefined) continue
    const base = tryGit(root, ['merge-base', 'HEAD', candidate])
    if (base !== undefined) return { base, label: candidate }
  }
  return { note: 'no base to compare with (BASE_REF unset; no origin/main or main)' }
}

/** Files changed since `base`, committed or not (untracked files included). */
export function changedFilesSince(root, base) {
  const diff = git(root, ['diff', '--name-only', '--no-renames', base])
  const untracked = git(root, ['ls-files', '--others', '--exclude-standard'])
  return [...new Set([...diff.split('\n'), ...untracked.split('\n')].filter(Boolean))].sort()
}

/** Runs the check; returns the process exit code. */
export async function checkChangesets(root, env = process.env, log = console.log) {
  const { base, label, note } = resolveBase(root, env)
  if (!base) {
    log(`check-changesets: ${note}; nothing to check, passing.`)
    return 0
  }
  const changedFiles = changedFilesSince(root, base)
  const changesets = changedFiles
    .filter((file) => /^\.changeset\/[^/]+\.md$/.test(file) && file !== '.changeset/README.md')
    .filter((file) => existsSync(join(root, file)))
    .map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }))
  const packages = await listPublishedPackages(root)
  const result = findMissingChangesets({ changedFiles, packages, changesets })
  const short = base.slice(0, 12)
  if (result.invalid.length) {
    log(`check-changesets: not a changeset (no front matter): ${result.invalid.join(', ')}`)
    return 1
  }
  if (result.touched.size === 0) {
    log(`check-changesets: no published package's source changed since ${label} (${short}).`)
    return 0
  }
  if (result.waived) {
    log(`check-changesets: waived by an empty changeset for ${[...result.touched.keys()].join(', ')}.`)
    return 0
  }
  if (result.missing.length === 0) {
    log(`check-changesets: every changed package has a changeset (${[...result.touched.keys()].join(', ')}).`)
    return 0
  }
  log(`check-changesets: source changed since ${label} (${short}) without a changeset naming the package:`)
  for (const name of result.missing) {
    log(`  ${name}`)
    for (const file of result.touched.get(name) ?? []) log(`    ${file}`)
  }
  log('Record one with `pnpm changeset` (pick the packages and the semver bump), or, when the change')
  log('really needs no release (refactor, internal docs), add an empty one: `pnpm changeset --empty`.')
  return 1
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exit(await checkChangesets(findWorkspaceRoot()))
}
