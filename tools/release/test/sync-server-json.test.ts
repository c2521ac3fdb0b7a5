import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { syncedServerJson, syncServerJsonFiles } from '../src/sync-server-json.mjs'
import { serverJson, serverManifest } from './fixtures.js'

const roots: string[] = []
afterAll(async () => {
  await Promise.all(roots.map((root) => rm(root, { recursive: true, force: true })))
})

describe('server.json version sync', () => {
  it('moves the top-level and the npm package version to package.json', () => {
    const { server, changed } = syncedServerJson(serverJson('demo', '1.0.0'), serverManifest('demo', '1.1.0'))
    expect(changed).toBe(true)
    expect([server.version, server.packages[0].version]).toEqual(['1.1.0', '1.1.0'])
  })

  it('rewrites drifted files in a workspace, and --check only reports', async () => {
    const root = await mkdtemp(join(tmpdir(), 'keel-sync-'))
    roots.push(root)
    await writeFile(join(root, 'pnpm-workspace.yaml'), 'packages:\n  - servers/*\n')
    await mkdir(join(root, 'servers/demo'), { recursive: true })
    await writeFile(join(root, 'servers/demo/package.json'), JSON.stringify(serverManifest('demo', '2.0.0')))
    await writeFile(join(root, 'servers/demo/server.json'), JSON.stringify(serverJson('demo', '1.0.0')))

    const checked = await syncServerJsonFiles(root, { check: true })
    expect(checked.map(({ name, from, to }) => ({ name, from, to }))).toEqual([
      { name: '@keel-mcp/server-demo', from: '1.0.0', to: '2.0.0' },
    ])
    expect(JSON.parse(await readFile(join(root, 'servers/demo/server.json'), 'utf8')).version).toBe('1.0.0')

    await syncServerJsonFiles(root)
    expect(JSON.parse(await readFile(join(root, 'servers/demo/server.json'), 'utf8')).version).toBe('2.0.0')
    expect(await syncServerJsonFiles(root, { check: true })).toEqual([])
  })
})
