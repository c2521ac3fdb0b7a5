// @keel-mcp/server-fs against find, grep, rg and the reference filesystem server
// (@modelcontextprotocol/server-filesystem), on a generated tree of ≈100k files / 10k directories
// with a node_modules-like folder and a .gitignore. Everything is measured in the same run,
// interleaved, as medians; the figures that matter are the ratios.
//
//   pnpm --filter @keel-mcp/bench bench:fs            (build servers/fs first)
//   FS_BENCH_RUNS=7 FS_BENCH_SCALE=0.2 node src/fs-bench.mjs
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { compareServers } from './harness.mjs'
import { coldStart, formatBytes, median, RawClient, ratio, table } from './rpc.mjs'

const OURS = fileURLToPath(new URL('../../../servers/fs/dist/index.js', import.meta.url))
/** The template server: core and the SDK with no fs code, the floor of any Keel server's start-up. */
const EXAMPLE = fileURLToPath(new URL('../../../servers/example/dist/index.js', import.meta.url))
const REFERENCE = fileURLToPath(
  new URL('../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url),
)
const RESPONSE_LIMIT = 256 * 1024
const NEEDLE = 'NEEDLE_7f3a'

/**
 * The tree: packages/p<N>/src/m<M>/s<S>/ with 10 source files each (a few tests, a rare needle), a
 * node_modules/ with 200 packages, dist/ and *.log files, all ignored by the root .gitignore.
 */
export function generateTree(root, scale = 1) {
  const packages = Math.max(1, Math.round(80 * scale))
  const modules = Math.max(1, Math.round(200 * scale))
  let files = 0
  let directories = 1
  const dir = (path) => {
    mkdirSync(path, { recursive: true })
    directories++
  }
  const file = (path, content) => {
    writeFileSync(path, content)
    files++
  }
  file(join(root, '.gitignore'), 'node_modules/\ndist/\n*.log\ncoverage/\n')
  file(join(root, 'README.md'), '# Bench tree\n')
  let counter = 0
  for (let p = 0; p < packages; p++) {
    const pkg = join(root, 'packages', `p${p}`)
    dir(pkg)
    file(join(pkg, 'package.json'), `{ "name": "p${p}", "version": "1.0.0" }\n`)
    dir(join(pkg, 'dist'))
    file(join(pkg, 'dist', 'index.js'), `module.exports = ${p}\n`)
    file(join(pkg, 'build.log'), 'log\n')
    for (let m = 0; m < 10; m++) {
      dir(join(pkg, 'src', `m${m}`))
      for (let s = 0; s < 10; s++) {
        const leaf = join(pkg, 'src', `m${m}`, `s${s}`)
        dir(leaf)
        for (let f = 0; f < 10; f++) {
          counter++
          const name = f === 0 ? `unit${f}.test.ts` : `file${f}.ts`
          const lines = [`// module ${counter}`, `import { helper } from '../shared'`, '']
          for (let line = 0; line < 6 + (counter % 10); line++) {
            lines.push(
              `export function f${counter}_${line}(value: number): number {`,
              `  return helper(value) + ${line}`,
              '}',
            )
          }
          if (counter % 1999 === 0) lines.push(`// ${NEEDLE} marks this file`)
          file(join(leaf, name), `${lines.join('\n')}\n`)
        }
      }
    }
  }
  for (let m = 0; m < modules; m++) {
    const base = join(root, 'node_modules', `lib${m}`)
    dir(base)
    file(join(base, 'package.json'), `{ "name": "lib${m}" }\n`)
    for (const sub of ['dist', 'src', 'lib', 'types', 'esm']) {
      dir(join(base, sub))
      for (let f = 0; f < 20; f++)
        file(join(base, sub, `m${f}.js`), `module.exports = function m${f}() { return ${f} }\n`)
    }
  }
  return { files, directories }
}

/** Runs a command, draining its stdout; resolves with wall time and bytes written. */
function timeCommand(command, args) {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'] })
    let bytes = 0
    child.stdout.on('data', (chunk) => {
      bytes += chunk.length
    })
    child.on('error', reject)
    child.on('exit', () => resolve({ ms: performance.now() - started, bytes }))
  })
}

function has(command) {
  return spawnSync(command, ['--version'], { stdio: 'ignore' }).status === 0
}

/** Interleaved medians: `runs` rounds, each running every contender once. */
async function race(contenders, runs) {
  const samples = contenders.map(() => [])
  const last = contenders.map(() => undefined)
  for (let round = 0; round < runs; round++) {
    for (const [index, contender] of contenders.entries()) {
      const started = performance.now()
      last[index] = await contender.run()
      samples[index].push(last[index]?.ms ?? performance.now() - started)
    }
  }
  return contenders.map((contender, index) => ({
    name: contender.name,
    ms: median(samples[index]),
    last: last[index],
  }))
}

function toolTimer(client, name, args) {
  return async () => {
    const { message, bytes, ms } = await client.callTool(name, args, 300_000)
    if (message.error || message.result?.isError) {
      throw new Error(
        `${name} failed: ${JSON.stringify(message.error ?? message.result.content).slice(0, 300)}`,
      )
    }
    return { ms, bytes, message }
  }
}

/** The common per-server figures: keel fs and the reference on `read_text_file` of a 1 KiB file. */
async function perServer() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'keel-fs-small-')))
  try {
    const file = join(root, 'one-kib.txt')
    writeFileSync(file, `${'0123456789abcde\n'.repeat(64)}`)
    const call = { name: 'read_text_file', arguments: { path: file } }
    const [ours, reference] = await compareServers('fs', [
      { label: 'keel fs', command: process.execPath, args: [OURS, root], call },
      { label: 'reference fs', command: process.execPath, args: [REFERENCE, root], call, reference: true },
    ])
    console.log(
      `\nGoal: server CPU per call and p50 ≤ the reference on read_text_file of 1 KiB: CPU ${(ours.cpu / reference.cpu).toFixed(2)}×, p50 ${(ours.p50 / reference.p50).toFixed(2)}×.`,
    )
    // The catalogue goal (≤ 155 tokens a tool) holds with every toolset on too (copy_file, delete_file).
    const all = new RawClient(process.execPath, [OURS, root, '--toolsets', 'all'])
    try {
      await all.initialize()
      const { tools } = (await all.request('tools/list')).message.result
      const tokens = Buffer.byteLength(JSON.stringify(tools)) / 4
      console.log(
        `\nCatalogue with --toolsets all: ${tools.length} tools ≈ ${Math.round(tokens).toLocaleString('en')} tokens, ${(tokens / tools.length).toFixed(1)} a tool (goal ≤ 155).`,
      )
    } finally {
      await all.close()
    }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

const fmt = (ms) => `${ms.toFixed(ms < 10 ? 1 : 0)} ms`

export async function run() {
  for (const [bin, hint] of [
    [OURS, 'pnpm --filter @keel-mcp/server-fs build'],
    [REFERENCE, 'pnpm install'],
  ]) {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`${hint}\` first`)
  }
  await perServer()
  if (process.env.BENCH_DOMAIN === '0') return
  const runs = Number(process.env.FS_BENCH_RUNS ?? 7)
  const scale = Number(process.env.FS_BENCH_SCALE ?? 1)
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'keel-fs-bench-')))
  const ours = new RawClient(process.execPath, [OURS, root])
  let reference
  try {
    const started = performance.now()
    const { files, directories } = generateTree(root, scale)
    console.log(
      `tree: ${files} files, ${directories} directories in ${root} (${((performance.now() - started) / 1000).toFixed(1)} s to generate)`,
    )
    console.log(`runs: ${runs} interleaved, medians; node ${process.version}\n`)

    // ---- cold start and tools/list
    const withExample = existsSync(EXAMPLE)
    const [oursCold, referenceCold, bareNode, exampleCold] = await coldStart(
      [
        { command: process.execPath, args: [OURS, root] },
        { command: process.execPath, args: [REFERENCE, root] },
        { command: process.execPath, args: ['-e', BARE_SERVER] },
        ...(withExample ? [{ command: process.execPath, args: [EXAMPLE] }] : []),
      ],
      Math.max(runs, 11),
    )
    await ours.initialize()
    reference = new RawClient(process.execPath, [REFERENCE, root])
    await reference.initialize()
    const oursList = await ours.request('tools/list')
    const referenceList = await reference.request('tools/list')
    console.log('## Start-up and tool list\n')
    table(
      ['measure', 'keel fs', 'reference', 'ratio', 'target'],
      [
        [
          'cold start → tools/list',
          fmt(oursCold),
          fmt(referenceCold),
          ratio(oursCold, referenceCold),
          '≤ 0.5×',
        ],
        ['  bare node answering tools/list', fmt(bareNode), '', '', ''],
        ...(withExample
          ? [['  keel example server (core + SDK, no fs code)', fmt(exampleCold), '', '', '']]
          : []),
        [
          '  above bare node',
          fmt(oursCold - bareNode),
          fmt(referenceCold - bareNode),
          ratio(oursCold - bareNode, referenceCold - bareNode),
          '',
        ],
        [
          'tools/list size',
          `${formatBytes(oursList.bytes)} (${oursList.message.result.tools.length} tools)`,
          `${formatBytes(referenceList.bytes)} (${referenceList.message.result.tools.length} tools)`,
          ratio(oursList.bytes, referenceList.bytes),
          'small',
        ],
      ],
    )

    // ---- walks against find
    const prune = [
      '(',
      '-name',
      '.git',
      '-o',
      '-name',
      'node_modules',
      '-o',
      '-name',
      'dist',
      '-o',
      '-name',
      'coverage',
      ')',
      '-prune',
      '-o',
    ]
    const find =
      (...args) =>
      () =>
        timeCommand('find', [root, ...args])
    const walks = [
      {
        what: 'directory_tree (honours .gitignore)',
        ours: toolTimer(ours, 'directory_tree', { path: root }),
        baseline: ['find, same pruning', find(...prune, '!', '-name', '*.log', '-print')],
      },
      {
        what: 'directory_tree gitignore: false',
        ours: toolTimer(ours, 'directory_tree', { path: root, gitignore: false }),
        baseline: ['find, everything', find('-name', '.git', '-prune', '-o', '-print')],
      },
      {
        what: 'search_files *.test.ts',
        ours: toolTimer(ours, 'search_files', { path: root, pattern: '*.test.ts' }),
        baseline: ['find -name, same pruning', find(...prune, '-name', '*.test.ts', '-print')],
      },
      {
        what: 'search_files *.test.ts gitignore: false',
        ours: toolTimer(ours, 'search_files', { path: root, pattern: '*.test.ts', gitignore: false }),
        baseline: [
          'find -name, everything',
          find('-name', '.git', '-prune', '-o', '-name', '*.test.ts', '-print'),
        ],
      },
    ]
    const grepExcludes = [
      '--exclude-dir=.git',
      '--exclude-dir=node_modules',
      '--exclude-dir=dist',
      '--exclude-dir=coverage',
      '--exclude=*.log',
    ]
    const searches = [
      {
        what: `search_content "${NEEDLE}" (literal)`,
        ours: toolTimer(ours, 'search_content', { path: root, pattern: NEEDLE }),
        baselines: [
          ['grep -rnI, same excludes', () => timeCommand('grep', ['-rnI', ...grepExcludes, NEEDLE, root])],
          ...(has('rg')
            ? [
                [
                  'rg -n (honours .gitignore)',
                  () => timeCommand('rg', ['-n', '--no-require-git', NEEDLE, root]),
                ],
              ]
            : []),
        ],
      },
      {
        what: 'search_content "NEEDLE_[0-9a-f]{4}" (regex)',
        ours: toolTimer(ours, 'search_content', { path: root, pattern: 'NEEDLE_[0-9a-f]{4}', regex: true }),
        baselines: [
          [
            'grep -rnIE, same excludes',
            () => timeCommand('grep', ['-rnIE', ...grepExcludes, 'NEEDLE_[0-9a-f]{4}', root]),
          ],
          ...(has('rg')
            ? [
                [
                  'rg -n (honours .gitignore)',
                  () => timeCommand('rg', ['-n', '--no-require-git', 'NEEDLE_[0-9a-f]{4}', root]),
                ],
              ]
            : []),
        ],
      },
    ]
    console.log('\n## Walks and searches (keel fs over stdio, warm process)\n')
    const rows = []
    const verdicts = []
    for (const walk of walks) {
      const [mine, theirs] = await race(
        [
          { name: 'ours', run: walk.ours },
          { name: walk.baseline[0], run: walk.baseline[1] },
        ],
        runs,
      )
      rows.push([
        walk.what,
        fmt(mine.ms),
        `${walk.baseline[0]}: ${fmt(theirs.ms)}`,
        ratio(mine.ms, theirs.ms),
        '≤ 2×',
      ])
      verdicts.push([walk.what, mine.ms / theirs.ms <= 2])
    }
    for (const search of searches) {
      const results = await race(
        [{ name: 'ours', run: search.ours }, ...search.baselines.map(([name, run]) => ({ name, run }))],
        runs,
      )
      const [mine, ...others] = results
      const matches = mine.last.message.result.structuredContent.matches.length
      for (const [index, other] of others.entries()) {
        rows.push([
          index === 0 ? `${search.what}, ${matches} matches` : '',
          index === 0 ? fmt(mine.ms) : '',
          `${other.name}: ${fmt(other.ms)}`,
          ratio(mine.ms, other.ms),
          '≤ 3×',
        ])
        if (index === 0) verdicts.push([search.what, mine.ms / other.ms <= 3])
      }
    }
    table(['operation', 'keel fs', 'baseline', 'ratio', 'target'], rows)

    // ---- the reference server on the same calls (slow: once each, generous timeout)
    console.log('\n## The reference server on the same tree (one run each)\n')
    const referenceRows = []
    for (const [what, name, args] of [
      ['directory_tree', 'directory_tree', { path: root }],
      ['search_files **/*.test.ts', 'search_files', { path: root, pattern: '**/*.test.ts' }],
    ]) {
      try {
        const { ms, bytes } = await reference.callTool(name, args, 600_000)
        const oursCall = await (name === 'directory_tree'
          ? toolTimer(ours, 'directory_tree', { path: root })
          : toolTimer(ours, 'search_files', { path: root, pattern: '*.test.ts' }))()
        referenceRows.push([
          what,
          `${fmt(ms)}, ${formatBytes(bytes)}`,
          `${fmt(oursCall.ms)}, ${formatBytes(oursCall.bytes)}`,
          ratio(ms, oursCall.ms),
        ])
      } catch (error) {
        referenceRows.push([what, `failed: ${error.message.slice(0, 80)}`, '', ''])
      }
    }
    table(
      ['call', 'reference (time, response)', 'keel fs (time, response)', 'reference / keel'],
      referenceRows,
    )

    // ---- response sizes of default calls
    console.log('\n## Response sizes with default arguments (limit 256 KiB)\n')
    const big = join(root, 'big.txt')
    writeFileSync(
      big,
      `${Array.from({ length: 60_000 }, (_, index) => `line ${index} "quoted" text`).join('\n')}\n`,
    )
    const sizeCalls = [
      ['directory_tree', { path: root }],
      ['directory_tree', { path: root, gitignore: false }],
      ['list_directory', { path: join(root, 'node_modules') }],
      ['list_directory', { path: join(root, 'node_modules'), sizes: true }],
      ['search_files', { path: root, pattern: '*.ts' }],
      ['search_content', { path: root, pattern: 'helper' }],
      ['search_content', { path: root, pattern: 'helper', context: 20 }],
      ['read_text_file', { path: big }],
      ['read_multiple_files', { paths: [big, join(root, 'README.md'), join(root, '.gitignore')] }],
      ['get_file_info', { path: root }],
    ]
    const sizeRows = []
    for (const [name, args] of sizeCalls) {
      const { bytes } = await toolTimer(ours, name, args)()
      const shown = Object.entries(args)
        .filter(([key]) => key !== 'path' && key !== 'paths')
        .map(([key, value]) => `${key}: ${JSON.stringify(value)}`)
        .join(', ')
      sizeRows.push([
        `${name}${shown ? ` (${shown})` : ''}`,
        formatBytes(bytes),
        bytes <= RESPONSE_LIMIT ? 'ok' : 'OVER',
      ])
      verdicts.push([`${name} response ≤ 256 KiB`, bytes <= RESPONSE_LIMIT])
    }
    table(['call', 'response', '≤ 256 KiB'], sizeRows)
    console.log(`\nkeel fs peak RSS: ${formatBytes((await ours.peakRssKiB()) * 1024)}`)

    verdicts.unshift(['cold start ≤ 0.5× reference', oursCold / referenceCold <= 0.5])
    console.log('\n## Targets\n')
    table(
      ['target', 'met'],
      verdicts.map(([what, met]) => [what, met ? 'yes' : 'NO']),
    )
  } finally {
    await ours.close()
    await reference?.close()
    rmSync(root, { recursive: true, force: true })
  }
}

// The floor: node answering initialize and tools/list with nothing loaded.
const BARE_SERVER = `let b='';process.stdin.on('data',d=>{b+=d;let i;while((i=b.indexOf('\\n'))>=0){const m=JSON.parse(b.slice(0,i));b=b.slice(i+1);if(m.id!==undefined)process.stdout.write(JSON.stringify({jsonrpc:'2.0',id:m.id,result:{tools:[]}})+'\\n')}})`

if (process.argv[1] === fileURLToPath(import.meta.url)) await run()
