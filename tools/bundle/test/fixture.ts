import { spawnSync } from 'node:child_process'
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

// The bundler's tests build small packages with bundle.mjs. They live under
// packages/core/node_modules so that they resolve the SDK and zod the way core does (no other
// package here depends on the SDK).

export const BUNDLE = fileURLToPath(new URL('../bundle.mjs', import.meta.url))
const CORE_MODULES = fileURLToPath(new URL('../../../packages/core/node_modules/', import.meta.url))

/**
 * A fixture package (`files` by path inside it, `package` merged into its package.json) written
 * under core's node_modules and bundled; returns its directory. The caller removes it.
 */
export async function bundledFixture(
  files: Record<string, string>,
  pkg: Record<string, unknown> = {},
): Promise<string> {
  const work = await mkdtemp(join(CORE_MODULES, '.keel-bundle-test-'))
  await mkdir(join(work, 'src'))
  await writeFile(
    join(work, 'package.json'),
    JSON.stringify({ name: 'fixture', version: '1.0.0', type: 'module', dependencies: {}, ...pkg }),
  )
  for (const [path, text] of Object.entries(files)) await writeFile(join(work, path), text)
  const built = spawnSync(process.execPath, [BUNDLE], { cwd: work, encoding: 'utf8' })
  if (built.status !== 0) throw new Error(`bundle.mjs failed (${built.status}): ${built.stderr}`)
  return work
}
