// @keel-mcp/server-slack against the reference @modelcontextprotocol/server-slack 2025.4.25, both
// against the same loopback fake of the Slack Web API (servers/slack/test/fake-slack.ts; the
// reference's fetch is redirected to it by slack-redirect.mjs, ours takes SLACK_API_URL).
//
//   pnpm --filter @keel-mcp/bench bench:slack        (build servers/slack first)
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { floorRow } from './floor.mjs'
import { compareServers } from './harness.mjs'
import { formatBytes, median, RawClient, ratio, table } from './rpc.mjs'

const repo = fileURLToPath(new URL('../../../', import.meta.url))
const OURS = join(repo, 'servers/slack/dist/index.js')
const REFERENCE = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-slack/package.json')),
  'dist/index.js',
)
const REDIRECT = fileURLToPath(new URL('./slack-redirect.mjs', import.meta.url))

/** The fake is TypeScript (a test helper); type-only syntax is all it uses, so transpiling is exact. */
async function loadFake() {
  const { default: ts } = await import(
    pathToFileURL(join(repo, 'node_modules/typescript/lib/typescript.js')).href
  )
  const source = await readFile(join(repo, 'servers/slack/test/fake-slack.ts'), 'utf8')
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      verbatimModuleSyntax: true,
    },
    fileName: 'fake-slack.ts',
  })
  const directory = join(repo, 'tools/bench/node_modules/.cache/keel-bench')
  await mkdir(directory, { recursive: true })
  const file = join(directory, 'fake-slack.mjs')
  await writeFile(file, outputText)
  return import(pathToFileURL(file).href)
}

/**
 * `initialize` (and `tools/list`) against a small workspace and a 50,000-user / 10,000-channel one:
 * the server must answer both in the same time, without a single Web API call (the name directory
 * fills only as calls need it). Rounds alternate between the two fakes.
 */
async function workspaceSizeRow(startFakeSlack, BOT_TOKEN) {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5) * 2
  const small = await startFakeSlack()
  const large = await startFakeSlack({ users: 50_000, channels: 10_000 })
  try {
    const workspaces = [
      { label: 'small (31 users, 5 channels)', fake: small, initialized: [], listed: [], calls: 0 },
      { label: '50,000 users, 10,000 channels', fake: large, initialized: [], listed: [], calls: 0 },
    ]
    for (let round = -1; round < rounds; round++) {
      for (const workspace of workspaces) {
        const before = workspace.fake.calls.length
        const started = performance.now()
        const client = new RawClient(process.execPath, [OURS], {
          env: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_API_URL: workspace.fake.url, LOG_LEVEL: 'warn' },
        })
        try {
          await client.initialize()
          const initialized = performance.now() - started
          await client.request('tools/list')
          const listed = performance.now() - started
          // Round -1 is the unmeasured first start (fills the code cache, as a user's first start does).
          if (round >= 0) {
            workspace.initialized.push(initialized)
            workspace.listed.push(listed)
          }
        } finally {
          await client.close()
        }
        workspace.calls += workspace.fake.calls.length - before
      }
    }
    const ms = (value) => `${value.toFixed(0)} ms`
    const spread = (values) => `${ms(median(values))} (${ms(Math.min(...values))}–${ms(Math.max(...values))})`
    const [base, big] = workspaces
    console.log(
      `\n#### slack: cold start against a small and a large workspace (${rounds} alternated rounds)\n`,
    )
    table(
      ['workspace', 'spawn → initialize', 'spawn → tools/list', 'Web API calls during start'],
      workspaces.map((workspace) => [
        workspace.label,
        `${spread(workspace.initialized)}${workspace === big ? ` (${ratio(median(big.initialized), median(base.initialized))})` : ''}`,
        `${spread(workspace.listed)}${workspace === big ? ` (${ratio(median(big.listed), median(base.listed))})` : ''}`,
        String(workspace.calls),
      ]),
    )
    if (big.calls !== 0 || base.calls !== 0) {
      throw new Error(`starting the server called the Web API (${base.calls} small, ${big.calls} large)`)
    }
  } finally {
    await small.close()
    await large.close()
  }
}

export async function run() {
  if (!existsSync(OURS)) throw new Error(`${OURS} is missing: run pnpm --filter @keel-mcp/server-slack build`)
  const { startFakeSlack, BOT_TOKEN } = await loadFake()
  const fake = await startFakeSlack()
  try {
    const ours = {
      command: process.execPath,
      args: [OURS],
      env: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_API_URL: fake.url, LOG_LEVEL: 'warn' },
    }
    const reference = {
      command: process.execPath,
      args: ['--import', REDIRECT, REFERENCE],
      env: {
        SLACK_BOT_TOKEN: BOT_TOKEN,
        SLACK_TEAM_ID: 'T0FAKE',
        SLACK_BENCH_API: fake.url.replace(/\/api\/$/, ''),
      },
    }
    const history = { channel_id: 'C0GENERAL', limit: 10 }
    const [oursFigures, referenceFigures] = await compareServers('slack', [
      {
        label: 'keel slack',
        ...ours,
        call: { name: 'get_channel_history', arguments: { channel: 'C0GENERAL', limit: 10 } },
      },
      {
        label: 'reference slack',
        ...reference,
        call: { name: 'slack_get_channel_history', arguments: history },
        reference: true,
      },
    ])
    console.log(
      `\nget_channel_history (10 messages): CPU ${ratio(oursFigures.cpu, referenceFigures.cpu)}, p50 ${ratio(oursFigures.p50, referenceFigures.p50)} of the reference; ${fake.calls.length.toLocaleString('en')} Web API calls served by the fake.`,
    )
    await floorRow('slack', ours, reference)
    await workspaceSizeRow(startFakeSlack, BOT_TOKEN)
    if (process.env.BENCH_DOMAIN === '0') return

    // What the model reads for the same ten messages.
    const sizes = []
    for (const [name, spec, call, args] of [
      ['keel', ours, 'get_channel_history', { channel: 'C0GENERAL', limit: 10 }],
      ['reference 2025.4.25', reference, 'slack_get_channel_history', history],
    ]) {
      const client = new RawClient(spec.command, spec.args, { env: spec.env })
      await client.initialize()
      const { bytes } = await client.callTool(call, args)
      sizes.push([name, formatBytes(bytes)])
      await client.close()
    }
    console.log('\n#### slack: answer size, 10 messages of history\n')
    table(['', 'answer'], sizes)
  } finally {
    await fake.close()
    fake.calls.length = 0
  }
}
