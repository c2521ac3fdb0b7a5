import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectStdio } from '@keel-mcp/core/testing'
import { packAndCheck } from '@keel-mcp/release-tools/pack-check'
import { copyWorkspace } from '@keel-mcp/release-tools/workspace'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRoot } from '../src/root.mjs'

// The scaffolder's promise, end to end: in a copy of the workspace (never the real tree),
// `pnpm new:server` creates a server that installs, builds, passes its own generated tests and
// answers tools/list over stdio; and it refuses bad or taken slugs.
const SLUG = 'weather-alerts'
const DESCRIPTION = 'Weather alerts for a region, from a public API.'
const PACKAGE = `@keel-mcp/server-${SLUG}`

let copy = ''
let coreBuiltBefore = true
let scaffoldRun: ReturnType<typeof run>
let nextSteps: string[] = []
let stepRuns: Array<ReturnType<typeof run>> = []

/** Child processes get a clean environment: no vitest variables leaking into the inner vitest. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' }
  for (const key of Object.keys(env)) if (key.startsWith('VITEST') || key === 'NODE_ENV') delete env[key]
  return env
}

/** The commands under "Next:" in the scaffolder's output, as a contributor would copy them. */
function printedSteps(output: string): string[] {
  const after = output.slice(output.indexOf('\nNext:\n') + '\nNext:\n'.length)
  const steps: string[] = []
  for (const line of after.split('\n')) {
    if (!line.startsWith('  ')) break
    steps.push(line.trim())
  }
  return steps
}

function run(command: string, args: string[], timeout = 240_000) {
  const result = spawnSync(command, args, { cwd: copy, encoding: 'utf8', env: childEnv(), timeout })
  return { status: result.status, output: `${result.stdout ?? ''}${result.stderr ?? ''}` }
}

const newServer = (...args: string[]) => run(process.execPath, ['tools/create-server/src/cli.mjs', ...args])
const readJson = async (path: string) => JSON.parse(await readFile(join(copy, path), 'utf8'))

beforeAll(async () => {
  copy = await mkdtemp(join(tmpdir(), 'keel-scaffold-'))
  await copyWorkspace(findRoot(), copy, {
    only: ['packages/core', 'tools/bundle', 'tools/create-server', 'tools/release', 'servers/example'],
  })
  // A fresh clone: nothing is built, core's dist/ included.
  coreBuiltBefore = existsSync(join(copy, 'packages/core/dist'))
  scaffoldRun = newServer(SLUG, '--description', DESCRIPTION)
  // The printed next steps, verbatim and in order, through a shell as a contributor runs them.
  nextSteps = printedSteps(scaffoldRun.output)
  stepRuns = nextSteps.map((step) => run('sh', ['-c', step]))
}, 400_000)

afterAll(async () => {
  if (copy) await rm(copy, { recursive: true, force: true })
})

describe('pnpm new:server in a copy of the workspace', () => {
  it('scaffolds, installs and reports what it created', () => {
    expect(scaffoldRun.status, scaffoldRun.output).toBe(0)
    expect(scaffoldRun.output).toContain(`Created servers/${SLUG} (${PACKAGE}, bin mcp-server-${SLUG})`)
  })

  it('renames the package, bin, repository directory and registry name, and makes it public', async () => {
    const manifest = await readJson(`servers/${SLUG}/package.json`)
    expect(manifest).toMatchObject({
      name: PACKAGE,
      version: '0.0.0',
      description: DESCRIPTION,
      bin: { [`mcp-server-${SLUG}`]: 'dist/index.js' },
      repository: { directory: `servers/${SLUG}` },
      mcpName: `io.github.keel-mcp/${SLUG}`,
      publishConfig: { access: 'public' },
      dependencies: { '@keel-mcp/core': 'workspace:^' },
    })
    expect(manifest.private).toBeUndefined()
  })

  it('writes server.json in the registry format, in sync with package.json', async () => {
    const server = await readJson(`servers/${SLUG}/server.json`)
    expect(server).toMatchObject({
      name: `io.github.keel-mcp/${SLUG}`,
      description: DESCRIPTION,
      version: '0.0.0',
      repository: { subfolder: `servers/${SLUG}` },
      packages: [
        {
          registryType: 'npm',
          identifier: PACKAGE,
          version: '0.0.0',
          transport: { type: 'stdio' },
          environmentVariables: [expect.objectContaining({ name: 'WEATHER_ALERTS_MAX_NOTES' })],
        },
      ],
    })
  })

  it('titles the README after the package and documents npx', async () => {
    const readme = await readFile(join(copy, `servers/${SLUG}/README.md`), 'utf8')
    expect(readme.split('\n')[0]).toBe(`# ${PACKAGE}`)
    expect(readme).toContain(`npx -y ${PACKAGE} --help`)
  })

  it('renames the spec: server name, description, identifiers and env prefix', async () => {
    const spec = await readFile(join(copy, `servers/${SLUG}/src/server.ts`), 'utf8')
    expect(spec).toContain(`name: '${SLUG}',`)
    expect(spec).toContain(`description: '${DESCRIPTION}',`)
    expect(spec).toContain('defineServer<WeatherAlertsDeps, WeatherAlertsOptions>')
    expect(await readFile(join(copy, `servers/${SLUG}/src/config.ts`), 'utf8')).toContain(
      "env: 'WEATHER_ALERTS_MAX_NOTES'",
    )
  })

  it('writes the changeset for the first release', async () => {
    expect(await readFile(join(copy, `.changeset/new-server-${SLUG}.md`), 'utf8')).toBe(
      `---\n'${PACKAGE}': minor\n---\n\nNew server: ${DESCRIPTION}\n`,
    )
  })

  it('leaves the new server lint- and format-clean', () => {
    const check = run(join(copy, 'node_modules/.bin/biome'), ['check', `servers/${SLUG}`])
    expect(check.status, check.output).toBe(0)
  })

  it('prints next steps that are the ones docs/adding-a-server.md gives', async () => {
    expect(coreBuiltBefore).toBe(false)
    expect(nextSteps).toEqual([
      `pnpm --filter ${PACKAGE} build`,
      `pnpm --filter ${PACKAGE} test`,
      `node servers/${SLUG}/dist/index.js --help`,
    ])
    const guide = await readFile(join(findRoot(), 'docs/adding-a-server.md'), 'utf8')
    for (const step of nextSteps) expect(guide).toContain(step.replaceAll(SLUG, 'weather'))
  })

  it('runs every printed step without an error, in a copy where core was never built', () => {
    for (const [index, step] of nextSteps.entries()) {
      expect(stepRuns[index]?.status, `${step}\n${stepRuns[index]?.output}`).toBe(0)
    }
    expect(stepRuns[2]?.output).toContain(`mcp-server-${SLUG}`)
  })

  it('builds a one-file bin', async () => {
    expect(stepRuns[0]?.status, stepRuns[0]?.output).toBe(0)
    const bin = await readFile(join(copy, `servers/${SLUG}/dist/index.js`), 'utf8')
    expect(bin.startsWith('#!/usr/bin/env node')).toBe(true)
  })

  it('passes its generated tests', () => {
    const tests = stepRuns[1]
    expect(tests?.status, tests?.output).toBe(0)
    expect(tests?.output).toMatch(/Tests\s+\d+ passed/)
  })

  it('answers tools/list over stdio with its own name and version', async () => {
    const connection = await connectStdio({
      command: process.execPath,
      args: [join(copy, `servers/${SLUG}/dist/index.js`)],
    })
    try {
      const tools = (await connection.client.listTools()).tools.map((tool) => tool.name)
      expect(tools).toEqual(['add_note', 'search_notes', 'count_slowly'])
      expect(connection.client.getServerVersion()).toMatchObject({ version: '0.0.0' })
      expect(connection.client.getServerVersion()?.name).toContain(SLUG)
      // The template's placeholder icon comes along (src/icon.ts), inline: nothing to fetch.
      const icons = (connection.client.getServerVersion() as { icons?: Array<{ src: string }> }).icons
      expect(icons?.[0]?.src).toMatch(/^data:image\/svg\+xml;base64,/)
    } finally {
      await connection.close()
    }
  })

  it('passes the packaging check', async () => {
    const manifest = await readJson(`servers/${SLUG}/package.json`)
    const result = await packAndCheck({
      dir: join(copy, 'servers', SLUG),
      relativeDir: `servers/${SLUG}`,
      manifest,
    })
    expect(result.problems).toEqual([])
    expect(result.files).toEqual(
      expect.arrayContaining(['LICENSE', 'README.md', 'dist/index.js', 'package.json']),
    )
  })

  it('refuses a taken slug and a bad slug with a clear message and exit code 1', () => {
    const taken = newServer(SLUG, '--skip-install')
    const bad = newServer('Weather_Alerts', '--skip-install')
    expect([taken.status, taken.output.trim()]).toEqual([1, `new:server: servers/${SLUG} already exists.`])
    expect(bad.status).toBe(1)
    expect(bad.output).toContain('new:server: "Weather_Alerts" is not a valid slug')
    expect(existsSync(join(copy, 'servers/Weather_Alerts'))).toBe(false)
  })
})
