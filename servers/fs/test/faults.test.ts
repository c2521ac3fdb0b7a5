import type { Dirent } from 'node:fs'
import * as nodeFs from 'node:fs'
import { rm } from 'node:fs/promises'
import path from 'node:path'
import { createLogger } from '@keel-mcp/core'
import { describe, expect, it } from 'vitest'
import { createFsDeps } from '../src/deps.js'
import type { WalkFileSystem } from '../src/lib/index.js'
import { connect, ok, useConnections } from './helpers.js'
import { makeTree, useTempDirectories } from './temp-tree.js'

const tempDirectory = useTempDirectories()
useConnections()

/**
 * Tests run as root, where a permission-denied directory cannot be made for real: the walks' file system is
 * injected, failing `readdir` of one directory with EACCES and deleting another just before it is read.
 */
function faultyFileSystem(locked: string, doomed: string): WalkFileSystem {
  return {
    readdir(directory, options, callback) {
      const bare = directory.replace(/\/$/, '')
      if (bare === locked) {
        callback(Object.assign(new Error('EACCES: simulated'), { code: 'EACCES' }), [] as Dirent[])
        return
      }
      if (bare === doomed) nodeFs.rmSync(doomed, { recursive: true, force: true })
      nodeFs.readdir(directory, options, callback)
    },
    readFile: (target, callback) => nodeFs.readFile(target, callback),
    lstat: (target, callback) => nodeFs.lstat(target, callback),
  }
}

async function setup() {
  const root = await tempDirectory()
  await makeTree(root, {
    'ok.txt': 'needle\n',
    locked: { 'hidden.txt': 'needle\n' },
    doomed: { 'gone.txt': 'needle\n' },
    fine: { 'seen.txt': 'needle\n' },
  })
  const fileSystem = faultyFileSystem(path.join(root, 'locked'), path.join(root, 'doomed'))
  const deps = await createFsDeps([root], createLogger({ level: 'silent', name: 'fs' }, {}), {
    walkFileSystem: fileSystem,
  })
  const connection = await connect([root], { deps })
  return { root, connection }
}

describe('walks with unreadable and vanishing folders', () => {
  it('directory_tree skips and reports them, and shows the rest', async () => {
    const { connection } = await setup()
    const tree = await ok(connection, 'directory_tree', { path: '.' })
    expect(tree.text).toContain('fine/\n  seen.txt')
    expect(tree.text).toContain('[skipped 2 unreadable or vanished entries: ')
    expect(tree.text).toContain('locked/ (EACCES)')
    expect(tree.text).toContain('doomed/ (ENOENT)')
  })

  it('search_files and search_content report a skipped count and keep going', async () => {
    const { connection } = await setup()
    const files = await ok(connection, 'search_files', { path: '.', pattern: '*.txt' })
    expect(files.structured).toMatchObject({ paths: ['fine/seen.txt', 'ok.txt'], skipped: 2 })
    const { connection: fresh } = await setup()
    const content = await ok(fresh, 'search_content', { path: '.', pattern: 'needle' })
    expect(content.structured.matches.map((match: { path: string }) => match.path)).toEqual([
      'fine/seen.txt',
      'ok.txt',
    ])
    expect(content.structured.skipped).toBe(2)
    expect(content.text).toContain('locked/ (EACCES)')
  })

  it('list_directory reports an entry that vanished between listing and stat', async () => {
    const root = await tempDirectory()
    await makeTree(root, { 'stays.txt': 'x', 'goes.txt': 'y' })
    const fileSystem: WalkFileSystem = {
      readdir: (directory, options, callback) =>
        nodeFs.readdir(directory, options, (error, entries) => {
          void rm(path.join(root, 'goes.txt')).then(() => callback(error, entries))
        }),
      readFile: (target, callback) => nodeFs.readFile(target, callback),
      lstat: (target, callback) => nodeFs.lstat(target, callback),
    }
    const deps = await createFsDeps([root], createLogger({ level: 'silent', name: 'fs' }, {}), {
      walkFileSystem: fileSystem,
    })
    const connection = await connect([root], { deps })
    const listing = await ok(connection, 'list_directory', { path: '.', sizes: true })
    expect(listing.structured.entries.map((entry: { name: string }) => entry.name)).toEqual(['stays.txt'])
    expect(listing.structured.skipped).toBe(1)
    expect(listing.text).toContain('[skipped 1 unreadable or vanished entry: goes.txt (ENOENT)]')
  })
})
