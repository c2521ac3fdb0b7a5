import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { connect, ok, useConnections } from './helpers.js'
import { makeTree, useTempDirectories } from './temp-tree.js'

const tempDirectory = useTempDirectories()
useConnections()

const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13])

async function setup(options: Parameters<typeof connect>[1] = {}) {
  const base = await tempDirectory()
  const root = path.join(base, 'root')
  await makeTree(base, {
    root: {
      'a.txt': 'alpha\n',
      'pic.png': png,
      sub: { 'b.txt': 'beta\n' },
      'out-link': { symlink: '../outside/s.txt' },
    },
    outside: { 's.txt': 'secret\n' },
  })
  const connection = await connect([root], options)
  return { base, root, outside: path.join(base, 'outside'), connection }
}

/** Resolves with the URI of the next `notifications/resources/updated`. */
function updates() {
  const waiting: Array<(uri: string) => void> = []
  return {
    onResourceUpdated: (params: Record<string, unknown>) => waiting.shift()?.(String(params.uri)),
    next: () => new Promise<string>((resolve) => waiting.push(resolve)),
  }
}

describe('file resources', () => {
  it('offer a file:// template and list the allowed directories', async () => {
    const { root, connection } = await setup()
    const { resourceTemplates } = await connection.client.listResourceTemplates()
    expect(resourceTemplates).toMatchObject([{ name: 'file', uriTemplate: 'file://{+path}' }])
    const { resources } = await connection.client.listResources()
    expect(resources).toMatchObject([
      { uri: `file://${root}`, name: 'root', title: root, mimeType: 'inode/directory' },
    ])
  })

  it('read text files, binaries and directory listings', async () => {
    const { root, connection } = await setup()
    const text = await connection.client.readResource({ uri: `file://${root}/a.txt` })
    expect(text.contents).toEqual([{ uri: `file://${root}/a.txt`, mimeType: 'text/plain', text: 'alpha\n' }])
    const binary = await connection.client.readResource({ uri: `file://${root}/pic.png` })
    expect(binary.contents).toEqual([
      { uri: `file://${root}/pic.png`, mimeType: 'image/png', blob: png.toString('base64') },
    ])
    const directory = await connection.client.readResource({ uri: `file://${root}` })
    expect(directory.contents[0].text).toBe('a.txt\nout-link@\npic.png\nsub/')
  })

  it('refuse paths outside the allowed directories, through links too', async () => {
    const { root, outside, connection } = await setup()
    for (const uri of [
      `file://${outside}/s.txt`,
      `file://${root}/out-link`,
      `file://${root}/%2e%2e/outside/s.txt`,
    ]) {
      const error = await connection.client.readResource({ uri }).then(
        () => undefined,
        (reason: { code?: number; message?: string }) => reason,
      )
      expect(error?.code, uri).toBe(-32602)
      expect(error?.message).toContain('permission_denied: Access denied')
      expect(error?.message).not.toContain('secret')
    }
    const missing = await connection.client.readResource({ uri: `file://${root}/nope.txt` }).then(
      () => undefined,
      (reason: { code?: number; message?: string }) => reason,
    )
    // The SDK's resource-not-found error (-32602 in this SDK generation).
    expect(missing).toMatchObject({ code: -32602, message: `Resource not found: file://${root}/nope.txt` })
  })

  it('notify a subscriber when the file changes, also when a tool replaces it atomically', async () => {
    const updated = updates()
    const { root, connection } = await setup({ onResourceUpdated: updated.onResourceUpdated })
    const uri = `file://${root}/a.txt`
    await connection.client.subscribeResource({ uri })
    const { watchers } = connection.runtime.deps
    await watchers.settled()
    expect(watchers.size).toBe(1)
    const first = updated.next()
    await ok(connection, 'write_file', { path: 'a.txt', content: 'changed\n' })
    expect(await first).toBe(uri)
    const second = updated.next()
    await ok(connection, 'edit_file', { path: 'a.txt', edits: [{ old_text: 'changed', new_text: 'again' }] })
    expect(await second).toBe(uri)
  })

  it('notify a directory subscriber when an entry appears', async () => {
    const updated = updates()
    const { root, connection } = await setup({ onResourceUpdated: updated.onResourceUpdated })
    const uri = `file://${root}/sub`
    await connection.client.subscribeResource({ uri })
    await connection.runtime.deps.watchers.settled()
    const next = updated.next()
    await ok(connection, 'write_file', { path: 'sub/new.txt', content: 'x' })
    expect(await next).toBe(uri)
  })

  it('refuse to watch a path outside the allowed directories, and stop watching when the client goes', async () => {
    const { root, outside, connection } = await setup()
    const { watchers } = connection.runtime.deps
    for (const uri of [`file://${outside}/s.txt`, `file://${root}/out-link`]) {
      const refused = await connection.client.subscribeResource({ uri }).then(
        () => undefined,
        (error: { code: number; message: string }) => error,
      )
      expect(refused?.code).toBe(-32602)
      expect(refused?.message).toContain('permission_denied')
    }
    // A link's target outside the roots is never revealed.
    const viaLink = await connection.client
      .subscribeResource({ uri: `file://${root}/out-link` })
      .catch((error: Error) => error)
    expect((viaLink as Error).message).not.toContain(outside)
    await watchers.settled()
    expect(watchers.size).toBe(0)
    await connection.client.subscribeResource({ uri: `file://${root}/sub/b.txt` })
    await watchers.settled()
    expect(watchers.size).toBe(1)
    await connection.close()
    expect(watchers.size).toBe(0)
  })
})
