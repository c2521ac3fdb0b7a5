#!/usr/bin/env node
// The release flow, proven end to end on loopback:
//   1. copy the workspace (versioning and publishing never touch the real tree), scaffold one more
//      server there with `pnpm new:server` (so the scaffolder's output is released too), install, build;
//   2. start verdaccio on 127.0.0.1 with no uplinks;
//   3. round 1: a changeset for every public package → `pnpm version-packages` → `pnpm release`
//      (build, pack check, `changeset publish`) into the local registry;
//   4. for each server, from a fresh directory with an empty npm cache:
//      `npx -y --@keel-mcp:registry=<local> @keel-mcp/server-<slug>@<version> …`, then a real MCP
//      client over stdio: initialize, tools/list, one harmless tool call (cold, then warm);
//   5. round 2: a core-only changeset → every server is bumped (patch) with its core range moved;
//      publish, and npx the new versions.
// Prints a report (versions, ranges, cold/warm npx start-up per server) and exits non-zero on any
// failure. Bounded: every command has a deadline, and the whole run E2E_TIMEOUT_S (default 600).
// KEEP_E2E=1 keeps the scratch directory.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { copyWorkspace, findWorkspaceRoot, listPublishedPackages } from '@keel-mcp/release-tools/workspace'
import { prepare } from './hooks.mjs'
import { descendants, killAll, killPid, run, within } from './processes.mjs'
import { packument, startRegistry } from './verdaccio.mjs'

const root = findWorkspaceRoot(dirname(fileURLToPath(import.meta.url)))
const budgetMs = Number(process.env.E2E_TIMEOUT_S ?? 600) * 1000
const keep = process.env.KEEP_E2E === '1'
const scaffolded = process.env.E2E_SCAFFOLD === '0' ? undefined : 'scaffolded'
const started = performance.now()
const cleanups = []
const problems = []

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`
const log = (message) => console.log(`[${seconds(performance.now() - started).padStart(7)}] ${message}`)
const step = (title) => log(`== ${title}`)

function expectThat(condition, message) {
  if (condition) log(`   ok: ${message}`)
  else {
    problems.push(message)
    log(`   FAIL: ${message}`)
  }
}

let cleaning
/** Ends what is still running and removes what was made; one run however often it is called. */
function cleanup() {
  cleaning ??= (async () => {
    killAll()
    // Let killed commands release the scratch directory before it is removed.
    await new Promise((resolve) => setTimeout(resolve, 200))
    while (cleanups.length) {
      try {
        await cleanups.pop()()
      } catch (error) {
        console.error(`registry-e2e: cleanup: ${error.message}`)
      }
    }
  })()
  return cleaning
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    console.error(`registry-e2e: ${signal}, cleaning up`)
    await cleanup()
    process.exit(130)
  })
}
setTimeout(async () => {
  console.error(`registry-e2e: over the ${budgetMs / 1000} s budget (E2E_TIMEOUT_S); stopping`)
  await cleanup()
  process.exit(1)
}, budgetMs).unref()

/** `@keel-mcp/core/testing` from the real workspace (built on demand: the client is core's). */
async function loadTesting() {
  try {
    return await import('@keel-mcp/core/testing')
  } catch {
    log('building @keel-mcp/core (its testing client is needed)')
    await run('pnpm', ['--filter', '@keel-mcp/core', 'run', 'build'], { cwd: root })
    return import('@keel-mcp/core/testing')
  }
}

/** The environment a user's shell would have: none of pnpm's or npm's per-script variables. */
function userEnv(extra = {}) {
  const env = { ...process.env }
  for (const key of Object.keys(env)) if (/^(npm|pnpm)_/i.test(key)) delete env[key]
  return {
    ...env,
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    ...extra,
  }
}

const git = (repo, ...args) =>
  execFileSync('git', ['-c', 'user.name=registry-e2e', '-c', 'user.email=e2e@keel.invalid', ...args], {
    cwd: repo,
    stdio: 'pipe',
  })

function commit(repo, message) {
  git(repo, 'add', '-A')
  git(repo, 'commit', '-q', '--allow-empty', '-m', message)
}

async function versionsOf(repo) {
  return Object.fromEntries(
    (await listPublishedPackages(repo)).map((pkg) => [pkg.name, pkg.manifest.version]),
  )
}

const parse = (version) => version.split(/[.-]/).slice(0, 3).map(Number)
function bump(version, type) {
  const [major, minor, patch] = parse(version)
  if (type === 'major') return `${major + 1}.0.0`
  if (type === 'minor') return `${major}.${minor + 1}.0`
  return `${major}.${minor}.${patch + 1}`
}
const greater = (a, b) => {
  const [x, y] = [parse(a), parse(b)]
  for (let index = 0; index < 3; index++) if (x[index] !== y[index]) return x[index] > y[index]
  return false
}

function changeset(names, type, summary) {
  return `---\n${names.map((name) => `'${name}': ${type}`).join('\n')}\n---\n\n${summary}\n`
}

/**
 * Starts a published server with npx from a clean directory and talks MCP to it.
 * @returns {Promise<{ startMs: number, tools: number, call: string, version: string }>}
 */
async function npxSession({ testing, registry, pkg, version, cacheDir, work, repo, label }) {
  const cwd = await mkdtemp(join(work, `npx-${pkg.slug}-`))
  const prepared = await prepare(pkg.slug, { repo, work })
  let stopped
  const stopHook = () => {
    const index = cleanups.indexOf(stopHook)
    if (index >= 0) cleanups.splice(index, 1)
    stopped ??= Promise.resolve(prepared.cleanup?.())
    return stopped
  }
  cleanups.push(stopHook) // also stopped if the run is aborted mid-session
  let stderr = ''
  try {
    const args = [
      '-y',
      `--@keel-mcp:registry=${registry}`,
      `${pkg.name}@${version}`,
      ...(prepared.args ?? []),
    ]
    const began = performance.now()
    const connection = await within(
      240_000,
      `${label}: npx ${pkg.name}@${version}`,
      testing.connectStdio({
        command: 'npx',
        args,
        cwd,
        env: userEnv({ npm_config_cache: cacheDir, ...prepared.env }),
        onStderr: (chunk) => {
          stderr += chunk
        },
      }),
    ).catch((error) => {
      throw new Error(`${error.message}\n--- npx stderr ---\n${stderr.slice(-4000)}`)
    })
    const startMs = performance.now() - began
    try {
      const { tools } = await within(30_000, 'tools/list', connection.client.listTools())
      const call = prepared.pickCall(tools)
      const result = await within(60_000, `tools/call ${call.name}`, connection.client.callTool(call))
      const text = (result.content ?? []).map((block) => block.text ?? '').join('\n')
      const info = connection.client.getServerVersion()
      expectThat(tools.length > 0, `${label}: ${pkg.name} lists ${tools.length} tools`)
      expectThat(!result.isError, `${label}: ${call.name} answered${result.isError ? `: ${text}` : ''}`)
      const problem = prepared.check?.(result)
      if (problem !== undefined) expectThat(false, `${label}: ${call.name}: ${problem}`)
      expectThat(
        info?.version === version,
        `${label}: serverInfo.version is ${info?.version} (want ${version})`,
      )
      return { startMs, tools: tools.length, call: call.name, version: info?.version }
    } finally {
      await connection.close()
    }
  } finally {
    await stopHook()
  }
}

/**
 * The environment that sends every publish to the local registry. pnpm 12 reads `pnpm_config_*`
 * (it ignores `npm_config_registry`), while `changeset publish` asks `npm info` (which reads
 * `npm_config_registry`) what is published already: both are set, and the copy's .npmrc pins the
 * @keel-mcp scope too, so nothing can reach the public registry.
 */
function publishEnv(registry) {
  return { ...process.env, npm_config_registry: registry, pnpm_config_registry: registry }
}

async function pinRegistry(repo, registry) {
  const npmrc = join(repo, '.npmrc')
  const current = existsSync(npmrc) ? await readFile(npmrc, 'utf8') : ''
  await writeFile(npmrc, `${current.trimEnd()}\n@keel-mcp:registry=${registry}\n`)
  for (const key of ['registry', '@keel-mcp:registry']) {
    const { output } = await run('pnpm', ['config', 'get', key], { cwd: repo, env: publishEnv(registry) })
    if (output.trim().replace(/\/?$/, '/') !== registry)
      throw new Error(`refusing to publish: pnpm's ${key} is ${output.trim()}, not ${registry}`)
  }
}

/** Runs one npx session; a failure is recorded and the run goes on with the other servers. */
async function attempt(what, session) {
  try {
    return await session()
  } catch (error) {
    problems.push(`${what}: ${error.message}`)
    log(`   FAIL: ${what}: ${error.message}`)
    return undefined
  }
}

async function release(repo, registry) {
  const { ms } = await run('pnpm', ['run', 'release'], {
    cwd: repo,
    env: publishEnv(registry),
    timeoutMs: 300_000,
    label: 'pnpm release',
  })
  log(`   pnpm release (build, pack check, changeset publish): ${seconds(ms)}`)
}

async function versionPackages(repo) {
  const { ms } = await run('pnpm', ['run', 'version-packages'], { cwd: repo, label: 'pnpm version-packages' })
  log(`   pnpm version-packages: ${seconds(ms)}`)
  const sync = await run(process.execPath, ['tools/release/src/sync-server-json.mjs', '--check'], {
    cwd: repo,
  })
  expectThat(sync.output.includes('match'), 'every server.json version matches its package.json')
}

async function main() {
  const testing = await loadTesting()
  const work = await realpath(await mkdtemp(join(tmpdir(), 'keel-registry-e2e-')))
  cleanups.push(() => {
    // Runs last: hooks and the registry are stopped. Whatever is left (an npx that overran its
    // deadline, the server under it) may still be writing into the scratch directory: end it.
    for (const pid of descendants(process.pid)) killPid(pid)
    return keep ? log(`kept ${work}`) : rm(work, { recursive: true, force: true })
  })
  const repo = join(work, 'repo')

  step('copy the workspace to a scratch directory (the real tree is never versioned)')
  await copyWorkspace(root, repo)
  git(repo, 'init', '-q', '-b', 'main')
  commit(repo, 'workspace snapshot')
  log(`   ${repo}`)
  if (scaffolded) {
    // A server made by `pnpm new:server` must go through the same release and npx path.
    await run(
      process.execPath,
      [
        'tools/create-server/src/cli.mjs',
        scaffolded,
        '--skip-install',
        '--description',
        'Scaffolded in the registry e2e.',
      ],
      { cwd: repo, label: 'pnpm new:server' },
    )
    log(`   scaffolded servers/${scaffolded} with pnpm new:server (E2E_SCAFFOLD=0 skips it)`)
  }

  step('install')
  const install = await run('pnpm', ['install', '--prefer-offline', '--no-frozen-lockfile'], {
    cwd: repo,
    env: { ...process.env, CI: 'true' },
    label: 'pnpm install',
  })
  log(`   pnpm install: ${seconds(install.ms)}`)

  const skipped = []
  for (const pkg of (await listPublishedPackages(repo)).filter((candidate) => candidate.slug)) {
    if (pkg.manifest.scripts?.build) continue
    const reason = 'no build script, so no dist yet'
    skipped.push({ name: pkg.name, reason })
    log(`   SKIP ${pkg.name}: ${reason}; not published or started in this run`)
    // Only in the copy: keep changesets from publishing a package that cannot be built.
    await writeFile(
      join(pkg.dir, 'package.json'),
      `${JSON.stringify({ ...pkg.manifest, private: true }, null, 2)}\n`,
    )
  }
  commit(repo, 'ready to release')
  const packages = await listPublishedPackages(repo)
  const servers = packages.filter((pkg) => pkg.slug)
  if (!servers.length) throw new Error('no server has a build script to publish')
  const core = packages.find((pkg) => pkg.name === '@keel-mcp/core')
  if (!core) throw new Error('@keel-mcp/core is not a published package')
  log(`   to publish: ${packages.map((pkg) => pkg.name).join(', ')}`)

  step('start verdaccio on 127.0.0.1 (no uplinks)')
  const registry = await startRegistry(join(work, 'verdaccio'))
  cleanups.push(() => registry.stop())
  await pinRegistry(repo, registry.url)
  log(`   ${registry.url} (pinned for @keel-mcp in the copy's .npmrc)`)

  step('round 1: changeset → version-packages → release')
  const before = await versionsOf(repo)
  const firstSummary = 'First release through the registry end-to-end test.'
  await writeFile(
    join(repo, '.changeset/registry-e2e-first.md'),
    changeset(
      packages.map((pkg) => pkg.name),
      'minor',
      firstSummary,
    ),
  )
  commit(repo, 'changeset: first release')
  await versionPackages(repo)
  const first = await versionsOf(repo)
  for (const pkg of packages) {
    expectThat(
      greater(first[pkg.name], before[pkg.name]),
      `${pkg.name} ${before[pkg.name]} → ${first[pkg.name]}`,
    )
    const changelog = await readFile(join(pkg.dir, 'CHANGELOG.md'), 'utf8').catch(() => '')
    expectThat(
      changelog.includes(`## ${first[pkg.name]}`) && changelog.includes(firstSummary),
      `${pkg.name} CHANGELOG.md has ${first[pkg.name]}`,
    )
  }
  commit(repo, 'version packages (1)')
  await release(repo, registry.url)
  for (const pkg of servers) {
    expectThat(existsSync(join(pkg.dir, 'dist/index.js')), `${pkg.name} built dist/index.js`)
  }
  for (const pkg of packages) {
    const document = await packument(registry.url, pkg.name)
    const manifest = document?.versions?.[first[pkg.name]]
    expectThat(manifest !== undefined, `registry has ${pkg.name}@${first[pkg.name]}`)
    if (pkg.slug && manifest) {
      // The bin inlines core (see .pnpmfile.cjs): the published manifest records the range it was
      // built from under keel.inlined instead of making npx install it.
      expectThat(
        manifest.keel?.inlined?.['@keel-mcp/core'] === `^${first[core.name]}` &&
          manifest.dependencies?.['@keel-mcp/core'] === undefined,
        `${pkg.name}@${first[pkg.name]} inlines @keel-mcp/core ${manifest.keel?.inlined?.['@keel-mcp/core']} (not an npx dependency)`,
      )
      expectThat(
        manifest.bin?.[`mcp-server-${pkg.slug}`] === 'dist/index.js',
        `${pkg.name} bin mcp-server-${pkg.slug}`,
      )
    }
  }

  step('npx each server from a clean directory with an empty npm cache')
  const report = new Map()
  for (const pkg of servers) {
    const cacheDir = join(work, `npm-cache-${pkg.slug}`)
    await mkdir(cacheDir)
    const base = { testing, registry: registry.url, pkg, cacheDir, work, repo }
    const row = {}
    report.set(pkg.name, row)
    for (const label of ['cold', 'warm']) {
      row[label] = await attempt(`${label} npx ${pkg.name}`, () =>
        npxSession({ ...base, version: first[pkg.name], label }),
      )
      if (!row[label]) break
      log(`   ${pkg.name}@${first[pkg.name]}: ${label} npx → initialized in ${seconds(row[label].startMs)}`)
    }
  }

  step('round 2: a core-only changeset moves every server (patch) and its core range')
  const coreSummary = 'A core fix released through the registry end-to-end test.'
  await writeFile(join(repo, '.changeset/registry-e2e-core.md'), changeset([core.name], 'patch', coreSummary))
  commit(repo, 'changeset: core fix')
  await versionPackages(repo)
  const second = await versionsOf(repo)
  expectThat(
    second[core.name] === bump(first[core.name], 'patch'),
    `${core.name} ${first[core.name]} → ${second[core.name]}`,
  )
  for (const pkg of servers) {
    const expected = bump(first[pkg.name], 'patch')
    expectThat(
      second[pkg.name] === expected,
      `${pkg.name} ${first[pkg.name]} → ${second[pkg.name]} (want ${expected})`,
    )
    const manifest = JSON.parse(await readFile(join(pkg.dir, 'package.json'), 'utf8'))
    expectThat(
      manifest.dependencies['@keel-mcp/core'] === 'workspace:^',
      `${pkg.name} keeps "@keel-mcp/core": "workspace:^" in the repository`,
    )
    const changelog = await readFile(join(pkg.dir, 'CHANGELOG.md'), 'utf8')
    expectThat(
      changelog.includes(`## ${second[pkg.name]}`) && changelog.includes(`${core.name}@${second[core.name]}`),
      `${pkg.name} CHANGELOG.md records "Updated dependencies: ${core.name}@${second[core.name]}"`,
    )
  }
  commit(repo, 'version packages (2)')
  await release(repo, registry.url)
  for (const pkg of servers) {
    const document = await packument(registry.url, pkg.name)
    const range = document?.versions?.[second[pkg.name]]?.keel?.inlined?.['@keel-mcp/core']
    expectThat(
      range === `^${second[core.name]}`,
      `registry: ${pkg.name}@${second[pkg.name]} inlines @keel-mcp/core ${range} (was ^${first[core.name]})`,
    )
    expectThat(
      document?.['dist-tags']?.latest === second[pkg.name],
      `registry: latest of ${pkg.name} is ${second[pkg.name]}`,
    )
  }
  for (const pkg of servers) {
    const upgrade = await attempt(`upgrade npx ${pkg.name}`, () =>
      npxSession({
        testing,
        registry: registry.url,
        pkg,
        version: second[pkg.name],
        cacheDir: join(work, `npm-cache-${pkg.slug}`),
        work,
        repo,
        label: 'upgrade',
      }),
    )
    if (!upgrade) continue
    log(
      `   ${pkg.name}@${second[pkg.name]}: npx (cache from round 1) → initialized in ${seconds(upgrade.startMs)}`,
    )
    report.get(pkg.name).upgrade = upgrade
  }

  console.log('\nregistry-e2e report')
  console.log(
    `  ${'server'.padEnd(32)} ${'round 1'.padEnd(8)} ${'round 2'.padEnd(8)} ${'core range'.padEnd(11)} ${'cold npx'.padStart(9)} ${'warm npx'.padStart(9)} ${'upgrade'.padStart(9)}  call`,
  )
  const time = (session) => (session ? seconds(session.startMs) : 'failed').padStart(9)
  for (const pkg of servers) {
    const row = report.get(pkg.name)
    console.log(
      `  ${pkg.name.padEnd(32)} ${first[pkg.name].padEnd(8)} ${second[pkg.name].padEnd(8)} ${`^${second[core.name]}`.padEnd(11)} ${time(row.cold)} ${time(row.warm)} ${time(row.upgrade)}  ${row.cold ? `${row.cold.call} (${row.cold.tools} tools)` : 'FAILED'}`,
    )
  }
  for (const { name, reason } of skipped) console.log(`  ${name.padEnd(32)} skipped: ${reason}`)
  console.log(`  ${core.name}: ${before[core.name]} → ${first[core.name]} → ${second[core.name]}`)
}

let exitCode = 0
try {
  await main()
} catch (error) {
  problems.push(error.message)
  console.error(`\nregistry-e2e: ${error.stack ?? error.message}`)
}
await cleanup()
if (problems.length) {
  console.error(`\nregistry-e2e FAILED (${seconds(performance.now() - started)}):`)
  for (const problem of problems) console.error(`  - ${problem.split('\n')[0]}`)
  exitCode = 1
} else {
  console.log(`\nregistry-e2e: OK in ${seconds(performance.now() - started)}`)
}
process.exit(exitCode)
