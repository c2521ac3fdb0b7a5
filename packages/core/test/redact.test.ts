import { describe, expect, it } from 'vitest'
import { Redactor } from '../src/redact.js'
import { FRAGMENT } from '../src/redact-fragments.js'

const GITHUB_TOKEN = 'ghp_Q7x2mK9vL4pR8sT1wY6zB3nC5dF0gH2jA7kE'
const SLACK_TOKEN = 'xoxb-118273645-99887766554-KqWzPlMnXcVbAsDf'
const CLIENT_SECRET = 'oauth-client-8f3c2a91d7e64b05'
const DATABASE_URL = 'postgres://app:Tr0ub4dor-and-3@db.internal.example:5432/orders'

function redactor(...secrets: string[]): Redactor {
  const local = new Redactor()
  for (const secret of secrets) local.addSecret(secret)
  return local
}

/** Every run of `length` characters of `secret`. */
const runs = (secret: string, length: number) =>
  Array.from({ length: secret.length - length + 1 }, (_, start) => secret.slice(start, start + length))

describe('fragments of registered secrets', () => {
  it('redacts the 30-of-41-character quote of a token an API error carried', () => {
    const quoted = GITHUB_TOKEN.slice(6, 36)
    const out = redactor(GITHUB_TOKEN).redact(`GitHub said: Bad credentials (${quoted}) for this request`)
    expect(out).toBe('GitHub said: Bad credentials ([redacted]) for this request')
  })

  it.each([
    ['a GitHub token', GITHUB_TOKEN],
    ['a Slack token', SLACK_TOKEN],
    ['an OAuth client secret', CLIENT_SECRET],
    ['a Postgres password from the URL', 'Tr0ub4dor-and-3'],
  ])('redacts every long run of %s, wherever it sits in a line', (_label, secret) => {
    const local = redactor(GITHUB_TOKEN, SLACK_TOKEN, CLIENT_SECRET, DATABASE_URL)
    for (const length of [FRAGMENT, FRAGMENT + 1, FRAGMENT + 5]) {
      for (const run of runs(secret, Math.min(length, secret.length))) {
        for (const [before, after] of [
          ['', ''],
          ['error: ', ' (retry)'],
          ['x', 'y'],
        ]) {
          const out = local.redact(`${before}${run}${after}`)
          expect(out, run).toContain('[redacted]')
          expect(out, run).not.toContain(run.slice(0, FRAGMENT))
        }
      }
    }
  })

  it('redacts several fragments in one line, and a fragment split by redaction of another', () => {
    const local = redactor(GITHUB_TOKEN, SLACK_TOKEN)
    const line = `a=${GITHUB_TOKEN.slice(0, 12)} b=${SLACK_TOKEN.slice(10, 30)} c=${GITHUB_TOKEN.slice(20)}`
    const out = local.redact(line)
    for (const run of [...runs(GITHUB_TOKEN, FRAGMENT), ...runs(SLACK_TOKEN, FRAGMENT)])
      expect(out).not.toContain(run)
  })

  it('keeps a run shorter than the fragment length, and what a URL secret shares with ordinary text', () => {
    const local = redactor(GITHUB_TOKEN, DATABASE_URL)
    const short = GITHUB_TOKEN.slice(4, 4 + FRAGMENT - 1)
    expect(local.redact(`id ${short} ok`)).toBe(`id ${short} ok`)
    // The URL is secret whole, its password in any part; its host and path are not.
    expect(local.redact('connecting to db.internal.example:5432/orders')).toBe(
      'connecting to db.internal.example:5432/orders',
    )
    expect(local.redact(`failed: ${DATABASE_URL}`)).toBe('failed: [redacted]')
  })

  it('scans a long line with many secrets registered, in one pass', () => {
    const secrets = Array.from(
      { length: 50 },
      (_, index) => `secret-${index}-${'k'.repeat(20)}-${index * 7919}`,
    )
    const local = redactor(...secrets)
    const filler = 'the quick brown fox jumps over the lazy dog '.repeat(24_000)
    const line = `${filler}${secrets[37]?.slice(3, 25)}${filler}`
    const out = local.redact(line)
    expect(out.length).toBe(filler.length * 2 + '[redacted]'.length)
    expect(out).toContain('[redacted]')
  })
})

describe('key/value patterns need a real key/value shape', () => {
  it.each([
    'Refused file:///etc/passwd: not allowed',
    'Refused /etc/passwd: outside the allowed directories',
    'C:\\Windows\\secret: none here',
    'GitHub rejected the token: expired or revoked',
    'the password: too short',
    'max_tokens=4096 and tokens: 12',
    'secretary=alice',
  ])('leaves %s as it is', (text) => {
    expect(new Redactor().redact(text)).toBe(text)
  })

  it.each([
    ['password=hunter2', 'password=[redacted]'],
    ['PGPASSWORD=hunter2 psql', 'PGPASSWORD=[redacted] psql'],
    ['--password=hunter2', '--password=[redacted]'],
    ['db_password: hunter22', 'db_password: [redacted]'],
    ['x-api-key: 0a1b2c3d4e', 'x-api-key: [redacted]'],
    ['GET /?access_token=abc&x=1', 'GET /?access_token=[redacted]&x=1'],
    ["secret: 'two words'", "secret: '[redacted]'"],
    ['token: AbCdEfGhIjKlMnOpQrStUv', 'token: [redacted]'],
    ['{"password": "x y"}', '{"password": "[redacted]"}'],
  ])('redacts %s', (text, expected) => {
    expect(new Redactor().redact(text)).toBe(expected)
  })
})

describe('structured values', () => {
  it('redact every string through the given function, and whole under a secret-named key', () => {
    const local = redactor(GITHUB_TOKEN)
    const seen: string[] = []
    const text = (value: string) => {
      seen.push(value)
      return local.redact(value)
    }
    const value = { path: `a/${GITHUB_TOKEN}`, list: ['x', 'y'], token: 'plain', n: 2 }
    expect(local.redactValue(value, 0, text)).toEqual(local.redactValue(value))
    expect(local.redactValue(value)).toEqual({
      path: 'a/[redacted]',
      list: ['x', 'y'],
      token: '[redacted]',
      n: 2,
    })
    expect(seen).toEqual([`a/${GITHUB_TOKEN}`, 'x', 'y'])
  })

  it('redacts what lies deeper than it walks as JSON text, never passing it on as it is', () => {
    const local = redactor(GITHUB_TOKEN)
    const nest = (inner: unknown, levels: number): unknown =>
      levels === 0 ? inner : { level: nest(inner, levels - 1) }
    const leaf = { note: `sent ${GITHUB_TOKEN}`, password: 'hunter2-hunter2', n: 1 }
    const out = JSON.stringify(local.redactValue(nest(leaf, 10)))
    expect(out).not.toContain(GITHUB_TOKEN)
    expect(out).not.toContain('hunter2')
    expect(out).toContain('[redacted]')
    // The levels it walks keep their shape; the rest is one redacted string.
    expect(JSON.stringify(local.redactValue(nest('x', 3)))).toBe('{"level":{"level":{"level":"x"}}}')
    const cyclic: Record<string, unknown> = { token: 'plain' }
    cyclic.self = cyclic
    expect(JSON.stringify(local.redactValue(nest(cyclic, 8)))).toContain('"[unserializable]"')
    expect(JSON.stringify(local.redactValue(nest([{ id: 2n }], 8)))).toContain('"[unserializable]"')
  })

  it('changes its version whenever a secret is registered, and only then', () => {
    const local = new Redactor()
    const before = local.version
    local.addSecret('short')
    expect(local.version).toBe(before)
    local.addSecret(CLIENT_SECRET)
    expect(local.version).toBe(before + 1)
    local.addSecret(DATABASE_URL)
    expect(local.version).toBeGreaterThan(before + 1)
  })
})
