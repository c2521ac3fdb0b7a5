import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { run } from '../src/processes.mjs'
import { packument, readConfig, startRegistry } from '../src/verdaccio.mjs'

const dirs: string[] = []
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
})

async function scratch() {
  const dir = await mkdtemp(join(tmpdir(), 'keel-verdaccio-test-'))
  dirs.push(dir)
  return dir
}

describe('the local registry', () => {
  it('is configured without uplinks, web UI or audit proxying, and accepts anonymous publishes', async () => {
    const dir = await scratch()
    const registry = await startRegistry(dir)
    try {
      const config = await readConfig(dir)
      expect(config).toMatchObject({
        uplinks: {},
        web: { enable: false },
        middlewares: { audit: { enabled: false } },
        publish: { allow_offline: true },
      })
      expect(JSON.stringify(config.packages)).not.toContain('proxy')
      expect(registry.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
    } finally {
      await registry.stop()
    }
  })

  it('knows nothing it was not given: a public package is a 404, not a proxy fetch', async () => {
    const registry = await startRegistry(await scratch())
    try {
      expect(await packument(registry.url, 'left-pad')).toBeUndefined()
    } finally {
      await registry.stop()
    }
  })
})

describe('run', () => {
  it('kills a command that overruns its deadline and says so', async () => {
    await expect(run('sleep', ['5'], { timeoutMs: 200, label: 'sleep 5' })).rejects.toThrow(
      'sleep 5 did not finish within 0.2 s',
    )
  })

  it('reports a failing command with the tail of its output', async () => {
    await expect(run('sh', ['-c', 'echo boom >&2; exit 3'], { label: 'boom' })).rejects.toThrow(
      'boom exited with 3\n    | boom',
    )
  })
})
