import { afterEach, describe, expect, it } from 'vitest'
import { blobSha, storeFile } from './fake-github.js'
import { closeAll, dataOf, errorKind, json, setup, textOf } from './helpers.js'

afterEach(closeAll)

const repo = 'octo/demo'
const REPO = '/repos/octo/demo'
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64')

/** GitHub stored `stored` whatever was sent: the write answers with the stored blob's name. */
function storesInstead(fake: Awaited<ReturnType<typeof setup>>['fake'], stored: string) {
  fake.on(
    'PUT',
    `${REPO}/contents/notes.txt`,
    json({ commit: { sha: 'c'.repeat(40) }, content: { sha: blobSha(b64(stored)) } }, 201),
  )
  fake.on(
    'GET',
    `${REPO}/git/blobs/${blobSha(b64(stored))}`,
    json({ content: b64(stored), encoding: 'base64', size: stored.length }),
  )
}

describe('no silent truncation on write', () => {
  it('create_or_update_file succeeds when the stored blob is the one sent', async () => {
    const { fake, call } = await setup()
    fake.on(
      'PUT',
      `${REPO}/contents/notes.txt`,
      storeFile('c2', 'https://github.com/octo/demo/blob/main/notes.txt'),
    )
    const result = await call('create_or_update_file', {
      repo,
      path: 'notes.txt',
      content: 'línea\r\n',
      message: 'm',
    })
    expect(dataOf(result)).toMatchObject({ commit: 'c2', sha: blobSha(b64('línea\r\n')) })
  })

  it.each([
    [
      'cut off',
      'one\ntwo\nthree\n',
      'one\ntwo\n',
      /14 bytes sent, 8 stored; the stored file is cut off after byte 8/,
    ],
    ['line endings', 'a\r\nb\r\n', 'a\nb\n', /line endings changed \(2 CRLF sent, 0 stored\)/],
    ['byte-order mark', 'text', '\uFEFFtext', /a byte-order mark was added/],
  ])('names the difference when GitHub stored it %s', async (_label, sent, stored, message) => {
    const { fake, call } = await setup()
    storesInstead(fake, stored)
    const result = await call('create_or_update_file', {
      repo,
      path: 'notes.txt',
      content: sent,
      message: 'm',
    })
    expect(errorKind(result)).toBe('conflict')
    expect(textOf(result)).toMatch(message)
    expect(textOf(result)).toContain('Commit ccccccc was made with it.')
  })

  it('push_files stops before committing when a blob was stored differently', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      `${REPO}/git/ref/heads/feature`,
      json({ ref: 'refs/heads/feature', object: { sha: 'head1' } }),
    )
    fake.on('GET', `${REPO}/git/commits/head1`, json({ sha: 'head1', tree: { sha: 'tree1' } }))
    fake.on('POST', `${REPO}/git/blobs`, json({ sha: blobSha(b64('shor')) }, 201))
    fake.on(
      'GET',
      `${REPO}/git/blobs/${blobSha(b64('shor'))}`,
      json({ content: b64('shor'), encoding: 'base64' }),
    )
    const result = await call('push_files', {
      repo,
      branch: 'feature',
      message: 'm',
      files: [{ path: 'a.txt', content: 'short' }],
    })
    expect(errorKind(result)).toBe('conflict')
    expect(textOf(result)).toMatch(
      /a\.txt differently from what was sent: 5 bytes sent, 4 stored.*Nothing was committed/,
    )
    expect(fake.calls('POST', `${REPO}/git/commits`)).toHaveLength(0)
    expect(fake.calls('PATCH', `${REPO}/git/refs/heads/feature`)).toHaveLength(0)
  })

  it('create_gist fails when a file was stored with another size', async () => {
    const { fake, call } = await setup()
    fake.on(
      'POST',
      '/gists',
      json({ id: 'abc', html_url: 'https://gist.github.com/abc', files: { 'a.txt': { size: 3 } } }, 201),
    )
    const result = await call('create_gist', { files: { 'a.txt': 'abcdef' } })
    expect(errorKind(result)).toBe('conflict')
    expect(textOf(result)).toContain('a.txt: 6 bytes sent, 3 stored')
  })
})
