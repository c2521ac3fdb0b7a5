import { describe, expect, it } from 'vitest'
import { findRoot } from '../src/root.mjs'
import {
  checkSlugFree,
  constantCase,
  pascalCase,
  renameText,
  replaceSpecDescription,
  validateDescription,
  validateSlug,
} from '../src/scaffold.mjs'

describe('validateSlug', () => {
  it.each(['weather', 'google-drive', 's3', 'a1-b2'])('accepts "%s"', (slug) => {
    expect(validateSlug(slug)).toBeUndefined()
  })

  it.each([
    ['', 'Give the new server a slug: pnpm new:server <slug> [--description "…"]'],
    [
      'Weather',
      '"Weather" is not a valid slug: use lowercase letters, digits and single dashes, starting with a letter (e.g. "weather", "google-drive").',
    ],
    [
      'google_drive',
      '"google_drive" is not a valid slug: use lowercase letters, digits and single dashes, starting with a letter (e.g. "weather", "google-drive").',
    ],
    [
      'a--b',
      '"a--b" is not a valid slug: use lowercase letters, digits and single dashes, starting with a letter (e.g. "weather", "google-drive").',
    ],
    [
      '1password',
      '"1password" is not a valid slug: use lowercase letters, digits and single dashes, starting with a letter (e.g. "weather", "google-drive").',
    ],
    ['x'.repeat(33), `"${'x'.repeat(33)}" is longer than 32 characters.`],
    [
      'mcp-weather',
      'Drop the "mcp"/"server" part from "mcp-weather": the package is already @keel-mcp/server-<slug> with bin mcp-server-<slug>.',
    ],
    [
      'weather-server',
      'Drop the "mcp"/"server" part from "weather-server": the package is already @keel-mcp/server-<slug> with bin mcp-server-<slug>.',
    ],
    ['core', '"core" is reserved in this repository; pick the name of the service or domain.'],
    ['example', '"example" is reserved in this repository; pick the name of the service or domain.'],
  ])('refuses "%s" with a clear message', (slug, message) => {
    expect(validateSlug(slug)).toBe(message)
  })
})

describe('validateDescription', () => {
  it('refuses an empty, a multi-line and an over-long description', () => {
    expect([
      validateDescription(' '),
      validateDescription('a\nb'),
      validateDescription('x'.repeat(101)),
    ]).toEqual([
      'The description must not be empty.',
      'The description must be one line.',
      'The description has 101 characters; the MCP registry allows 100.',
    ])
  })
})

describe('checkSlugFree', () => {
  it('refuses a slug whose folder exists in the workspace', async () => {
    expect(await checkSlugFree(findRoot(), 'example')).toBe('servers/example already exists.')
  })

  it('accepts a slug nobody uses', async () => {
    expect(await checkSlugFree(findRoot(), 'no-such-server-yet')).toBeUndefined()
  })
})

describe('renameText', () => {
  it.each([
    ['@keel-mcp/server-example', '@keel-mcp/server-google-drive'],
    ['mcp-server-example', 'mcp-server-google-drive'],
    ['servers/example', 'servers/google-drive'],
    ["name: 'example',", "name: 'google-drive',"],
    ['ExampleDeps, ExampleOptions', 'GoogleDriveDeps, GoogleDriveOptions'],
    ["env: 'EXAMPLE_MAX_NOTES'", "env: 'GOOGLE_DRIVE_MAX_NOTES'"],
    ["/** The example's own options */", "/** This server's own options */"],
    ['for example, a note', 'for example, a note'],
    ['io.github.keel-mcp/example', 'io.github.keel-mcp/google-drive'],
    ['exampleness', 'exampleness'],
  ])('turns %s into %s', (from, to) => {
    expect(renameText(from, 'google-drive')).toBe(to)
  })

  it('derives identifier and env prefixes from the slug', () => {
    expect([pascalCase('google-drive'), constantCase('google-drive')]).toEqual([
      'GoogleDrive',
      'GOOGLE_DRIVE',
    ])
  })
})

describe('replaceSpecDescription', () => {
  it('replaces the spec description, also when it wraps, and escapes quotes', () => {
    const source = "defineServer({\n  name: 'x',\n  description:\n    'Old text.',\n  tools: [],\n})\n"
    expect(replaceSpecDescription(source, "Alice's data")).toBe(
      "defineServer({\n  name: 'x',\n  description: 'Alice\\'s data',\n  tools: [],\n})\n",
    )
  })
})
