import { afterAll, describe, expect, it } from 'vitest'
import {
  checkEntries,
  checkManifest,
  checkServerJson,
  exportTargets,
  packAndCheck,
} from '../src/pack-check.mjs'
import { removeFixtures, serverJson, serverManifest, writeServerPackage } from './fixtures.js'

afterAll(removeFixtures)

const where = { relativeDir: 'servers/demo' }
/** A packed manifest: pnpm has turned workspace:^ into a real range. */
const packed = (extra: Record<string, any> = {}) => ({
  ...serverManifest('demo'),
  dependencies: { '@keel-mcp/core': '^1.0.0' },
  ...extra,
})
const goodEntries = ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'dist/index.js']

describe('checkManifest', () => {
  it('accepts a complete server manifest', () => {
    expect(checkManifest(serverManifest('demo'), where)).toEqual([])
  })

  it.each([
    ['bin', { bin: { demo: 'dist/index.js' } }, 'bin must be { "mcp-server-demo": "dist/index.js" }'],
    ['mcpName', { mcpName: undefined }, 'mcpName must be "io.github.keel-mcp/demo"'],
    ['publishConfig', { publishConfig: undefined }, 'publishConfig.access must be "public" (scoped package)'],
    ['engines', { engines: undefined }, 'engines.node is missing'],
    [
      'exports',
      { exports: undefined },
      'exports is missing (servers: { "./package.json": "./package.json" })',
    ],
    [
      'files',
      { files: ['dist', 'src'] },
      'files entry "src" is not one of dist, README.md, LICENSE, CHANGELOG.md',
    ],
    [
      'keywords',
      { keywords: ['filesystem'] },
      'keywords must include "mcp" (and say what the package is about)',
    ],
    [
      'core range',
      { dependencies: { '@keel-mcp/core': 'workspace:*' } },
      'dependencies.@keel-mcp/core is "workspace:*": use "workspace:^" so published ranges follow releases',
    ],
  ])('reports a wrong %s', (_field, override, message) => {
    expect(checkManifest({ ...serverManifest('demo'), ...override }, where)).toContain(message)
  })

  it('reports a repository directory that is not the package folder', () => {
    expect(checkManifest(serverManifest('demo'), { relativeDir: 'servers/other' })).toContain(
      'repository.directory must be "servers/other"',
    )
  })
})

describe('checkServerJson', () => {
  it('accepts server.json in sync with package.json', () => {
    expect(checkServerJson(serverJson('demo'), serverManifest('demo'), where)).toEqual([])
  })

  it('reports a missing server.json', () => {
    expect(checkServerJson(undefined, serverManifest('demo'), where)).toEqual([
      'server.json is missing (MCP registry metadata)',
    ])
  })

  it('reports versions that drifted from package.json', () => {
    const problems = checkServerJson(serverJson('demo', '1.0.0'), serverManifest('demo', '1.1.0'), where)
    expect(problems).toEqual([
      'server.json: version 1.0.0 != package.json 1.1.0',
      'server.json: packages[npm].version 1.0.0 != package.json 1.1.0',
    ])
  })

  it('reports a description over the registry limit and a missing transport', () => {
    const server = serverJson('demo')
    server.description = 'x'.repeat(101)
    delete server.packages[0].transport
    expect(
      checkServerJson(server, { ...serverManifest('demo'), description: 'x'.repeat(101) }, where),
    ).toEqual([
      'server.json: description must be 1–100 characters',
      'server.json: packages[npm].transport must be { type: "stdio" }',
    ])
  })

  it('reports an environment variable without a description', () => {
    const server = serverJson('demo')
    server.packages[0].environmentVariables = [{ name: 'DATABASE_URL', isSecret: true }]
    expect(checkServerJson(server, serverManifest('demo'), where)).toEqual([
      'server.json: environmentVariables[0] (DATABASE_URL) needs a description',
    ])
  })
})

describe('checkEntries', () => {
  it('accepts dist plus README, LICENSE and CHANGELOG', () => {
    expect(checkEntries(goodEntries, packed())).toEqual([])
  })

  it.each([
    ['a test file', 'dist/index.test.js', 'dist/index.test.js: a test file is packed'],
    ['a test folder', 'dist/test/helpers.js', 'dist/test/helpers.js: a test file is packed'],
    [
      'a source map',
      'dist/index.js.map',
      'dist/index.js.map: a source map is packed (set "keel": { "sourceMaps": true } if intended)',
    ],
    ['a .env file', 'dist/.env', 'dist/.env: looks like a secrets file'],
    ['a source file', 'dist/index.ts', 'dist/index.ts: source file is packed'],
    [
      'a stray top-level file',
      'tsconfig.json',
      'tsconfig.json: only dist/, README, LICENSE and CHANGELOG belong in the package',
    ],
  ])('reports %s', (_what, entry, message) => {
    expect(checkEntries([...goodEntries, entry], packed())).toContain(message)
  })

  it('allows source maps when the package opts in', () => {
    expect(
      checkEntries([...goodEntries, 'dist/index.js.map'], packed({ keel: { sourceMaps: true } })),
    ).toEqual([])
  })

  it('reports a bin, an export and README/LICENSE missing from the tarball', () => {
    const manifest = packed({
      exports: { '.': { default: './dist/lib.js' } },
      dependencies: { '@keel-mcp/core': 'workspace:^' },
    })
    expect(checkEntries(['package.json'], manifest)).toEqual([
      'README.md is missing from the package',
      'LICENSE is missing from the package',
      'bin mcp-server-demo -> dist/index.js is not in the package',
      'exports target ./dist/lib.js is not in the package',
      'packed dependencies.@keel-mcp/core is still "workspace:^"',
    ])
  })

  it('walks nested export conditions', () => {
    expect(exportTargets({ '.': { types: './a.d.ts', default: './a.js' }, './x': './x.js' })).toEqual([
      './a.d.ts',
      './a.js',
      './x.js',
    ])
  })
})

describe('packAndCheck (real pnpm pack)', () => {
  it('passes a clean server package and lists exactly its files', async () => {
    const pkg = await writeServerPackage('demo')
    const result = await packAndCheck(pkg)
    expect(result.problems).toEqual([])
    expect(result.files).toEqual(['LICENSE', 'README.md', 'dist/index.js', 'package.json'])
  })

  it('catches tests, source maps and a token that `files` let into the tarball', async () => {
    const pkg = await writeServerPackage('leaky', {
      extraFiles: {
        'dist/index.test.js': 'test()\n',
        'dist/index.js.map': '{}\n',
        'dist/config.js': `export const token = 'ghp_${'a1B2'.repeat(9)}'\n`,
      },
    })
    const result = await packAndCheck(pkg)
    expect(result.problems).toEqual([
      'dist/index.js.map: a source map is packed (set "keel": { "sourceMaps": true } if intended)',
      'dist/index.test.js: a test file is packed',
      'dist/config.js: contains what looks like a GitHub token',
    ])
  })

  it('catches a bin without a shebang and server.json out of sync', async () => {
    const pkg = await writeServerPackage('stale', {
      server: serverJson('stale', '1.0.0'),
      extraFiles: { 'dist/index.js': 'console.log("no shebang")\n' },
    })
    const result = await packAndCheck(pkg)
    expect(result.problems).toEqual([
      'server.json: version 1.0.0 != package.json 1.2.3',
      'server.json: packages[npm].version 1.0.0 != package.json 1.2.3',
      'dist/index.js: a bin must start with "#!/usr/bin/env node"',
    ])
  })

  it('refuses to pack a package that was not built', async () => {
    const pkg = await writeServerPackage('unbuilt')
    const { rm } = await import('node:fs/promises')
    await rm(`${pkg.dir}/dist`, { recursive: true })
    expect((await packAndCheck(pkg)).problems).toEqual([
      'dist/ does not exist: build before packing (pnpm build)',
    ])
  })
})
