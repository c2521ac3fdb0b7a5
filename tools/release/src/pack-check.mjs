#!/usr/bin/env node
// Packaging check for every published package: what npm users get must be exactly the built code
// plus README, LICENSE and CHANGELOG, with complete metadata (publint-style manifest rules, plus
// Keel's own: bin naming, `mcpName` and a server.json in the MCP registry's format in sync).
//
// It runs the real `pnpm pack` (so `files`, `publishConfig` and the workspace:/catalog: rewriting
// are pnpm's own), unpacks the tarball and inspects it.
//
//   node tools/release/src/pack-check.mjs [--filter <name>]... [--json]
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import {
  BIN_PREFIX,
  findWorkspaceRoot,
  listPublishedPackages,
  MCP_NAMESPACE,
  REPOSITORY_URL,
  SCOPE,
  slugOf,
} from './workspace.mjs'

/** The server.json schema Keel writes (MCP registry, camelCase generation). */
export const SERVER_SCHEMA_URL =
  'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json'
/** The MCP registry caps server descriptions at 100 characters. */
export const SERVER_DESCRIPTION_MAX = 100

const ALLOWED_TOP_LEVEL = new Set(['package.json', 'README.md', 'LICENSE', 'LICENSE.md', 'CHANGELOG.md'])
const ALLOWED_FILES_ENTRIES = new Set(['dist', 'README.md', 'LICENSE', 'LICENSE.md', 'CHANGELOG.md'])
const TEST_PATH =
  /(^|\/)(test|tests|__tests__|__mocks__|__fixtures__|fixtures)\/|\.(test|spec)\.[cm]?[jt]sx?$/
const SECRET_FILE = [
  /(^|\/)\.env(\.[^/]*)?$/,
  /(^|\/)\.npmrc$/,
  /(^|\/)id_(rsa|dsa|ecdsa|ed25519)$/,
  /\.(pem|key|p12|pfx|keystore)$/,
]
/** Credential shapes that are never legitimate in a published file (placeholders do not match). */
const SECRET_CONTENT = [
  ['a GitHub token', /\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b/],
  ['a GitHub fine-grained token', /\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b/],
  ['a Slack token', /\bxox[abposr]-\d{6,}-\d{6,}[A-Za-z0-9-]*/],
  ['an npm token', /\bnpm_[A-Za-z0-9]{36}\b/],
  ['an AWS access key id', /\bAKIA[0-9A-Z]{16}\b/],
  ['a private key', /-----BEGIN [A-Z ]*PRIVATE KEY-----\s*[A-Za-z0-9+/=\s]{64,}/],
]

/** Export targets (`./dist/index.js`) of an `exports` field, any nesting of conditions. */
export function exportTargets(exportsField) {
  if (typeof exportsField === 'string') return [exportsField]
  if (Array.isArray(exportsField)) return exportsField.flatMap(exportTargets)
  if (exportsField && typeof exportsField === 'object')
    return Object.values(exportsField).flatMap(exportTargets)
  return []
}

const normalize = (path) => path.replace(/^\.\//, '')

/**
 * Problems with a package's own package.json (the source one, before packing).
 * @param {Record<string, any>} manifest
 * @param {{ relativeDir: string }} where
 */
export function checkManifest(manifest, { relativeDir }) {
  const problems = []
  const need = (condition, message) => {
    if (!condition) problems.push(message)
  }
  const slug = slugOf(manifest.name)
  need(
    typeof manifest.name === 'string' && manifest.name.startsWith(`${SCOPE}/`),
    `name must be in ${SCOPE}/`,
  )
  need(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(manifest.version ?? ''), 'version must be semver')
  need(typeof manifest.description === 'string' && manifest.description.trim(), 'description is missing')
  need(typeof manifest.license === 'string' && manifest.license, 'license is missing')
  need(manifest.type === 'module', 'type must be "module" (ESM)')
  need(typeof manifest.engines?.node === 'string', 'engines.node is missing')
  need(manifest.publishConfig?.access === 'public', 'publishConfig.access must be "public" (scoped package)')
  need(
    manifest.exports && typeof manifest.exports === 'object',
    'exports is missing (servers: { "./package.json": "./package.json" })',
  )
  need(
    Array.isArray(manifest.keywords) && manifest.keywords.includes('mcp'),
    'keywords must include "mcp" (and say what the package is about)',
  )
  need(manifest.repository?.type === 'git', 'repository.type must be "git"')
  need(manifest.repository?.url === REPOSITORY_URL, `repository.url must be ${REPOSITORY_URL}`)
  need(manifest.repository?.directory === relativeDir, `repository.directory must be "${relativeDir}"`)
  if (!Array.isArray(manifest.files)) {
    problems.push('files is missing: list "dist", "README.md", "LICENSE", "CHANGELOG.md"')
  } else {
    need(manifest.files.includes('dist'), 'files must include "dist"')
    for (const entry of manifest.files) {
      if (!entry.startsWith('!') && !ALLOWED_FILES_ENTRIES.has(entry))
        problems.push(`files entry "${entry}" is not one of dist, README.md, LICENSE, CHANGELOG.md`)
    }
  }
  for (const [field, deps] of Object.entries({
    dependencies: manifest.dependencies,
    peerDependencies: manifest.peerDependencies,
    optionalDependencies: manifest.optionalDependencies,
  })) {
    for (const [name, range] of Object.entries(deps ?? {})) {
      if (String(range).startsWith('workspace:') && !['workspace:^', 'workspace:~'].includes(range))
        problems.push(`${field}.${name} is "${range}": use "workspace:^" so published ranges follow releases`)
      if (String(range).startsWith('file:') || String(range).startsWith('link:'))
        problems.push(`${field}.${name} is "${range}": not installable from the registry`)
    }
  }
  if (slug !== undefined) {
    const bins = manifest.bin && typeof manifest.bin === 'object' ? manifest.bin : {}
    need(
      Object.keys(bins).length === 1 && bins[`${BIN_PREFIX}${slug}`] === 'dist/index.js',
      `bin must be { "${BIN_PREFIX}${slug}": "dist/index.js" }`,
    )
    need(manifest.mcpName === `${MCP_NAMESPACE}/${slug}`, `mcpName must be "${MCP_NAMESPACE}/${slug}"`)
    need(
      manifest.dependencies?.[`${SCOPE}/core`] === 'workspace:^',
      `dependencies["${SCOPE}/core"] must be "workspace:^": a core release must bump (and re-bundle) the server`,
    )
    need(
      /\bkeel-bundle\b/.test(manifest.scripts?.build ?? ''),
      'scripts.build must run keel-bundle (one-file bin)',
    )
  }
  return problems
}

/**
 * Problems with a server's server.json (MCP registry format) against its package.json.
 * @param {Record<string, any> | undefined} server
 * @param {Record<string, any>} manifest
 * @param {{ relativeDir: string }} where
 */
export function checkServerJson(server, manifest, { relativeDir }) {
  if (server === undefined) return ['server.json is missing (MCP registry metadata)']
  const problems = []
  const need = (condition, message) => {
    if (!condition) problems.push(`server.json: ${message}`)
  }
  const slug = slugOf(manifest.name)
  need(server.$schema === SERVER_SCHEMA_URL, `$schema must be ${SERVER_SCHEMA_URL}`)
  need(server.name === manifest.mcpName, `name must equal package.json mcpName (${manifest.mcpName})`)
  need(server.name === `${MCP_NAMESPACE}/${slug}`, `name must be "${MCP_NAMESPACE}/${slug}"`)
  const description = server.description
  need(
    typeof description === 'string' && description.length > 0 && description.length <= SERVER_DESCRIPTION_MAX,
    `description must be 1–${SERVER_DESCRIPTION_MAX} characters`,
  )
  if (typeof manifest.description === 'string' && manifest.description.length <= SERVER_DESCRIPTION_MAX)
    need(description === manifest.description, 'description must equal package.json description')
  need(server.version === manifest.version, `version ${server.version} != package.json ${manifest.version}`)
  need(
    server.repository?.url === 'https://github.com/keel-mcp/keel' &&
      server.repository?.source === 'github' &&
      server.repository?.subfolder === relativeDir,
    `repository must be { url: https://github.com/keel-mcp/keel, source: github, subfolder: ${relativeDir} }`,
  )
  const packages = Array.isArray(server.packages) ? server.packages : []
  const npm = packages.find((entry) => entry.registryType === 'npm' && entry.identifier === manifest.name)
  if (!npm) {
    problems.push(`server.json: packages needs an npm entry with identifier ${manifest.name}`)
    return problems
  }
  need(
    npm.version === manifest.version,
    `packages[npm].version ${npm.version} != package.json ${manifest.version}`,
  )
  need(npm.transport?.type === 'stdio', 'packages[npm].transport must be { type: "stdio" }')
  need(
    npm.registryBaseUrl === undefined || npm.registryBaseUrl === 'https://registry.npmjs.org',
    'packages[npm].registryBaseUrl must be https://registry.npmjs.org',
  )
  for (const [index, variable] of (npm.environmentVariables ?? []).entries()) {
    need(
      typeof variable.name === 'string' && /^[A-Z][A-Z0-9_]*$/.test(variable.name),
      `environmentVariables[${index}].name must be UPPER_SNAKE`,
    )
    need(
      typeof variable.description === 'string' && variable.description.trim(),
      `environmentVariables[${index}] (${variable.name}) needs a description`,
    )
    for (const key of Object.keys(variable)) {
      if (
        !['name', 'description', 'isRequired', 'isSecret', 'default', 'format', 'choices', 'value'].includes(
          key,
        )
      )
        problems.push(`server.json: environmentVariables[${index}] has unknown field "${key}"`)
    }
  }
  for (const [index, argument] of (npm.packageArguments ?? []).entries()) {
    need(
      argument.type === 'positional' || argument.type === 'named',
      `packageArguments[${index}].type must be positional or named`,
    )
    if (argument.type === 'positional')
      need(argument.value || argument.valueHint, `packageArguments[${index}] needs value or valueHint`)
    if (argument.type === 'named')
      need(String(argument.name ?? '').startsWith('--'), `packageArguments[${index}].name must be a --flag`)
  }
  return problems
}

/**
 * Problems with the list of files in a tarball (paths relative to the package root).
 * @param {string[]} entries
 * @param {Record<string, any>} manifest  the packed package.json
 */
export function checkEntries(entries, manifest) {
  const problems = []
  const set = new Set(entries)
  const sourceMaps = manifest.keel?.sourceMaps === true
  for (const entry of entries) {
    const top = entry.split('/')[0]
    if (!entry.includes('/') ? !ALLOWED_TOP_LEVEL.has(entry) : top !== 'dist')
      problems.push(`${entry}: only dist/, README, LICENSE and CHANGELOG belong in the package`)
    if (TEST_PATH.test(entry)) problems.push(`${entry}: a test file is packed`)
    if (entry.endsWith('.map') && !sourceMaps)
      problems.push(`${entry}: a source map is packed (set "keel": { "sourceMaps": true } if intended)`)
    if (entry.endsWith('.tsbuildinfo')) problems.push(`${entry}: build info is packed`)
    if (SECRET_FILE.some((pattern) => pattern.test(entry)))
      problems.push(`${entry}: looks like a secrets file`)
    if (/(^|\/)src\//.test(entry) || /\.ts$/.test(entry.replace(/\.d\.[cm]?ts$/, '')))
      problems.push(`${entry}: source file is packed`)
  }
  if (!set.has('README.md')) problems.push('README.md is missing from the package')
  if (!set.has('LICENSE') && !set.has('LICENSE.md')) problems.push('LICENSE is missing from the package')
  const bins = typeof manifest.bin === 'string' ? { [manifest.name]: manifest.bin } : (manifest.bin ?? {})
  for (const [name, target] of Object.entries(bins)) {
    if (!set.has(normalize(target))) problems.push(`bin ${name} -> ${target} is not in the package`)
  }
  for (const target of exportTargets(manifest.exports)) {
    if (target.includes('*')) continue
    if (normalize(target) !== 'package.json' && !set.has(normalize(target)))
      problems.push(`exports target ${target} is not in the package`)
  }
  for (const field of ['main', 'types', 'module']) {
    if (typeof manifest[field] === 'string' && !set.has(normalize(manifest[field])))
      problems.push(`${field} ${manifest[field]} is not in the package`)
  }
  for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies']) {
    for (const [name, range] of Object.entries(manifest[field] ?? {})) {
      if (/^(workspace|catalog|link|file):/.test(String(range)))
        problems.push(`packed ${field}.${name} is still "${range}"`)
    }
  }
  return problems
}

/** Problems with the packed files' contents: secrets, bins without a shebang, dangling maps. */
export async function checkContents(root, entries, manifest) {
  const problems = []
  const bins = new Set(
    Object.values(typeof manifest.bin === 'string' ? { bin: manifest.bin } : (manifest.bin ?? {})).map(
      normalize,
    ),
  )
  const sourceMaps = manifest.keel?.sourceMaps === true
  for (const entry of entries) {
    const file = join(root, entry)
    const info = await stat(file)
    if (info.size > 20 * 1024 * 1024) {
      problems.push(`${entry}: ${Math.round(info.size / 1024 / 1024)} MB is suspiciously large`)
      continue
    }
    const text = await readFile(file, 'utf8')
    for (const [what, pattern] of SECRET_CONTENT) {
      if (pattern.test(text)) problems.push(`${entry}: contains what looks like ${what}`)
    }
    if (bins.has(entry) && !text.startsWith('#!/usr/bin/env node'))
      problems.push(`${entry}: a bin must start with "#!/usr/bin/env node"`)
    if (!sourceMaps && /\.[cm]?js$/.test(entry) && /\n\/\/# sourceMappingURL=(?!data:)/.test(text))
      problems.push(`${entry}: points at a source map that is not shipped`)
  }
  return problems
}

function runCommand(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    child.once('error', reject)
    child.once('close', (code) =>
      code === 0
        ? resolve(stdout)
        : reject(new Error(`${command} ${args.join(' ')} exited with ${code}\n${stderr || stdout}`)),
    )
  })
}

async function listFiles(dir, base = dir) {
  const files = []
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) files.push(...(await listFiles(path, base)))
    else files.push(relative(base, path).split(sep).join('/'))
  }
  return files.sort()
}

/**
 * Packs one package with `pnpm pack` and checks manifest, server.json, file list and contents.
 * @param {{ dir: string, relativeDir: string, manifest: Record<string, any> }} pkg
 * @returns {Promise<{ name: string, problems: string[], files: string[], tarball?: string }>}
 */
export async function packAndCheck(pkg, { destination } = {}) {
  const problems = [...checkManifest(pkg.manifest, pkg)]
  if (slugOf(pkg.manifest.name) !== undefined) {
    const serverFile = join(pkg.dir, 'server.json')
    let server
    if (existsSync(serverFile)) {
      try {
        server = JSON.parse(await readFile(serverFile, 'utf8'))
      } catch (error) {
        problems.push(`server.json is not valid JSON: ${error.message}`)
        server = {}
      }
    }
    problems.push(...checkServerJson(server, pkg.manifest, pkg))
  }
  if (!existsSync(join(pkg.dir, 'dist'))) {
    problems.push('dist/ does not exist: build before packing (pnpm build)')
    return { name: pkg.manifest.name, problems, files: [] }
  }
  const work = await mkdtemp(join(destination ?? tmpdir(), 'keel-pack-'))
  try {
    const output = await runCommand('pnpm', ['pack', '--json', '--pack-destination', work], { cwd: pkg.dir })
    const packed = JSON.parse(output.slice(output.indexOf('{')))
    const unpacked = join(work, 'unpacked')
    await mkdir(unpacked)
    await runCommand('tar', ['-xzf', packed.filename, '-C', unpacked], {})
    const root = join(unpacked, 'package')
    const files = await listFiles(root)
    const packedManifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'))
    problems.push(...checkEntries(files, packedManifest))
    problems.push(...(await checkContents(root, files, packedManifest)))
    return { name: pkg.manifest.name, problems, files, tarball: packed.filename }
  } finally {
    if (!destination) await rm(work, { recursive: true, force: true })
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      filter: { type: 'string', multiple: true },
      root: { type: 'string' },
      json: { type: 'boolean' },
    },
  })
  const root = values.root ?? findWorkspaceRoot()
  let packages = await listPublishedPackages(root)
  if (values.filter?.length) packages = packages.filter((pkg) => values.filter.includes(pkg.name))
  if (!packages.length) {
    console.error('pack-check: no published package matched')
    process.exit(1)
  }
  let failed = 0
  const results = []
  for (const pkg of packages) {
    const result = await packAndCheck(pkg)
    results.push(result)
    if (result.problems.length) failed++
    if (!values.json) {
      const status = result.problems.length ? 'FAIL' : 'ok  '
      console.log(`${status} ${pkg.name} (${pkg.relativeDir}): ${result.files.length} files`)
      for (const problem of result.problems) console.log(`       - ${problem}`)
    }
  }
  if (values.json) console.log(JSON.stringify(results, null, 2))
  else console.log(`pack-check: ${packages.length - failed} package(s) clean, ${failed} with problems`)
  process.exit(failed ? 1 : 0)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main()
