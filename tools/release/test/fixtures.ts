import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const created: string[] = []

/** Removes every fixture directory written so far (call from afterAll). */
export async function removeFixtures(): Promise<void> {
  await Promise.all(created.splice(0).map((dir) => rm(dir, { recursive: true, force: true })))
}

/** A server package.json that passes every manifest rule. */
export function serverManifest(slug: string, version = '1.2.3'): Record<string, any> {
  return {
    name: `@keel-mcp/server-${slug}`,
    version,
    description: `The ${slug} server.`,
    type: 'module',
    license: 'MIT',
    engines: { node: '>=20' },
    bin: { [`mcp-server-${slug}`]: 'dist/index.js' },
    files: ['dist', 'README.md', 'LICENSE', 'CHANGELOG.md'],
    exports: { './package.json': './package.json' },
    repository: {
      type: 'git',
      url: 'git+https://github.com/keel-mcp/keel.git',
      directory: `servers/${slug}`,
    },
    keywords: ['mcp', 'model-context-protocol', 'mcp-server'],
    mcpName: `io.github.keel-mcp/${slug}`,
    publishConfig: { access: 'public' },
    scripts: { build: 'keel-bundle' },
    dependencies: { '@keel-mcp/core': 'workspace:^' },
  }
}

/** The matching server.json (MCP registry format). */
export function serverJson(slug: string, version = '1.2.3'): Record<string, any> {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: `io.github.keel-mcp/${slug}`,
    description: `The ${slug} server.`,
    version,
    repository: { url: 'https://github.com/keel-mcp/keel', source: 'github', subfolder: `servers/${slug}` },
    packages: [
      {
        registryType: 'npm',
        registryBaseUrl: 'https://registry.npmjs.org',
        identifier: `@keel-mcp/server-${slug}`,
        version,
        transport: { type: 'stdio' },
        environmentVariables: [
          { name: 'DEMO_TOKEN', description: 'A token.', isRequired: false, isSecret: true },
        ],
      },
    ],
  }
}

/**
 * Writes a packable server package to a fresh temp dir. Its core dependency is a plain range:
 * outside a workspace `pnpm pack` cannot resolve `workspace:^`.
 */
export async function writeServerPackage(
  slug: string,
  options: {
    manifest?: Record<string, any>
    extraFiles?: Record<string, string>
    server?: Record<string, any>
  } = {},
): Promise<{ dir: string; relativeDir: string; manifest: Record<string, any> }> {
  const base = await mkdtemp(join(tmpdir(), 'keel-pack-fixture-'))
  created.push(base)
  const dir = join(base, 'servers', slug)
  await mkdir(join(dir, 'dist'), { recursive: true })
  // `manifest` is the source view (workspace:^); the file on disk has what pnpm would publish.
  const manifest = { ...serverManifest(slug), ...options.manifest }
  const onDisk = { ...manifest, dependencies: { ...manifest.dependencies, '@keel-mcp/core': '^1.0.0' } }
  const files: Record<string, string> = {
    'package.json': `${JSON.stringify(onDisk, null, 2)}\n`,
    'server.json': `${JSON.stringify(options.server ?? serverJson(slug), null, 2)}\n`,
    'README.md': `# ${slug}\n`,
    LICENSE: 'MIT License\n',
    'dist/index.js': '#!/usr/bin/env node\nconsole.log("hi")\n',
    ...options.extraFiles,
  }
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true })
    await writeFile(join(dir, path), text)
  }
  return { dir, relativeDir: `servers/${slug}`, manifest }
}
