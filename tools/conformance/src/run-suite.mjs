#!/usr/bin/env node
// Runs the official MCP conformance suite (@modelcontextprotocol/conformance) against a server
// started here over Streamable HTTP, and fails on any scenario that is not in the baseline.
//
//   node src/run-suite.mjs                      the whole active suite against the fixture server
//   node src/run-suite.mjs --protocol-only -- node servers/example/dist/index.js [args…]
//                                               the protocol scenarios against any server bin
//   node src/run-suite.mjs --stateless          the same against the server in --stateless mode
//   node src/run-suite.mjs --next               conformance 0.2.x (Node 22, via npx) against the
//                                               fixture, 2026-07-28 requirement set (opt-in: needs the registry)
//
// Builds nothing: run `pnpm build` first. The server gets `--transport http --port 0` appended
// and must log `… at http://127.0.0.1:PORT/mcp` on stderr (core's `run` does).
//
// A scenario fails when any of its checks is FAILURE or WARNING (the suite's own baseline
// semantics). The baseline (`--expected-failures`; for the fixture by default
// expected-failures[.stateless|.next].yml of this package) lists scenarios expected to fail, each
// with a `#` comment saying why;
// an entry that passes is stale and fails the run too, so the baseline only ever shrinks.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** The scenarios every Keel server must pass, whatever its tools. */
const PROTOCOL_SCENARIOS = [
  'server-initialize',
  'ping',
  'logging-set-level',
  'tools-list',
  'dns-rebinding-protection',
]

/** The 0.2.x line speaks the 2026-07-28 revision; it needs Node 22, so it runs through npx. */
const NEXT_VERSION = '0.2.0-alpha.12'
const NEXT_REQUIREMENTS = '2026-07-28'

const USAGE = `Usage: node run-suite.mjs [options] [-- <server command> [args…]]

Options:
  --protocol-only            only ${PROTOCOL_SCENARIOS.join(', ')}
  --scenario <name>          only this scenario (repeatable)
  --suite <active|all|pending>  suite to run (default active)
  --stateless                start the server with --stateless (default baseline expected-failures.stateless.yml)
  --expected-failures <file> baseline (default: expected-failures.yml for the fixture, none otherwise)
  --next                     conformance ${NEXT_VERSION} under Node 22 (npx), ${NEXT_REQUIREMENTS} requirements;
                             default baseline expected-failures.next.yml
  --verbose                  stream the conformance CLI's own output
  --keep                     keep the results directory
  --help

Without a server command, runs the fixture server (the bin of this package).`

function parseCommandLine(argv) {
  const separator = argv.indexOf('--')
  const own = separator === -1 ? argv : argv.slice(0, separator)
  const command = separator === -1 ? [] : argv.slice(separator + 1)
  const { values } = parseArgs({
    args: own,
    options: {
      'protocol-only': { type: 'boolean', default: false },
      scenario: { type: 'string', multiple: true, default: [] },
      suite: { type: 'string', default: 'active' },
      'expected-failures': { type: 'string' },
      next: { type: 'boolean', default: false },
      stateless: { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  })
  return { options: values, command }
}

/**
 * Reads a baseline in the suite's own format (`server: [scenario, …]`), requiring a `#` comment
 * on every entry: inline after it, or on the line(s) right above it.
 */
async function readBaseline(file) {
  const lines = (await readFile(file, 'utf8')).split('\n')
  const entries = new Map()
  const problems = []
  let section
  let pendingComment = ''
  lines.forEach((line, index) => {
    const trimmed = line.trim()
    if (trimmed === '' || trimmed === '---') {
      pendingComment = ''
      return
    }
    if (trimmed.startsWith('#')) {
      pendingComment = `${pendingComment} ${trimmed.replace(/^#+\s*/, '')}`.trim()
      return
    }
    const key = /^([A-Za-z]+):\s*(\[\s*\])?\s*(#.*)?$/.exec(trimmed)
    if (key && !line.startsWith(' ')) {
      section = key[1]
      pendingComment = ''
      return
    }
    const item = /^-\s+['"]?([^'"#\s]+)['"]?\s*(?:#\s*(.*))?$/.exec(trimmed)
    if (!item || section === undefined) {
      problems.push(`${file}:${index + 1}: cannot read "${trimmed}"`)
      return
    }
    const reason = (item[2] ?? '').trim() || pendingComment
    pendingComment = ''
    if (section !== 'server') return
    if (!reason) problems.push(`${file}:${index + 1}: entry "${item[1]}" has no comment saying why it fails`)
    entries.set(item[1], reason)
  })
  return { entries, problems }
}

/** The bin a package declares (its first one), as an absolute path. */
function binOf(dir) {
  const { bin } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  const file = typeof bin === 'string' ? bin : Object.values(bin ?? {})[0]
  if (!file) throw new Error(`${dir}/package.json declares no bin`)
  return join(dir, file)
}

function startServer(command) {
  const [executable, ...args] = command
  const child = spawn(executable, [...args, '--transport', 'http', '--port', '0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  const exited = new Promise((resolveExit) => {
    child.once('exit', (code, signal) => resolveExit({ code, signal }))
  })
  const url = new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not report its URL within 15 s')), 15_000)
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk) => {
      stderr += chunk
      // Core logs `serving MCP over Streamable HTTP at http://HOST:PORT/mcp`, pretty or as JSON.
      const match = /serving MCP over Streamable HTTP at (http:\/\/[^\s"']+?\/mcp)\b/.exec(stderr)
      if (match) {
        clearTimeout(timer)
        resolveUrl(match[1])
      }
    })
    child.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    void exited.then(({ code, signal }) => {
      clearTimeout(timer)
      reject(new Error(`the server exited before serving (code ${code}, signal ${signal})`))
    })
  })
  return {
    url,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return exited
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      const result = await exited
      clearTimeout(timer)
      return result
    },
  }
}

function conformanceCommand(next) {
  if (next) {
    return {
      executable: process.platform === 'win32' ? 'npx.cmd' : 'npx',
      prefix: [
        '-y',
        '-p',
        'node@22',
        '-p',
        `@modelcontextprotocol/conformance@${NEXT_VERSION}`,
        '--',
        'conformance',
      ],
    }
  }
  const require = createRequire(import.meta.url)
  const pkgPath = require.resolve('@modelcontextprotocol/conformance/package.json')
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8'))
  const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin.conformance
  return { executable: process.execPath, prefix: [join(dirname(pkgPath), bin)], version: pkg.version }
}

function runCli(cli, args, { verbose, timeoutMs }) {
  return new Promise((resolveRun) => {
    const child = spawn(cli.executable, [...cli.prefix, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    })
    let output = ''
    const collect = (chunk) => {
      output += chunk
      if (verbose) process.stdout.write(chunk)
    }
    child.stdout.setEncoding('utf8').on('data', collect)
    child.stderr.setEncoding('utf8').on('data', collect)
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('error', (error) => {
      clearTimeout(timer)
      resolveRun({ code: -1, signal: null, output: `${output}\n${error.message}` })
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      resolveRun({ code, signal, output })
    })
  })
}

/** Reads `<out>/server-<scenario>-<timestamp>/checks.json` into scenario → checks. */
async function readResults(outDir) {
  const results = new Map()
  for (const entry of await readdir(outDir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue
    const match = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry.name)
    const file = join(outDir, entry.name, 'checks.json')
    if (!match || !existsSync(file)) continue
    results.set(match[1], JSON.parse(await readFile(file, 'utf8')))
  }
  return results
}

/** Scenarios the 0.2.x CLI ran but does not score for the requested revision (extensions, pending). */
function unscoredScenarios(output) {
  const section = output.split(/Not scored for [^\n]*\n/)[1] ?? ''
  const names = new Set()
  for (const line of section.split('\n')) {
    const match = /^\s+[✓✗]\s+(\S+)\s+\(/.exec(line)
    if (match) names.add(match[1])
    else if (line.trim() && names.size) break
  }
  return names
}

function summarize(checks) {
  const count = (status) => checks.filter((check) => check.status === status).length
  return { passed: count('SUCCESS'), failed: count('FAILURE'), warnings: count('WARNING') }
}

async function main() {
  const { options, command } = parseCommandLine(process.argv.slice(2))
  if (options.help) {
    console.log(USAGE)
    return 0
  }
  if (options.next && options.stateless) {
    console.error('run-suite: --next already speaks the stateless 2026-07-28 revision; drop --stateless')
    return 2
  }
  const fixture = command.length === 0
  const serverCommand = [
    ...(fixture ? [process.execPath, binOf(packageDir)] : command),
    ...(options.stateless ? ['--stateless'] : []),
  ]
  if (fixture && !existsSync(serverCommand[1])) {
    console.error(`run-suite: ${serverCommand[1]} is missing; run \`pnpm build\` first`)
    return 2
  }
  const variant = options.next ? '.next' : options.stateless ? '.stateless' : ''
  const defaultBaseline = join(packageDir, `expected-failures${variant}.yml`)
  const baselineFile = options['expected-failures'] ?? (fixture ? defaultBaseline : undefined)
  const baseline = baselineFile ? await readBaseline(baselineFile) : { entries: new Map(), problems: [] }
  if (baseline.problems.length) {
    for (const problem of baseline.problems) console.error(`run-suite: ${problem}`)
    return 2
  }

  const scenarios = options['protocol-only'] ? PROTOCOL_SCENARIOS : options.scenario
  const cli = conformanceCommand(options.next)
  const label = options.next
    ? `conformance ${NEXT_VERSION} (${NEXT_REQUIREMENTS})`
    : `conformance ${cli.version}`
  const outDir = await mkdtemp(join(tmpdir(), 'keel-conformance-'))
  const server = startServer(serverCommand)
  const started = performance.now()
  const problems = []
  let results = new Map()
  const unscored = new Set()
  try {
    const url = await server.url
    console.log(`${label} against ${serverCommand.join(' ')} at ${url}`)
    const common = ['server', '--url', url, '-o', outDir]
    const runs = []
    if (scenarios.length) {
      // One CLI per scenario (it takes one --scenario), side by side: each opens its own session.
      const settled = await Promise.all(
        scenarios.map((scenario) =>
          runCli(cli, [...common, '--scenario', scenario], {
            verbose: options.verbose,
            timeoutMs: 90_000,
          }),
        ),
      )
      runs.push(...settled)
    } else {
      const selection = options.next ? ['--requirements', NEXT_REQUIREMENTS] : ['--suite', options.suite]
      runs.push(
        await runCli(cli, [...common, ...selection], { verbose: options.verbose, timeoutMs: 240_000 }),
      )
    }
    for (const run of runs) {
      if (run.code !== 0 && run.code !== 1) {
        problems.push(`the conformance CLI ended with code ${run.code} (signal ${run.signal})`)
        if (!options.verbose) console.log(run.output.split('\n').slice(-40).join('\n'))
      }
      for (const name of unscoredScenarios(run.output)) unscored.add(name)
    }
    results = await readResults(outDir)
    for (const scenario of scenarios) {
      if (!results.has(scenario)) problems.push(`no result for scenario ${scenario}`)
    }
    if (results.size === 0) problems.push('the conformance CLI produced no results')
  } catch (error) {
    problems.push(error instanceof Error ? error.message : String(error))
  } finally {
    const { code, signal } = await server.stop()
    // Core promises a clean exit on SIGTERM; a crash during the run shows up here too.
    if (code !== 0) problems.push(`the server ended with code ${code} (signal ${signal}), not a clean exit 0`)
  }

  const rows = []
  const unexpected = []
  const stale = []
  for (const [scenario, checks] of [...results].sort(([a], [b]) => a.localeCompare(b))) {
    const { passed, failed, warnings } = summarize(checks)
    const failing = failed > 0 || warnings > 0
    const expected = baseline.entries.has(scenario)
    let verdict = failing ? 'FAIL' : 'pass'
    if (unscored.has(scenario)) verdict = failing ? 'not scored (fail)' : 'not scored (pass)'
    else if (failing && expected) verdict = 'expected failure'
    else if (failing) unexpected.push(scenario)
    else if (expected) {
      verdict = 'pass (stale baseline entry)'
      stale.push(scenario)
    }
    rows.push({ scenario, passed, failed, warnings, verdict })
  }
  const width = Math.max(8, ...rows.map((row) => row.scenario.length))
  console.log(`\n${'scenario'.padEnd(width)}  pass  fail  warn  verdict`)
  for (const row of rows) {
    console.log(
      `${row.scenario.padEnd(width)}  ${String(row.passed).padStart(4)}  ${String(row.failed).padStart(4)}  ${String(row.warnings).padStart(4)}  ${row.verdict}`,
    )
  }
  for (const scenario of unexpected) {
    console.log(`\n✗ ${scenario}`)
    for (const check of results.get(scenario) ?? []) {
      if (check.status === 'FAILURE' || check.status === 'WARNING') {
        console.log(`  ${check.status} ${check.id}: ${check.errorMessage ?? check.description}`)
      }
    }
  }
  for (const scenario of stale) console.log(`\n✓ ${scenario} passes: remove it from ${baselineFile}`)
  for (const [scenario, reason] of baseline.entries) {
    if (results.has(scenario)) console.log(`~ ${scenario} (baseline: ${reason})`)
  }
  for (const problem of problems) console.log(`\n✗ ${problem}`)

  const ok = unexpected.length === 0 && stale.length === 0 && problems.length === 0
  if (!ok) {
    console.log(
      `\nserver stderr (last 30 lines):\n${server.stderr().trimEnd().split('\n').slice(-30).join('\n')}`,
    )
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1)
  console.log(
    `\n${ok ? 'PASS' : 'FAIL'}: ${rows.length} scenarios in ${seconds} s; ${unexpected.length} unexpected failure(s), ${stale.length} stale baseline entr${stale.length === 1 ? 'y' : 'ies'}, ${problems.length} other problem(s)`,
  )
  if (options.keep || !ok) console.log(`results: ${outDir}`)
  else await rm(outDir, { recursive: true, force: true })
  return ok ? 0 : 1
}

process.exitCode = await main().catch((error) => {
  console.error(`run-suite: ${error instanceof Error ? error.message : String(error)}`)
  return 2
})
