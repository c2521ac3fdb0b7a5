/**
 * The servers under test: one entry each. An entry says how to start the built bin (command line
 * and env, with recognisable fake credentials), what the server needs around it (a loopback fake,
 * a throwaway PostgreSQL), a cheap call, a list of mixed calls that must all succeed, and calls
 * that take its error paths. Adding a server to every suite is adding one entry here.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { FakeGitHub } from '../../../servers/github/test/fake-github.js'
import { issue, user } from '../../../servers/github/test/fixtures.js'
import {
  type PostgresInstance,
  postgresUrl,
  seedSampleSchema,
  startPostgres,
} from '../../../servers/postgres/test/harness/index.js'
import { adminQuery } from '../../../servers/postgres/test/harness/wait.js'
import {
  BOT_TOKEN,
  type FakeSlack,
  startFakeSlack,
  USER_TOKEN,
} from '../../../servers/slack/test/fake-slack.js'
import { BASIC_PASSWORD, BROWSER_COOKIE, BROWSER_PASSWORD, startBrowserPages } from './browser-pages.js'
import type { ToolCall } from './fuzz.js'
import type { Command } from './wire.js'

const bin = (slug: string) =>
  fileURLToPath(new URL(`../../../servers/${slug}/dist/index.js`, import.meta.url))

/** The bearer every HTTP server is started with (`MCP_AUTH_TOKEN`): a secret like any other. */
export const HTTP_BEARER = 'keelfake-bearer-7Hq2ZpX9sW4vN1cR8tY3'

/** Environment variables of the machine that must never reach a bin under test. */
const CLEAN_ENV = {
  GITHUB_TOKEN: '',
  GITHUB_PERSONAL_ACCESS_TOKEN: '',
  GITHUB_API_URL: '',
  SLACK_BOT_TOKEN: '',
  SLACK_USER_TOKEN: '',
  SLACK_API_URL: '',
  DATABASE_URL: '',
  MCP_AUTH_TOKEN: '',
  LOG_LEVEL: '',
  PUPPETEER_EXECUTABLE_PATH: '',
  BROWSER_ALLOWED_ORIGINS: '',
  BROWSER_ALLOW_PRIVATE_NETWORK: '',
  BROWSER_USER_DATA_DIR: '',
}

/** A server ready to be spawned, with what it needs already running. */
export interface PreparedServer {
  /** The bin, its arguments and environment (the fake credentials included). */
  command: Command
  /** A cheap call: valid, fast, always succeeds. */
  cheapCall: ToolCall
  /** Calls a real client would mix; every one must succeed (no `isError`). */
  mixedCalls: ToolCall[]
  /** Calls that must take an error path (a tool error or a JSON-RPC error), never leaking a secret. */
  errorCalls: ToolCall[]
  /** Every credential given to the server (as given: the suites derive encoded forms). */
  secrets: string[]
  /**
   * A call still running after several seconds (with `env` added to the command: e.g. an API URL
   * that never answers), for the timeout and vanishing-client paths. `warmUp`, when given, is
   * called first (e.g. to have the browser running when the slow call starts).
   */
  slow: { call: ToolCall; env?: Record<string, string>; warmUp?: ToolCall }
  /** The same server with a credential its backend refuses (the "bad auth" path). */
  badAuth?: Command
  /** Concurrent sessions in the soak (default 4). */
  soakSessions?: number
  /**
   * The soak's mix when it must differ from `mixedCalls`: a call the server deliberately spaces
   * out (GitHub's searches, 2 s apart per token, as GitHub asks) would hold every session to that
   * pace, and the soak would never reach the thousands of calls its growth check needs.
   */
  soakCalls?: ToolCall[]
  /**
   * Calls each soak session makes before the window may start, when the server's RSS needs more
   * than the soak's default (750) to level off.
   */
  soakWarmUpCalls?: number
  /** Stops what `prepare` started. */
  stop(): Promise<void>
}

export interface ServerEntry {
  name: string
  prepare(): Promise<PreparedServer>
}

/** A loopback server that accepts connections and never answers: the slowest backend there is. */
export async function blackHole(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(() => undefined)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

async function tempDirectory(prefix: string) {
  return mkdtemp(join(tmpdir(), prefix))
}

const fsEntry: ServerEntry = {
  name: 'fs',
  async prepare() {
    const root = await tempDirectory('keel-hardening-fs-')
    await writeFile(join(root, 'notes.md'), '# Notes\n\nremember the milk\n')
    await writeFile(join(root, 'data.txt'), 'alpha\nbeta\ngamma\n'.repeat(50))
    return {
      command: { command: process.execPath, args: [bin('fs'), root], env: { ...CLEAN_ENV } },
      cheapCall: { name: 'read_text_file', arguments: { path: 'notes.md' } },
      mixedCalls: [
        { name: 'read_text_file', arguments: { path: 'notes.md' } },
        { name: 'list_directory', arguments: { path: '.' } },
        { name: 'get_file_info', arguments: { path: 'data.txt' } },
        { name: 'search_content', arguments: { path: '.', pattern: 'gamma' } },
        { name: 'search_files', arguments: { path: '.', pattern: '*.md' } },
        { name: 'read_text_file', arguments: { path: 'data.txt', head: 5 } },
        { name: 'list_allowed_directories', arguments: {} },
      ],
      errorCalls: [
        { name: 'read_text_file', arguments: { path: '/etc/passwd' } },
        { name: 'read_text_file', arguments: { path: '../outside.txt' } },
        { name: 'read_text_file', arguments: { path: 'missing.txt' } },
        { name: 'list_directory', arguments: { path: 'notes.md' } },
      ],
      // fs has no slow backend: its slowest ordinary call stands in.
      slow: { call: { name: 'search_content', arguments: { path: '.', pattern: 'gamma' } } },
      secrets: [],
      stop: () => rm(root, { recursive: true, force: true }),
    }
  },
}

const exampleEntry: ServerEntry = {
  name: 'example',
  async prepare() {
    return {
      command: { command: process.execPath, args: [bin('example')], env: { ...CLEAN_ENV } },
      cheapCall: { name: 'search_notes', arguments: { query: 'milk' } },
      // add_note is left out: the store is capped (1000 notes), so a long run would fill it.
      mixedCalls: [
        { name: 'search_notes', arguments: { query: 'milk' } },
        { name: 'count_slowly', arguments: { n: 3, interval_ms: 5 } },
        { name: 'search_notes', arguments: { query: 'soak' } },
      ],
      errorCalls: [{ name: 'add_note', arguments: { title: '', body: '' } }],
      // Its RSS levels off after about 8,000 calls, not the 3,000 of four sessions at 750. At the
      // full soak's pace (70 calls a second, the CPU shared with three busy processes): 103.5 MiB at
      // 2,455 calls, 106.9 at 4,555, 108.0 at 8,756, 108.4 from 12,000 to 16,000, live heap flat.
      // Windows that started at 3,000 and 5,000 calls read +14.6 % and +8.7 %.
      soakWarmUpCalls: 2_000,
      slow: { call: { name: 'count_slowly', arguments: { n: 1000, interval_ms: 100 } } },
      secrets: [],
      stop: async () => undefined,
    }
  },
}

/** The password the postgres server is given: characters that change under URL-encoding. */
export const POSTGRES_PASSWORD = 'keelfake-pg-Pw/9+kQ=x&z3'

/** A throwaway cluster of our own (restartable, for the faults suite), seeded small. */
export async function startCluster(): Promise<{ postgres: PostgresInstance; url: string; badUrl: string }> {
  const postgres = await startPostgres({ restartable: true })
  try {
    await seedSampleSchema(postgres.superuserUrl, {
      bulkRows: 2000,
      readerRole: postgres.roleName('keel_reader'),
    })
    const role = postgres.passwordRole
    if (!role) throw new Error('the password role is needed (own clusters only)')
    // The harness's password role authenticates with scram: give it our recognisable password.
    await adminQuery(
      postgres.superuserUrl,
      `ALTER ROLE ${role.user} PASSWORD '${POSTGRES_PASSWORD}'; GRANT pg_read_all_data TO ${role.user}`,
    )
    const parts = { user: role.user, host: postgres.host, port: postgres.port, database: postgres.database }
    return {
      postgres,
      url: postgresUrl({ ...parts, password: POSTGRES_PASSWORD }),
      badUrl: postgresUrl({ ...parts, password: `${POSTGRES_PASSWORD}-wrong` }),
    }
  } catch (error) {
    await postgres.stop()
    throw error
  }
}

const postgresEntry: ServerEntry = {
  name: 'postgres',
  async prepare() {
    const { postgres, url, badUrl } = await startCluster()
    const env = { ...CLEAN_ENV, DATABASE_URL: url }
    return {
      command: { command: process.execPath, args: [bin('postgres')], env },
      cheapCall: { name: 'query', arguments: { sql: 'SELECT 1 AS one' } },
      mixedCalls: [
        { name: 'query', arguments: { sql: 'SELECT 1 AS one' } },
        { name: 'list_schemas', arguments: {} },
        { name: 'list_tables', arguments: { schema: 'shop' } },
        { name: 'describe_table', arguments: { schema: 'shop', table: 'customers' } },
        { name: 'query', arguments: { sql: 'SELECT id, email FROM shop.customers ORDER BY id LIMIT 5' } },
        { name: 'explain_query', arguments: { sql: 'SELECT * FROM shop.orders WHERE id = 1' } },
      ],
      errorCalls: [
        { name: 'query', arguments: { sql: 'SELECT * FROM no_such_table' } },
        { name: 'query', arguments: { sql: 'SELECT 1; COMMIT; DROP TABLE shop.orders' } },
        { name: 'query', arguments: { sql: 'SELEC broken' } },
        { name: 'query', arguments: { sql: 'SELECT pg_sleep(30)' } },
        { name: 'describe_table', arguments: { schema: 'shop', table: 'nothing' } },
      ],
      slow: { call: { name: 'query', arguments: { sql: 'SELECT pg_sleep(20)' } } },
      secrets: [url, POSTGRES_PASSWORD],
      badAuth: { command: process.execPath, args: [bin('postgres')], env: { ...env, DATABASE_URL: badUrl } },
      stop: () => postgres.stop(),
    }
  },
}

/** The GitHub token the server is given (the fake accepts any). */
export const GITHUB_TOKEN = 'ghp_keelfakeSECRET0t0k3n0000000000000001'

/** Routes of the GitHub fake that the mixed calls use. */
export function githubRoutes(fake: FakeGitHub): void {
  fake.on('GET', '/user', { body: user('keel-bot') })
  fake.on('GET', '/repos/octo/demo/issues/7', { body: issue(7, { body: 'Steps to reproduce' }) })
  fake.on('GET', '/repos/octo/demo/issues/7/comments', { body: [] })
  fake.on('GET', '/search/issues', { body: { total_count: 1, incomplete_results: false, items: [issue(7)] } })
  const text = 'hello from the fake\n'
  fake.on('GET', '/repos/octo/demo/contents/README.md', {
    body: {
      type: 'file',
      path: 'README.md',
      size: text.length,
      sha: 'f'.repeat(40),
      encoding: 'base64',
      content: Buffer.from(text).toString('base64'),
    },
  })
  fake.on('GET', '/repos/octo/denied/issues/1', {
    status: 401,
    body: { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' },
  })
}

const githubEntry: ServerEntry = {
  name: 'github',
  async prepare() {
    const fake = await FakeGitHub.start()
    githubRoutes(fake)
    const hole = await blackHole()
    const env = { ...CLEAN_ENV, GITHUB_TOKEN, GITHUB_API_URL: fake.url }
    return {
      command: { command: process.execPath, args: [bin('github')], env },
      cheapCall: { name: 'get_me', arguments: {} },
      mixedCalls: [
        { name: 'get_me', arguments: {} },
        { name: 'get_issue', arguments: { repo: 'octo/demo', issue_number: 7 } },
        { name: 'search_issues', arguments: { query: 'bug repo:octo/demo' } },
        { name: 'get_file_contents', arguments: { repo: 'octo/demo', path: 'README.md' } },
      ],
      // The mix without the search, which the server spaces 2 s apart (see soakCalls).
      soakCalls: [
        { name: 'get_me', arguments: {} },
        { name: 'get_issue', arguments: { repo: 'octo/demo', issue_number: 7 } },
        { name: 'get_file_contents', arguments: { repo: 'octo/demo', path: 'README.md' } },
      ],
      errorCalls: [
        { name: 'get_issue', arguments: { repo: 'octo/denied', issue_number: 1 } },
        { name: 'get_issue', arguments: { repo: 'octo/demo', issue_number: 404 } },
        { name: 'get_issue', arguments: { repo: 'not a repo', issue_number: 1 } },
      ],
      slow: { call: { name: 'get_me', arguments: {} }, env: { GITHUB_API_URL: hole.url } },
      secrets: [GITHUB_TOKEN],
      stop: async () => {
        await hole.close()
        await fake.close()
      },
    }
  },
}

/** A Slack token the fake refuses (`invalid_auth`), recognisable like the real ones. */
export const SLACK_BAD_TOKEN = 'xoxb-keelfake-refused-0123456789-SECRETabc'

export function slackEnv(fake: FakeSlack): Record<string, string> {
  return { ...CLEAN_ENV, SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_USER_TOKEN: USER_TOKEN, SLACK_API_URL: fake.url }
}

const slackEntry: ServerEntry = {
  name: 'slack',
  async prepare() {
    const fake = await startFakeSlack()
    const hole = await blackHole()
    const env = slackEnv(fake)
    return {
      command: { command: process.execPath, args: [bin('slack')], env },
      cheapCall: { name: 'get_channel_info', arguments: { channel: 'C0GENERAL' } },
      mixedCalls: [
        { name: 'get_channel_info', arguments: { channel: 'C0GENERAL' } },
        { name: 'list_channels', arguments: {} },
        { name: 'get_channel_history', arguments: { channel: '#general', limit: 5 } },
        { name: 'search_messages', arguments: { query: 'thread' } },
        { name: 'get_user_profile', arguments: { user: 'U00000002' } },
      ],
      errorCalls: [
        { name: 'get_channel_info', arguments: { channel: 'C0NOTHERE' } },
        { name: 'get_channel_history', arguments: { channel: '#nothing-here' } },
        { name: 'get_user_profile', arguments: { user: 'U99999999' } },
      ],
      slow: {
        call: { name: 'get_channel_info', arguments: { channel: 'C0GENERAL' } },
        env: { SLACK_API_URL: hole.url },
      },
      secrets: [BOT_TOKEN, USER_TOKEN, SLACK_BAD_TOKEN],
      badAuth: {
        command: process.execPath,
        args: [bin('slack')],
        env: { ...env, SLACK_BOT_TOKEN: SLACK_BAD_TOKEN, SLACK_USER_TOKEN: SLACK_BAD_TOKEN },
      },
      stop: async () => {
        await hole.close()
        await fake.close()
      },
    }
  },
}

/** The Chromium the browser server drives. */
export const CHROMIUM = process.env.PUPPETEER_EXECUTABLE_PATH || '/usr/bin/chromium'

/** The browser server's command line against `origin` (its only reachable origin, loopback). */
export function browserCommand(origin: string, extra: string[] = []): Command {
  return {
    command: process.execPath,
    args: [
      bin('browser'),
      '--executable-path',
      CHROMIUM,
      '--allowed-origins',
      origin,
      '--timeout-navigation',
      '3000',
      ...extra,
    ],
    env: { ...CLEAN_ENV },
  }
}

const browserEntry: ServerEntry = {
  name: 'browser',
  async prepare() {
    const pages = await startBrowserPages()
    const at = (path: string) => `${pages.url}${path}`
    return {
      command: browserCommand(pages.url),
      // Needs no page: the session's tab list (the browser starts on the first call that needs it).
      cheapCall: { name: 'list_tabs', arguments: {} },
      mixedCalls: [
        { name: 'navigate', arguments: { url: at('/counter') } },
        { name: 'snapshot', arguments: {} },
        { name: 'press_key', arguments: { key: 'Tab' } },
        { name: 'take_screenshot', arguments: {} },
        { name: 'navigate', arguments: { url: at('/console') } },
        { name: 'console_messages', arguments: {} },
        { name: 'list_tabs', arguments: {} },
        { name: 'network_requests', arguments: {} },
      ],
      errorCalls: [
        { name: 'navigate', arguments: { url: 'file:///etc/passwd' } },
        { name: 'navigate', arguments: { url: 'http://169.254.169.254/latest/meta-data/' } },
        { name: 'navigate', arguments: { url: 'not a url' } },
        { name: 'click', arguments: { ref: 'e99999999' } },
        { name: 'snapshot', arguments: { tab: 'no-such-tab' } },
        { name: 'select_tab', arguments: { tab: 'no-such-tab' } },
      ],
      slow: {
        call: { name: 'navigate', arguments: { url: at('/slow') } },
        warmUp: { name: 'navigate', arguments: { url: at('/') } },
      },
      // The credentials of the pages: the secrets suite drives them (see test/secrets.test.ts).
      secrets: [BROWSER_COOKIE, BROWSER_PASSWORD, BASIC_PASSWORD],
      // One Chromium serves every session (a context each): fewer clients keep the 2-core budget.
      soakSessions: 2,
      stop: () => pages.close(),
    }
  },
}

/** Every server the suites cover. */
export const SERVERS: readonly ServerEntry[] = [
  fsEntry,
  exampleEntry,
  postgresEntry,
  githubEntry,
  slackEntry,
  browserEntry,
]
