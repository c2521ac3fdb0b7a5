import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'

/** The workspace root: the nearest directory above `from` holding pnpm-workspace.yaml. */
export function findRoot(from = process.cwd()) {
  let dir = resolve(from)
  for (;;) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return dir
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`no pnpm-workspace.yaml above ${from}`)
    dir = parent
  }
}
