import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const repoDir = resolve(packageDir, '../..')
const runner = join(packageDir, 'src/run-suite.mjs')

/**
 * Every real server, checked against the protocol scenarios as it lands. Add a slug here and the
 * server as a devDependency of this package (so turbo builds it before this test runs).
 */
const SERVERS = ['example', 'fs', 'postgres', 'github', 'slack', 'browser']

interface RunResult {
  code: number | null
  output: string
}

function runSuite(args: string[]): Promise<RunResult> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [runner, ...args], {
      cwd: repoDir,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
    })
    child.once('error', reject)
    child.once('exit', (code) => resolveRun({ code, output }))
  })
}

async function binOf(slug: string): Promise<string> {
  const dir = join(repoDir, 'servers', slug)
  const { bin } = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as {
    bin: string | Record<string, string>
  }
  return join(dir, typeof bin === 'string' ? bin : Object.values(bin)[0]!)
}

describe('official MCP conformance suite', () => {
  it('passes the active server suite against the fixture, outside expected-failures.yml', async () => {
    const { code, output } = await runSuite([])
    console.log(output)
    expect(code, output).toBe(0)
  })

  it('passes the active server suite against the fixture in --stateless mode, outside expected-failures.stateless.yml', async () => {
    const { code, output } = await runSuite(['--stateless'])
    console.log(output)
    expect(code, output).toBe(0)
  })

  it.each(SERVERS)('passes the protocol scenarios against the %s server', async (slug) => {
    const { code, output } = await runSuite(['--protocol-only', '--', process.execPath, await binOf(slug)])
    console.log(output)
    expect(code, output).toBe(0)
  })

  // The 2026-07-28 run of conformance 0.2.x needs Node 22 fetched through npx, so it is not part of
  // the test suite (no test reaches beyond loopback): run it with `node src/run-suite.mjs --next`.
})

describe('baseline file', () => {
  const dirs: string[] = []
  afterAll(async () => {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
  })

  it('is refused when an entry carries no comment saying why it fails', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-baseline-'))
    dirs.push(dir)
    const file = join(dir, 'expected-failures.yml')
    await writeFile(file, 'server:\n  # a reason\n  - ping\n  - tools-list\n')
    const { code, output } = await runSuite(['--expected-failures', file])
    expect(code).toBe(2)
    expect(output).toContain('entry "tools-list" has no comment saying why it fails')
    expect(output).not.toContain('entry "ping"')
  })
})
