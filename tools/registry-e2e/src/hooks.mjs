// What each server needs to start, and which harmless tool call proves it works. A server without
// a hook of its own gets the default: no arguments, and a call of its first read-only, closed-world
// tool that takes no required arguments (enough for a freshly scaffolded server). Servers that
// need a service (a database, an API) get a hook that brings up a throwaway one on loopback.
import { existsSync } from 'node:fs'
import { mkdtemp, realpath, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { build } from 'esbuild'

/**
 * @typedef {object} Prepared
 * @property {string[]} [args]              arguments after the package name
 * @property {Record<string,string>} [env]  extra environment
 * @property {(tools: any[]) => { name: string, arguments: Record<string, unknown> }} pickCall
 * @property {(result: any) => string | undefined} [check]  a problem with the call's result, if any
 * @property {() => Promise<void>} [cleanup]
 */

const textOf = (result) =>
  (result.content ?? [])
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('\n')

/** The first read-only, closed-world tool with no required arguments, called with none. */
export function defaultCall(tools) {
  const tool = tools.find(
    (candidate) =>
      candidate.annotations?.readOnlyHint === true &&
      candidate.annotations?.openWorldHint === false &&
      (candidate.inputSchema?.required ?? []).length === 0,
  )
  if (!tool) {
    throw new Error(
      `no read-only, closed-world tool without required arguments among ${tools.map((t) => t.name).join(', ')}: ` +
        'add a hook for this server in tools/registry-e2e/src/hooks.mjs',
    )
  }
  return { name: tool.name, arguments: {} }
}

/** Prefers the first of `names` the server offers; fills required string arguments from `values`. */
export function preferredCall(names, values = {}) {
  return (tools) => {
    for (const name of names) {
      const tool = tools.find((candidate) => candidate.name === name)
      if (!tool) continue
      const args = {}
      for (const key of tool.inputSchema?.required ?? []) {
        if (!(key in values)) throw new Error(`${name} needs "${key}"; teach the hook a value for it`)
        args[key] = values[key]
      }
      return { name, arguments: args }
    }
    return defaultCall(tools)
  }
}

/**
 * Bundles a TypeScript test harness (e.g. servers/postgres/test/harness) into one ESM file next
 * to it and imports it: Node 20 cannot load .ts, and the harness's own dependencies (pg) resolve
 * from the server's node_modules in the workspace copy.
 */
async function importHarness(entry) {
  const outfile = join(entry, '..', '.registry-e2e-harness.mjs')
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'error',
  })
  return import(pathToFileURL(outfile).href)
}

/** Per-server hooks, by slug. `repo` is the workspace copy, `work` a scratch directory. */
export const hooks = {
  /** fs: one allowed temp directory; list_allowed_directories must name it. */
  async fs({ work }) {
    const allowed = await realpath(await mkdtemp(join(work, 'fs-allowed-')))
    await writeFile(join(allowed, 'hello.txt'), 'hello from the registry e2e\n')
    return {
      args: [allowed],
      pickCall: preferredCall(['list_allowed_directories']),
      check: (result) =>
        textOf(result).includes(allowed) ? undefined : `expected ${allowed} in: ${textOf(result)}`,
    }
  },

  /** postgres: a throwaway cluster from the server's own test harness; DATABASE_URL points at it. */
  async postgres({ repo }) {
    const entry = join(repo, 'servers/postgres/test/harness/index.ts')
    if (!existsSync(entry))
      throw new Error('servers/postgres/test/harness/index.ts (startPostgres) is missing')
    const harness = await importHarness(entry)
    const database = await harness.startPostgres()
    return {
      env: { DATABASE_URL: database.url },
      pickCall: preferredCall(['list_schemas', 'list_tables', 'query'], { sql: 'SELECT 1 AS one' }),
      cleanup: () => database.stop(),
    }
  },

  /**
   * github: the server's own loopback fake of the GitHub REST API (servers/github/test); the token
   * is a dummy that only the fake sees, and get_me must return the fake's user.
   */
  async github({ repo }) {
    const entry = join(repo, 'servers/github/test/fake-github.ts')
    if (!existsSync(entry)) throw new Error('servers/github/test/fake-github.ts (FakeGitHub) is missing')
    const { FakeGitHub } = await importHarness(entry)
    const fake = await FakeGitHub.start()
    const login = 'registry-e2e-user'
    fake.on('GET', '/user', {
      body: { login, name: null, type: 'User', html_url: `https://github.com/${login}` },
    })
    return {
      env: { GITHUB_TOKEN: 'ghp_registry_e2e_dummy_token_000000000000', GITHUB_API_URL: fake.url },
      pickCall: preferredCall(['get_me']),
      check: (result) =>
        textOf(result).includes(login) ? undefined : `expected ${login} in: ${textOf(result)}`,
      cleanup: () => fake.close(),
    }
  },

  /**
   * slack: the server's own loopback fake of the Slack Web API (servers/slack/test); the token is
   * the fake's, and list_channels must show the fake workspace's #general.
   */
  async slack({ repo }) {
    const entry = join(repo, 'servers/slack/test/fake-slack.ts')
    if (!existsSync(entry)) throw new Error('servers/slack/test/fake-slack.ts (startFakeSlack) is missing')
    const { startFakeSlack, BOT_TOKEN } = await importHarness(entry)
    const fake = await startFakeSlack()
    return {
      env: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_API_URL: fake.url },
      pickCall: preferredCall(['list_channels']),
      check: (result) =>
        textOf(result).includes('general') ? undefined : `expected #general in: ${textOf(result)}`,
      cleanup: () => fake.close(),
    }
  },

  /**
   * browser: the server's own loopback fixture pages (servers/browser/test); loopback is refused by
   * default, so the run allows exactly the fixture's origin. navigate must show the fixture's home
   * page, which takes a real Chromium (PUPPETEER_EXECUTABLE_PATH, or the usual system paths).
   */
  async browser({ repo }) {
    const entry = join(repo, 'servers/browser/test/fixtures.ts')
    if (!existsSync(entry)) throw new Error('servers/browser/test/fixtures.ts (startFixtures) is missing')
    const { startFixtures } = await importHarness(entry)
    const fixtures = await startFixtures()
    return {
      args: ['--allowed-origins', fixtures.url],
      pickCall: preferredCall(['navigate'], { url: `${fixtures.url}/` }),
      check: (result) =>
        textOf(result).includes('Fixture home')
          ? undefined
          : `expected the fixture page in: ${textOf(result)}`,
      cleanup: () => fixtures.close(),
    }
  },
}

/** Prepares a server for its run: its hook, or the default. */
export async function prepare(slug, context) {
  const hook = hooks[slug]
  if (hook) return hook(context)
  return { pickCall: defaultCall }
}
