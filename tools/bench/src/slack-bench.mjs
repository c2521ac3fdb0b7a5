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
import { compareServers } from './harness.mjs'
import { formatBytes, RawClient, ratio, table } from './rpc.mjs'

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
