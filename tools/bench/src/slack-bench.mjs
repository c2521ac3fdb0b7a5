// @keel-mcp/server-slack against the reference @modelcontextprotocol/server-slack 2025.4.25, both
// against the same loopback fake of the Slack Web API (servers/slack/test/fake-slack.ts; the
// reference's fetch is redirected to it by slack-redirect.mjs, ours takes SLACK_API_URL).
//
//   pnpm --filter @keel-mcp/bench bench:slack        (build servers/slack first)
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { floorRow } from './floor.mjs'
import { afterPauseOverTls, callsPerSecond, compareServers } from './harness.mjs'
import { formatBytes, median, RawClient, ratio, table } from './rpc.mjs'

const repo = fileURLToPath(new URL('../../../', import.meta.url))
const OURS = join(repo, 'servers/slack/dist/index.js')
const REFERENCE = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-slack/package.json')),
  'dist/index.js',
)
const REDIRECT = fileURLToPath(new URL('./slack-redirect.mjs', import.meta.url))

/**
 * The fake is TypeScript (test helpers: fake-slack.ts and the files it imports); type-only syntax
 * is all they use, so transpiling each file is exact. They import each other as `./x.js`.
 */
async function loadFake() {
  const { default: ts } = await import(
    pathToFileURL(join(repo, 'node_modules/typescript/lib/typescript.js')).href
  )
  const directory = join(repo, 'tools/bench/node_modules/.cache/keel-bench/slack-fake')
  await mkdir(directory, { recursive: true })
  await writeFile(join(directory, 'package.json'), '{ "type": "module" }\n')
  for (const name of ['fake-slack', 'fake-workspace', 'fake-features']) {
    const source = await readFile(join(repo, `servers/slack/test/${name}.ts`), 'utf8')
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
      fileName: `${name}.ts`,
    })
    await writeFile(join(directory, `${name}.js`), outputText)
  }
  return import(pathToFileURL(join(directory, 'fake-slack.js')).href)
}

/**
 * Spawn → `initialize` → `tools/list` → the first `get_channel_history` by `#name`, against a
 * 10-user workspace and a 250,000-user / 50,000-channel one (generated lazily by the fake; the bot
 * is a member of the channel read, as it must be to read it): the server must answer both in the
 * same time, with no Web API call during start and the same directory pages for the name. Rounds
 * alternate between the two fakes.
 */
async function workspaceSizeRow(startFakeSlack, BOT_TOKEN) {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5) * 2
  const small = await startFakeSlack({ users: 10, channels: 5 })
  const large = await startFakeSlack({ users: 250_000, channels: 50_000, memberOf: ['C00049999'] })
  try {
    const workspaces = [
      {
        label: '10 users, 5 channels',
        fake: small,
        channel: '#general',
        initialized: [],
        listed: [],
        history: [],
        calls: 0,
        pages: 0,
      },
      {
        label: '250,000 users, 50,000 channels',
        fake: large,
        channel: '#channel-49999',
        initialized: [],
        listed: [],
        history: [],
        calls: 0,
        pages: 0,
      },
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
          workspace.calls += workspace.fake.calls.length - before
          const beforeHistory = workspace.fake.calls.length
          const answer = await client.callTool('get_channel_history', {
            channel: workspace.channel,
            limit: 10,
          })
          if (answer.message.result?.isError) throw new Error(`history by name failed on ${workspace.label}`)
          const history = performance.now() - started
          workspace.pages = workspace.fake.calls
            .slice(beforeHistory)
            .filter((call) =>
              ['users.list', 'conversations.list', 'users.conversations'].includes(call.method),
            ).length
          // Round -1 is the unmeasured first start (fills the code cache, as a user's first start does).
          if (round >= 0) {
            workspace.initialized.push(initialized)
            workspace.listed.push(listed)
            workspace.history.push(history)
          }
        } finally {
          await client.close()
        }
      }
    }
    const ms = (value) => `${value.toFixed(0)} ms`
    const spread = (values) => `${ms(median(values))} (${ms(Math.min(...values))}–${ms(Math.max(...values))})`
    const [base, big] = workspaces
    console.log(
      `\n#### slack: cold start against a small and a large workspace (${rounds} alternated rounds)\n`,
    )
    table(
      [
        'workspace',
        'spawn → initialize',
        'spawn → tools/list',
        'spawn → first history by #name',
        'Web API calls during start',
        'directory pages for the name',
      ],
      workspaces.map((workspace) => [
        workspace.label,
        `${spread(workspace.initialized)}${workspace === big ? ` (${ratio(median(big.initialized), median(base.initialized))})` : ''}`,
        `${spread(workspace.listed)}${workspace === big ? ` (${ratio(median(big.listed), median(base.listed))})` : ''}`,
        `${spread(workspace.history)}${workspace === big ? ` (${ratio(median(big.history), median(base.history))})` : ''}`,
        String(workspace.calls),
        String(workspace.pages),
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

/**
 * 8 calls in flight against a fake that answers every Web API request after 20 ms, as a real network
 * does. The server's own CPU hardly counts here: what does is that concurrent calls reach Slack
 * together (the client's request queue, retries and rate-limit handling must not serialise them).
 * Each round starts every contender afresh, warms it up and then runs them one after another.
 */
async function latencyRow(startFakeSlack, contenders) {
  const latencyMs = 20
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
  const total = Number(process.env.SLACK_BENCH_LATENCY_CALLS ?? 200)
  const inflight = 8
  const slow = await startFakeSlack({ latencyMs })
  const rates = contenders.map(() => [])
  try {
    for (let round = 0; round < rounds; round++) {
      const order = [...contenders.keys()]
      if (round % 2 === 1) order.reverse()
      for (const index of order) {
        const contender = contenders[index]
        const client = new RawClient(contender.command, contender.args, { env: contender.env(slow) })
        try {
          await client.initialize()
          for (let warm = 0; warm < 20; warm++)
            await client.callTool(contender.call.name, contender.call.arguments)
          rates[index].push(
            await callsPerSecond(
              client,
              contender.call,
              total,
              inflight,
              `${contender.label} against the slow fake`,
            ),
          )
        } finally {
          await client.close()
        }
      }
    }
  } finally {
    await slow.close()
  }
  const reference = rates.at(-1)
  console.log(
    `\n#### slack: ${inflight} in flight against a fake answering after ${latencyMs} ms (${total} calls, ${rounds} alternated rounds; at most ${((inflight * 1000) / latencyMs).toFixed(0)} calls/s)\n`,
  )
  table(
    ['server', 'calls/s, 8 in flight', '÷ reference'],
    contenders.map((contender, index) => [
      contender.label,
      `${median(rates[index]).toFixed(0)} (${Math.min(...rates[index]).toFixed(0)}–${Math.max(...rates[index]).toFixed(0)})`,
      index === contenders.length - 1 ? '1.00×' : ratio(median(rates[index]), median(reference)),
    ]),
  )
}

/**
 * A call after a pause longer than undici's 4 s keep-alive (the pace of a model that thinks between
 * calls) against one after 1 s, on the same process, 30 calls first. Against the fake over TLS (a
 * certificate made for the run, trusted through NODE_EXTRA_CA_CERTS), as Slack is reached, keeping
 * idle connections for 60 s: a call that finds no kept connection first connects and negotiates
 * TLS, which on a real network also costs round trips this loopback does not show. 3 processes
 * each, alternated.
 */
async function afterIdle(startFakeSlack, contenders) {
  const IDLE_MS = 12_000
  await afterPauseOverTls(
    `slack: a call after ${IDLE_MS / 1000} s idle against one after 1 s (get_channel_history against the fake over TLS; 30 calls first; median of 3 processes)`,
    (tls) => startFakeSlack({ tls, keepAliveMs: 60_000 }),
    (fake, trusted) =>
      contenders.map((contender) => ({
        label: contender.label,
        command: contender.command,
        args: contender.args,
        env: { ...contender.env(fake), ...trusted },
        call: contender.call,
      })),
    { idleMs: IDLE_MS },
  )
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
    const keelCall = { name: 'get_channel_history', arguments: { channel: 'C0GENERAL', limit: 10 } }
    // SLACK_BENCH_BEFORE=<a bin> adds an earlier build of Keel slack to the same run (before/after).
    // A relative path is taken from where `pnpm bench` was typed (pnpm runs the suite in tools/bench).
    const before = process.env.SLACK_BENCH_BEFORE
      ? resolve(process.env.INIT_CWD ?? process.cwd(), process.env.SLACK_BENCH_BEFORE)
      : undefined
    const others = [
      { label: 'keel slack', ...ours, call: keelCall },
      ...(before ? [{ label: 'keel slack (before)', ...ours, args: [before], call: keelCall }] : []),
    ]
    const figures = await compareServers('slack', [
      ...others,
      {
        label: 'reference slack',
        ...reference,
        call: { name: 'slack_get_channel_history', arguments: history },
        reference: true,
      },
    ])
    const [oursFigures] = figures
    const referenceFigures = figures.at(-1)
    console.log(
      `\nget_channel_history (10 messages): CPU ${ratio(oursFigures.cpu, referenceFigures.cpu)}, p50 ${ratio(oursFigures.p50, referenceFigures.p50)} of the reference; ${fake.calls.length.toLocaleString('en')} Web API calls served by the fake.`,
    )
    await floorRow('slack', ours, reference)
    const againstFake = [
      ...others.map((other) => ({
        label: other.label,
        command: other.command,
        args: other.args,
        env: (slow) => ({ ...other.env, SLACK_API_URL: slow.url }),
        call: other.call,
      })),
      {
        label: 'reference slack',
        command: reference.command,
        args: reference.args,
        env: (slow) => ({ ...reference.env, SLACK_BENCH_API: slow.url.replace(/\/api\/$/, '') }),
        call: { name: 'slack_get_channel_history', arguments: history },
      },
    ]
    await latencyRow(startFakeSlack, againstFake)
    if (process.env.BENCH_SLACK_IDLE !== '0') await afterIdle(startFakeSlack, againstFake)
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
