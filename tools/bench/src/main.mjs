// pnpm bench [core|fs|postgres|github|slack|browser|http …]: side-by-side benchmarks. Figures are
// ratios against baselines measured in the same run (this machine is shared and noisy); absolute
// times are printed for context. Every suite's output is Markdown; the whole run is also written to
// tools/bench/results/<date>.md with the date and the machine (BENCH_RESULTS=0 turns that off).
//
// A suite is a module exporting `run()`. A server suite starts with the common per-server figures
// (harness.mjs: compareServers) and adds its domain figures.
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { fileURLToPath } from 'node:url'
import { format } from 'node:util'
import { summary } from './harness.mjs'
import { table } from './rpc.mjs'

const suites = {
  core: () => import('./core-bench.mjs'),
  fs: () => import('./fs-bench.mjs'),
  postgres: () => import('./postgres-bench.mjs'),
  github: () => import('./github-bench.mjs'),
  slack: () => import('./slack-bench.mjs'),
  browser: () => import('./browser-bench.mjs'),
  http: () => import('./http-bench.mjs'),
}

const selected = process.argv.slice(2).filter((name) => name !== '--')
for (const name of selected) {
  if (!(name in suites)) {
    console.error(`unknown suite "${name}"; choose from: ${Object.keys(suites).join(', ')}`)
    process.exit(2)
  }
}
const which = selected.length ? selected : Object.keys(suites)

// Everything printed also goes into the results file.
const output = []
const print = console.log
console.log = (...args) => {
  const text = format(...args)
  output.push(text)
  print(text)
}

const started = new Date()
const machine = `${cpus()[0]?.model ?? 'unknown CPU'} × ${cpus().length}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Linux, Node ${process.version}`
console.log(`# Keel benchmarks, ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC\n`)
console.log(`Machine: ${machine}; load average at start ${loadavg()[0].toFixed(2)}.`)
console.log(`Suites: ${which.join(', ')}.\n`)

const failures = []
for (const name of which) {
  let suite
  try {
    suite = await suites[name]()
  } catch (error) {
    if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes(`${name}-bench.mjs`)) {
      console.log(`\n## ${name}\n\n(not present in this checkout)`)
      continue
    }
    throw error
  }
  console.log(`\n## ${name}\n`)
  const suiteStarted = performance.now()
  try {
    await suite.run()
  } catch (error) {
    failures.push(name)
    console.log(`\n**${name} failed:** ${String(error?.stack ?? error).slice(0, 2000)}`)
  }
  console.log(`\n_${name}: ${((performance.now() - suiteStarted) / 1000).toFixed(0)} s_`)
}

if (summary.length) {
  console.log('\n## Summary: every server against its reference, same run\n')
  const rows = []
  for (const comparison of summary) {
    for (const row of comparison.rows) {
      const reference = comparison.rows.find((candidate) => candidate.label === comparison.reference)
      const versus = (pick) =>
        row === reference || !pick(reference) ? '' : ` (${(pick(row) / pick(reference)).toFixed(2)}×)`
      rows.push([
        row.label,
        `\`${row.call}\``,
        `${row.listed.toFixed(0)} ms${versus((entry) => entry.listed)}`,
        `${row.tools} · ${Math.round(row.tokensPerTool)}`,
        `${row.p50.toFixed(3)} ms${versus((entry) => entry.p50)}`,
        `${row.p99.toFixed(2)} ms`,
        `${row.cpu.toFixed(3)} ms${versus((entry) => entry.cpu)}`,
        `${row.rate.toFixed(0)}${versus((entry) => entry.rate)}`,
        `${(100 * row.errorRate).toFixed(1)} %`,
        `${row.peakMiB.toFixed(0)} MiB`,
        `${row.exit === undefined ? 'hangs' : `${row.exit.toFixed(0)} ms`}${row.orphans ? `, left ${row.orphans} processes running` : ''}`,
      ])
    }
  }
  table(
    [
      'server',
      'warm call',
      'cold → tools/list',
      'tools · tokens a tool',
      'p50',
      'p99',
      'CPU a call',
      'calls/s, 8 in flight',
      'errors',
      'peak RSS',
      'exit after use',
    ],
    rows,
  )
  console.log('\nRatios are against the reference row just below or above (the SDK no-op for core).')
}

const took = ((Date.now() - started.getTime()) / 60_000).toFixed(1)
console.log(`\nTotal: ${took} min.${failures.length ? ` Failed: ${failures.join(', ')}.` : ''}`)

if (process.env.BENCH_RESULTS !== '0') {
  const directory = fileURLToPath(new URL('../results/', import.meta.url))
  mkdirSync(directory, { recursive: true })
  const suffix = selected.length ? `-${selected.join('-')}` : ''
  const file = `${directory}${started.toISOString().slice(0, 10)}${suffix}.md`
  writeFileSync(file, `${output.join('\n')}\n`)
  print(`\nwritten to ${file}`)
}
process.exitCode = failures.length ? 1 : 0
