import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { configFingerprint, openSchemaCache } from '../src/schema-cache.js'

const server = { name: 'fixture', version: '1.0.0' }
const global = globalThis as { __keelCache?: { directory: string; key: string } }
let directory: string

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'keel-schema-cache-'))
  global.__keelCache = { directory, key: 'k'.repeat(32) }
})
afterEach(async () => {
  delete global.__keelCache
  await rm(directory, { recursive: true, force: true })
})

const settle = () => new Promise((resolve) => setImmediate(resolve))
const input = { type: 'object', properties: { a: { type: 'string' } } }

describe('the tool schema cache', () => {
  it('is off without a launcher-provided directory', () => {
    delete global.__keelCache
    expect(openSchemaCache(server, {}, [])).toBeUndefined()
  })

  it('keeps schemas for the next start of the same configuration only', async () => {
    const first = openSchemaCache(server, { options: { caps: [] } }, [])
    expect(first?.get('a')).toBeUndefined()
    first?.set('a', { input, output: { type: 'object' } })
    first?.set('b', { input })
    await settle()
    const again = openSchemaCache(server, { options: { caps: [] } }, [])
    expect(again?.get('a')).toEqual({ input, output: { type: 'object' } })
    expect(again?.get('b')).toEqual({ input })
    // Another configuration, another version: their own (empty) caches.
    expect(openSchemaCache(server, { options: { caps: ['pdf'] } }, [])?.get('a')).toBeUndefined()
    expect(
      openSchemaCache({ ...server, version: '1.0.1' }, { options: { caps: [] } }, [])?.get('a'),
    ).toBeUndefined()
    const files = await readdir(directory)
    expect(files).toHaveLength(1)
    expect(files[0]).toMatch(/^k{32}-[0-9a-f]{16}\.tools\.json$/)
  })

  it('ignores a file that is not what it wrote, and writes it again', async () => {
    const config = { options: {} }
    const file = join(directory, `${'k'.repeat(32)}-${configFingerprint(server, config, [])}.tools.json`)
    for (const garbage of [
      '{not json',
      '[1,2]',
      '{"a":{"input":"text"}}',
      '{"a":{"input":{},"output":[]}}',
    ]) {
      await writeFile(file, garbage)
      const cache = openSchemaCache(server, config, [])
      expect(cache?.get('a'), garbage).toBeUndefined()
      cache?.set('a', { input })
      await settle()
      expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ a: { input } })
    }
  })

  it('is off for a configuration that JSON cannot write, and the start goes on', () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    expect(openSchemaCache(server, { options: { size: 1n } }, [])).toBeUndefined()
    expect(openSchemaCache(server, cyclic, [])).toBeUndefined()
  })

  it('never lets a secret into the fingerprint', () => {
    const token = 'ghp_0123456789abcdef0123'
    expect(configFingerprint(server, { options: { token } }, [token])).toBe(
      configFingerprint(server, { options: { token: 'another-secret-value-0' } }, ['another-secret-value-0']),
    )
    expect(configFingerprint(server, { options: { url: 'https://a.test' } }, [])).not.toBe(
      configFingerprint(server, { options: { url: 'https://b.test' } }, []),
    )
    // What JSON alone would write as {} still tells configurations apart.
    for (const [a, b] of [
      [/a/, /b/],
      [new Set(['a']), new Set(['b'])],
      [new Map([['k', 'a']]), new Map([['k', 'b']])],
    ])
      expect(configFingerprint(server, { options: { value: a } }, [])).not.toBe(
        configFingerprint(server, { options: { value: b } }, []),
      )
  })
})
