// @keel-mcp/server-github against the reference @modelcontextprotocol/server-github 2025.4.8, both
// against the same loopback fake of the GitHub REST API (the reference's fetch is redirected to it
// by github-redirect.mjs; ours takes --api-url). Medians of interleaved runs; ratios are what count.
//
//   pnpm --filter @keel-mcp/bench bench:github        (build servers/github first)
//   GITHUB_BENCH_CALLS=500 node src/main.mjs github
import { existsSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { coldStart, formatBytes, median, RawClient, ratio, table } from './rpc.mjs'

const repo = fileURLToPath(new URL('../../../', import.meta.url))
const OURS = join(repo, 'servers/github/dist/index.js')
const REFERENCE = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-github/package.json')),
  'dist/index.js',
)
const REDIRECT = fileURLToPath(new URL('./github-redirect.mjs', import.meta.url))
const CALLS = Number(process.env.GITHUB_BENCH_CALLS ?? 200)
const TOKEN = 'ghp_bench000000000000000000000000000000000'

/** A recorded issue from @octokit/fixtures (the full REST payload GitHub sends). */
function recordedIssue() {
  const fixtures = createRequire(join(repo, 'servers/github/package.json')).resolve(
    '@octokit/fixtures/package.json',
  )
  const scenario = join(dirname(fixtures), 'scenarios/api.github.com/search-issues/normalized-fixture.json')
  return JSON.parse(readFileSync(scenario, 'utf8'))[0].response.items[0]
}

async function startFake() {
  const issue = JSON.stringify(recordedIssue())
  let requests = 0
  const server = createServer((req, res) => {
    requests++
    if (req.method === 'GET' && /^\/repos\/[^/]+\/[^/]+\/issues\/\d+$/.test(req.url ?? '')) {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
      res.end(issue)
      return
    }
    res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' })
    res.end('{"message":"Not Found"}')
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests: () => requests,
    close: () => new Promise((resolve) => server.close(resolve)),
  }
}

const ms = (value) => `${value.toFixed(1)} ms`

export async function run() {
  if (!existsSync(OURS))
    throw new Error(`${OURS} is missing: run pnpm --filter @keel-mcp/server-github build`)
  const fake = await startFake()
  try {
    const ours = (args = [], env = {}) => ({
      command: process.execPath,
      args: [OURS, ...args],
      env: { GITHUB_TOKEN: TOKEN, GITHUB_API_URL: fake.url, LOG_LEVEL: 'silent', ...env },
    })
    const reference = {
      command: process.execPath,
      args: ['--import', REDIRECT, REFERENCE],
      env: { GITHUB_PERSONAL_ACCESS_TOKEN: TOKEN, GITHUB_BENCH_API: fake.url },
    }

    // 1. Catalogue: what every conversation pays for the tool list.
    const rows = []
    for (const [name, spec] of [
      ['keel, default toolsets', ours()],
      ['keel, --toolsets all', ours(['--toolsets', 'all'])],
      ['reference 2025.4.8', reference],
    ]) {
      const client = new RawClient(spec.command, spec.args, { env: spec.env })
      await client.initialize()
      const { message } = await client.request('tools/list')
      const tools = message.result.tools
      const bytes = JSON.stringify(tools).length
      rows.push([
        name,
        tools.length,
        formatBytes(bytes),
        Math.round(bytes / 4),
        Math.round(bytes / 4 / tools.length),
      ])
      await client.close()
    }
    console.log('tools/list (tokens = JSON bytes ÷ 4)\n')
    table(['', 'tools', 'size', 'tokens', 'tokens a tool'], rows)

    // 2. Cold start: spawn → initialize → tools/list.
    await coldStart([ours()], 1) // fills the V8 code cache, as a user's first start does
    const [oursMs, oursNoCacheMs, referenceMs] = await coldStart(
      [ours(), ours([], { KEEL_COMPILE_CACHE: '0' }), reference],
      11,
    )
    console.log('\nCold start (spawn → initialize → tools/list, median of 11)\n')
    table(
      ['', 'time', 'vs reference'],
      [
        ['keel', ms(oursMs), ratio(oursMs, referenceMs)],
        ['keel, no code cache', ms(oursNoCacheMs), ratio(oursNoCacheMs, referenceMs)],
        ['reference 2025.4.8', ms(referenceMs), '1.00×'],
      ],
    )

    // 3. Per call: get_issue against the fake, warm, interleaved.
    const clients = [
      [
        'keel',
        new RawClient(ours().command, ours().args, { env: ours().env }),
        { repo: 'octo/demo', issue_number: 1 },
      ],
      [
        'reference 2025.4.8',
        new RawClient(reference.command, reference.args, { env: reference.env }),
        { owner: 'octo', repo: 'demo', issue_number: 1 },
      ],
    ]
    const samples = clients.map(() => [])
    const sizes = clients.map(() => 0)
    for (const [, client, args] of clients) {
      await client.initialize()
      // Warm-up: the first call loads Octokit (keel) and compiles the call path.
      for (let index = 0; index < 10; index++) await client.callTool('get_issue', args)
    }
    for (let index = 0; index < CALLS; index++) {
      for (const [position, [, client, args]] of clients.entries()) {
        const { ms: took, bytes, message } = await client.callTool('get_issue', args)
        if (message.result?.isError) throw new Error(`get_issue failed: ${JSON.stringify(message.result)}`)
        samples[position].push(took)
        sizes[position] = bytes
      }
    }
    for (const [, client] of clients) await client.close()
    const [oursCall, referenceCall] = samples.map(median)
    console.log(`\nget_issue against the loopback fake (median of ${CALLS} warm calls)\n`)
    table(
      ['', 'p50', 'vs reference', 'answer size'],
      [
        ['keel', ms(oursCall), ratio(oursCall, referenceCall), formatBytes(sizes[0])],
        ['reference 2025.4.8', ms(referenceCall), '1.00×', formatBytes(sizes[1])],
      ],
    )
  } finally {
    await fake.close()
  }
}
