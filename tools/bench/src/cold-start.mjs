// Alternated cold starts (spawn → `initialize` answered → `tools/list` answered) of the Slack bin,
// the SDK v2 floor and the Slack reference, plus any earlier builds given, in one run: a quicker
// before/after than `pnpm bench slack` when only the start changed.
//
//   node tools/bench/src/cold-start.mjs [label=path/to/dist/index.js …]
//
// Each extra argument adds a contender spawned like the Slack bin (same environment), e.g. an earlier
// build copied to servers/slack/.dist-before/ (a copy must stay inside the package, where its lazy
// dependencies resolve). Nothing calls the Web API during a start, so no fake runs; the URL given
// points nowhere. Besides the wall time it reports each server's CPU time (every thread) from spawn
// to the tools/list answer, which a loaded machine disturbs less than the wall time, and the time
// from spawn to the answer of a call made right after the listing (the server itself answers it).
// BENCH_COLD_ROUNDS (default 21) sets the rounds.
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { floorBin } from './floor.mjs'
import { median, RawClient, ratio, table } from './rpc.mjs'

const repo = fileURLToPath(new URL('../../../', import.meta.url))
const REFERENCE = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-slack/package.json')),
  'dist/index.js',
)
const REDIRECT = fileURLToPath(new URL('./slack-redirect.mjs', import.meta.url))
const env = {
  SLACK_BOT_TOKEN: 'xoxb-0-0-cold-start',
  SLACK_API_URL: 'http://127.0.0.1:9/api/',
  LOG_LEVEL: 'warn',
}
const keel = (label, bin, extra = {}) => ({
  label,
  command: process.execPath,
  args: [resolve(bin)],
  env: { ...env, ...extra },
})
const contenders = [
  keel('keel slack', join(repo, 'servers/slack/dist/index.js')),
  // The same bin with its handshake never answered from a record (core's replay.ts).
  keel('keel slack, no replay', join(repo, 'servers/slack/dist/index.js'), { KEEL_HANDSHAKE_REPLAY: '0' }),
  ...process.argv.slice(2).map((argument) => {
    const [label, bin] = argument.split('=')
    return keel(label, bin)
  }),
  { label: 'SDK v2 floor', command: process.execPath, args: [floorBin()] },
  {
    label: 'reference slack',
    command: process.execPath,
    args: ['--import', REDIRECT, REFERENCE],
    env: {
      SLACK_BOT_TOKEN: env.SLACK_BOT_TOKEN,
      SLACK_TEAM_ID: 'T0FAKE',
      SLACK_BENCH_API: 'http://127.0.0.1:9',
    },
  },
]
/** Wall time spawn → tools/list answered, and the server's CPU (every thread) by then, per contender. */
async function starts(runs) {
  const wall = contenders.map(() => [])
  const cpu = contenders.map(() => [])
  const call = contenders.map(() => [])
  for (let run = 0; run < runs; run++) {
    for (const [index, { command, args, env: extra }] of contenders.entries()) {
      const started = performance.now()
      const client = new RawClient(command, args, { env: extra })
      await client.initialize()
      await client.request('tools/list')
      wall[index].push(performance.now() - started)
      cpu[index].push(client.cpuMs())
      // Then a call, which only the server itself answers (an unknown tool: an error from each):
      // when a client could use a tool it listed, whoever answered the listing.
      await client.request('tools/call', { name: 'no_such_tool', arguments: {} }).catch(() => {})
      call[index].push(performance.now() - started)
      await client.close()
    }
  }
  return { wall: wall.map(median), cpu: cpu.map(median), call: call.map(median) }
}
const rounds = Number(process.env.BENCH_COLD_ROUNDS ?? 21)
await starts(1) // unmeasured: fills each bin's V8 code cache and the disk cache
const { wall: medians, cpu, call } = await starts(rounds)
const reference = medians.at(-1)
const floor = medians.at(-2)
const { loadavg } = await import('node:os')
console.log(
  `\ncold start → tools/list, ${rounds} alternated rounds, medians; load average ${loadavg()
    .map((value) => value.toFixed(1))
    .join(' ')}\n`,
)
table(
  [
    'server',
    'spawn → tools/list',
    '÷ reference',
    '÷ floor',
    'server CPU by then',
    '÷ reference',
    'spawn → a call answered',
    '÷ reference',
  ],
  contenders.map((contender, index) => [
    contender.label,
    `${medians[index].toFixed(1)} ms`,
    ratio(medians[index], reference),
    ratio(medians[index], floor),
    `${cpu[index].toFixed(1)} ms`,
    ratio(cpu[index], cpu.at(-1)),
    `${call[index].toFixed(1)} ms`,
    ratio(call[index], call.at(-1)),
  ]),
)
