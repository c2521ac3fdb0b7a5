// Copies the living template (servers/example) into servers/<slug> and renames everything that
// carries the template's identity: package name, bin, repository directory, MCP registry name and
// server.json, identifiers (ExampleDeps → WeatherDeps), env prefixes (EXAMPLE_ → WEATHER_), test
// and snapshot titles, and the README. Writes the changeset for the new server's first release.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'

export const TEMPLATE_SLUG = 'example'
export const SCOPE = '@keel-mcp'
export const MCP_NAMESPACE = 'io.github.keel-mcp'
export const DESCRIPTION_MAX = 100
const SLUG_MAX = 32

/** Slugs that would collide with the repository's own names or read badly as a package suffix. */
export const RESERVED_SLUGS = new Set([
  'example',
  'template',
  'core',
  'bundle',
  'all',
  'mcp',
  'server',
  'servers',
  'keel',
  'test',
  'tests',
  'tools',
])

/** Folders and files of the template that are build output or per-package history. */
const SKIPPED = new Set(['node_modules', 'dist', '.turbo', 'coverage', 'CHANGELOG.md'])
const TEXT_FILE = /\.(ts|mts|cts|js|mjs|cjs|json|snap|md|yaml|yml)$/

/** Why a slug is unacceptable (a sentence for the user), or undefined when it is fine. */
export function validateSlug(slug) {
  if (!slug) return 'Give the new server a slug: pnpm new:server <slug> [--description "…"]'
  if (!/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/.test(slug))
    return `"${slug}" is not a valid slug: use lowercase letters, digits and single dashes, starting with a letter (e.g. "weather", "google-drive").`
  if (slug.length > SLUG_MAX) return `"${slug}" is longer than ${SLUG_MAX} characters.`
  if (/^(mcp|server)-|-(mcp|server)$/.test(slug))
    return `Drop the "mcp"/"server" part from "${slug}": the package is already ${SCOPE}/server-<slug> with bin mcp-server-<slug>.`
  if (RESERVED_SLUGS.has(slug))
    return `"${slug}" is reserved in this repository; pick the name of the service or domain.`
  return undefined
}

/** Why a description is unacceptable, or undefined. */
export function validateDescription(description) {
  if (typeof description !== 'string' || !description.trim()) return 'The description must not be empty.'
  if (/[\r\n]/.test(description)) return 'The description must be one line.'
  if (description.length > DESCRIPTION_MAX)
    return `The description has ${description.length} characters; the MCP registry allows ${DESCRIPTION_MAX}.`
  return undefined
}

/** Why the slug is taken in this workspace, or undefined. */
export async function checkSlugFree(root, slug) {
  if (existsSync(join(root, 'servers', slug))) return `servers/${slug} already exists.`
  for (const parent of ['packages', 'servers', 'tools']) {
    const dir = join(root, parent)
    if (!existsSync(dir)) continue
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const file = join(dir, entry.name, 'package.json')
      if (!entry.isDirectory() || !existsSync(file)) continue
      const manifest = JSON.parse(await readFile(file, 'utf8'))
      if (manifest.name === `${SCOPE}/server-${slug}`)
        return `${manifest.name} already exists in ${parent}/${entry.name}.`
      if (manifest.bin && typeof manifest.bin === 'object' && `mcp-server-${slug}` in manifest.bin)
        return `The bin mcp-server-${slug} is already provided by ${manifest.name}.`
    }
  }
  return undefined
}

/** `google-drive` → `GoogleDrive`. */
export const pascalCase = (slug) =>
  slug
    .split('-')
    .map((part) => part[0].toUpperCase() + part.slice(1))
    .join('')

/** `google-drive` → `GOOGLE_DRIVE`. */
export const constantCase = (slug) => slug.toUpperCase().replaceAll('-', '_')

/**
 * Renames the template's identity in a text: the slug in names and paths, `Example…`
 * identifiers, `EXAMPLE_…` env vars, and "the example's" in comments. "for example" survives.
 */
export function renameText(text, slug, from = TEMPLATE_SLUG) {
  const keep = '\u0000KEEP\u0000'
  const fromPascal = pascalCase(from)
  const fromConstant = constantCase(from)
  return text
    .replace(new RegExp(`\\b([Ff]or) ${from}\\b`, 'g'), `$1 ${keep}`)
    .replace(
      new RegExp(`\\b([Tt])he ${from}'s\\b`, 'g'),
      (_match, t) => `${t === 'T' ? 'This' : 'this'} server's`,
    )
    .replace(new RegExp(`\\b${from}\\b`, 'g'), slug)
    .replace(new RegExp(`\\b${fromPascal}(?=[A-Z_]|\\b)`, 'g'), pascalCase(slug))
    .replace(new RegExp(`\\b${fromConstant}(?=_|\\b)`, 'g'), constantCase(slug))
    .replaceAll(keep, from)
}

/** Replaces the top-level `description:` string of the server spec (src/server.ts). */
export function replaceSpecDescription(source, description) {
  const quoted = `'${description.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`
  const pattern = /^( {2}description:)\s*(['"`])((?:\\.|(?!\2)[^\\])*)\2/m
  if (!pattern.test(source)) throw new Error('src/server.ts: no top-level `description:` string to replace')
  return source.replace(pattern, `$1 ${quoted}`)
}

/** Junk a template folder can hold without it being part of the template (logs, build info). */
const skipped = (name) => SKIPPED.has(name) || /\.(tsbuildinfo|log)$/.test(name)

/** The template's files: what git tracks or would track there, else a walk minus the junk. */
async function templateFiles(dir) {
  const listed = spawnSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z', '.'], {
    cwd: dir,
    encoding: 'utf8',
  })
  if (listed.status === 0 && listed.stdout) {
    return listed.stdout
      .split('\0')
      .filter((file) => file && existsSync(join(dir, file)) && !file.split('/').some(skipped))
      .sort()
  }
  return listFiles(dir)
}

async function listFiles(dir, base = dir) {
  const files = []
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (skipped(entry.name)) continue
    const path = join(dir, entry.name)
    if (entry.isDirectory()) files.push(...(await listFiles(path, base)))
    else files.push(relative(base, path).split(sep).join('/'))
  }
  return files.sort()
}

function section(markdown, heading) {
  const start = markdown.indexOf(`\n## ${heading}\n`)
  if (start < 0) return undefined
  const rest = markdown.slice(start + 1)
  const end = rest.indexOf('\n## ', 3)
  return (end < 0 ? rest : rest.slice(0, end)).trim()
}

/** The new server's README: the house shape, with the template's tools table carried over. */
export function renderReadme({ slug, description, template }) {
  const packageName = `${SCOPE}/server-${slug}`
  const tools = section(template, 'Tools')
  const npx = { command: 'npx', args: ['-y', packageName] }
  const desktop = JSON.stringify({ mcpServers: { [slug]: npx } }, null, 2)
  const vscode = JSON.stringify({ servers: { [slug]: { type: 'stdio', ...npx } } }, null, 2)
  return `# ${packageName}

${description}

> Scaffolded from the example server: replace its notes tools with this server's own, then update
> this README (purpose, tools, configuration, security notes).

${tools ? `${renameText(tools, slug)}\n\n` : ''}## Install and use

Run it with \`npx\` (Node.js 20 or newer); nothing to install globally:

\`\`\`sh
npx -y ${packageName} --help
\`\`\`

Claude Desktop (\`claude_desktop_config.json\`) and Cursor (\`.cursor/mcp.json\`):

\`\`\`json
${desktop}
\`\`\`

VS Code (\`.vscode/mcp.json\`):

\`\`\`json
${vscode}
\`\`\`

Streamable HTTP on 127.0.0.1 instead of stdio: \`npx -y ${packageName} --transport http --port 3000\`
(endpoint \`/mcp\`, health \`/healthz\`).

## Configuration

Every Keel server shares the common flags (\`--transport\`, \`--port\`, \`--read-only\`, \`--toolsets\`,
\`--tools\`, \`--exclude-tools\`, \`--log-level\`, …; see \`--help\`). This server's own options:

| flag | env | default | what |
|---|---|---|---|
| \`--max-notes <n>\` | \`${constantCase(slug)}_MAX_NOTES\` | 1000 | Most notes the store keeps |

## Inspect

\`\`\`sh
npx -y @modelcontextprotocol/inspector npx -y ${packageName}
\`\`\`

## Security

Say what the server can reach, what \`--read-only\` removes, and which secrets it reads (from env
vars first; secrets given on argv are redacted from logs).

## Development

\`\`\`sh
pnpm --filter ${packageName} build     # bundles src/index.ts into dist/index.js
pnpm --filter ${packageName} test      # contract tests in memory, e2e over stdio and HTTP
\`\`\`

Layout: \`src/index.ts\` (the bin), \`src/server.ts\` (the spec), \`src/config.ts\` (options),
\`src/tools/\` (one file per tool), \`src/lib/\` (domain code, no MCP imports), \`test/\`.
See [docs/adding-a-server.md](../../docs/adding-a-server.md).
`
}

/** The changeset that releases the new server for the first time (0.0.0 → 0.1.0). */
export function renderChangeset({ slug, description }) {
  return `---\n'${SCOPE}/server-${slug}': minor\n---\n\nNew server: ${description}\n`
}

/**
 * Scaffolds servers/<slug> from the template. Throws an Error with a user-facing message when the
 * slug or description is refused.
 * @param {{ root: string, slug: string, description?: string, template?: string }} options
 * @returns {Promise<{ dir: string, files: string[], changeset: string, packageName: string }>}
 */
export async function scaffold({ root, slug, description, template = TEMPLATE_SLUG }) {
  const slugProblem = validateSlug(slug) ?? (await checkSlugFree(root, slug))
  if (slugProblem) throw new Error(slugProblem)
  const text = description ?? `An MCP server for ${slug}.`
  const descriptionProblem = validateDescription(text)
  if (descriptionProblem) throw new Error(descriptionProblem)
  const templateDir = join(root, 'servers', template)
  if (!existsSync(join(templateDir, 'package.json')))
    throw new Error(`template servers/${template} not found`)

  const dir = join(root, 'servers', slug)
  const packageName = `${SCOPE}/server-${slug}`
  const files = await templateFiles(templateDir)
  await mkdir(dir, { recursive: true })
  for (const file of files) {
    const source = join(templateDir, file)
    const target = join(dir, renameText(file, slug, template))
    await mkdir(join(target, '..'), { recursive: true })
    if (TEXT_FILE.test(file))
      await writeFile(target, renameText(await readFile(source, 'utf8'), slug, template))
    else await cp(source, target)
  }

  const manifestFile = join(dir, 'package.json')
  const manifest = JSON.parse(await readFile(manifestFile, 'utf8'))
  delete manifest.private
  manifest.name = packageName
  manifest.version = '0.0.0'
  manifest.description = text
  manifest.bin = { [`mcp-server-${slug}`]: 'dist/index.js' }
  manifest.repository = { ...manifest.repository, directory: `servers/${slug}` }
  manifest.keywords = [...new Set([...(manifest.keywords ?? []), ...slug.split('-')])]
  manifest.mcpName = `${MCP_NAMESPACE}/${slug}`
  manifest.publishConfig = { ...manifest.publishConfig, access: 'public' }
  await writeFile(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`)

  const serverJsonFile = join(dir, 'server.json')
  if (existsSync(serverJsonFile)) {
    const server = JSON.parse(await readFile(serverJsonFile, 'utf8'))
    server.name = manifest.mcpName
    server.description = text
    server.version = manifest.version
    server.repository = { ...server.repository, subfolder: `servers/${slug}` }
    for (const entry of server.packages ?? []) {
      if (entry.registryType === 'npm')
        Object.assign(entry, { identifier: packageName, version: manifest.version })
    }
    await writeFile(serverJsonFile, `${JSON.stringify(server, null, 2)}\n`)
  }

  const specFile = join(dir, 'src', 'server.ts')
  if (existsSync(specFile))
    await writeFile(specFile, replaceSpecDescription(await readFile(specFile, 'utf8'), text))

  const templateReadme = existsSync(join(templateDir, 'README.md'))
    ? await readFile(join(templateDir, 'README.md'), 'utf8')
    : ''
  await writeFile(join(dir, 'README.md'), renderReadme({ slug, description: text, template: templateReadme }))

  const changesetDir = join(root, '.changeset')
  await mkdir(changesetDir, { recursive: true })
  const changeset = join(changesetDir, `new-server-${slug}.md`)
  await writeFile(changeset, renderChangeset({ slug, description: text }))

  return {
    dir,
    files: [...new Set([...files.map((file) => renameText(file, slug, template)), 'README.md'])].sort(),
    changeset,
    packageName,
  }
}
