import { lstat, readFile } from 'node:fs/promises'
import path from 'node:path'
import ignore from 'ignore'
import type { SafePath } from './path-guard.js'

// The .gitignore rules of a walk: compiled per directory, chained from the root down, cached by name.

/** .gitignore files larger than this are skipped (and reported). */
export const maxGitignoreBytes = 1024 * 1024

export interface IgnoreRules {
  /** Directory of the .gitignore, relative to the walk root (`''` or ending with `/`). */
  base: string
  /** Prepended to the path below `base`, for .gitignore files above the walk root. */
  prefix: string
  /**
   * Every pattern is a bare name (no `/` but a trailing one): git then matches it against the entry's name at
   * any depth, so testing the name alone gives the same answer, and ignore()'s cache serves repeated names.
   */
  byName: boolean
  matcher: ignore.Ignore
}

export function compileRules(text: string, base: string, prefix: string): IgnoreRules {
  const byName = text.split(/\r?\n/).every((line) => {
    const pattern = line.trim()
    if (pattern === '' || pattern.startsWith('#')) return true
    return !pattern.replace(/^!/, '').replace(/\/+$/, '').includes('/')
  })
  return { base, prefix, byName, matcher: ignore({ ignoreCase }).add(text) }
}

export const ignoreCase = process.platform === 'darwin' || process.platform === 'win32'

export function parentOf(relativeDirectory: string): string {
  const index = relativeDirectory.lastIndexOf('/', relativeDirectory.length - 2)
  return index === -1 ? '' : relativeDirectory.slice(0, index + 1)
}

/** The .gitignore rules that apply in one directory, shallowest first. */
export interface IgnoreChain {
  rules: readonly IgnoreRules[]
  /**
   * Decisions by entry name (plus `/` for directories), when every rule file tests by name: then the answer is
   * the same anywhere in the subtree, and most names repeat (index.ts, package.json, node_modules/).
   */
  byName: Map<string, boolean> | undefined
}

export const emptyChain: IgnoreChain = { rules: [], byName: undefined }
const maxCachedNames = 100_000

export function extendChain(chain: IgnoreChain, rules: IgnoreRules): IgnoreChain {
  const all = [...chain.rules, rules]
  return { rules: all, byName: all.every((item) => item.byName) ? new Map() : undefined }
}

export function isIgnored(
  chain: IgnoreChain,
  relativePath: string,
  name: string,
  isDirectory: boolean,
): boolean {
  const suffix = isDirectory ? '/' : ''
  const cache = chain.byName
  const key = cache ? name + suffix : ''
  if (cache) {
    const known = cache.get(key)
    if (known !== undefined) return known
  }
  let decision = false
  // Deeper .gitignore files take precedence; within one, ignore() applies "last matching rule wins".
  for (let index = chain.rules.length - 1; index >= 0; index--) {
    const rules = chain.rules[index]!
    const local = rules.byName ? name + suffix : rules.prefix + relativePath.slice(rules.base.length) + suffix
    let result: ignore.TestResult
    try {
      result = rules.matcher.test(local)
    } catch {
      continue // a name ignore() cannot express as a relative path: not ignored
    }
    if (result.ignored) {
      decision = true
      break
    }
    if (result.unignored) break
  }
  if (cache && cache.size < maxCachedNames) cache.set(key, decision)
  return decision
}

/**
 * .gitignore files between the repository top (or the allowed root) and the walk root, as git would apply
 * them. If they ignore the walk root itself the user asked for it explicitly, so they are not applied.
 */
export async function ancestorRules(root: SafePath): Promise<IgnoreRules[]> {
  if (root.path === root.root) return []
  const ancestors: string[] = []
  for (let current = path.dirname(root.path); ; current = path.dirname(current)) {
    ancestors.unshift(current)
    if (current === root.root || path.dirname(current) === current) break
  }
  let top = 0
  for (let index = ancestors.length - 1; index >= 0; index--) {
    if (await lstat(path.join(ancestors[index]!, '.git')).catch(() => undefined)) {
      top = index
      break
    }
  }
  if (await lstat(path.join(root.path, '.git')).catch(() => undefined)) return []
  const rules: IgnoreRules[] = []
  for (const directory of ancestors.slice(top)) {
    const file = path.join(directory, '.gitignore')
    const info = await lstat(file).catch(() => undefined)
    if (!info?.isFile() || info.size > maxGitignoreBytes) continue
    const text = await readFile(file, 'utf8').catch(() => undefined)
    if (text === undefined) continue
    const prefix = `${path.relative(directory, root.path).split(path.sep).join('/')}/`
    rules.push(compileRules(text, '', prefix))
  }
  for (let index = rules.length - 1; index >= 0; index--) {
    const result = rules[index]!.matcher.test(rules[index]!.prefix)
    if (result.ignored) return []
    if (result.unignored) break
  }
  return rules
}
