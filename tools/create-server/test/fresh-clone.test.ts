import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectHttp } from '@keel-mcp/core/testing'
import { copyWorkspace } from '@keel-mcp/release-tools/workspace'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRoot } from '../src/root.mjs'

// What a new contributor meets first: the README's quick start and CONTRIBUTING.md's setup,
// copied verbatim out of the Markdown and run in a copy of the workspace where nothing was
// installed or built. The one command not run here is `pnpm test` itself: it is the command CI
// runs on a fresh clone, so it is exercised there (running it from inside a test would recurse).
const root = findRoot()
let copy = ''

interface Step {
  source: string
  command: string
}

/** Commands of the ```sh blocks in a Markdown file, one per line, comments dropped. */
async function shellSteps(file: string): Promise<Step[]> {
  const text = await readFile(join(root, file), 'utf8')
  const steps: Step[] = []
  for (const block of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
    for (const line of (block[1] ?? '').split('\n')) {
      const command = line.replace(/\s+#.*$/, '').trim()
      if (command && !command.startsWith('#')) steps.push({ source: file, command })
    }
  }
  return steps
}

function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' }
  for (const key of Object.keys(env)) if (key.startsWith('VITEST') || key === 'NODE_ENV') delete env[key]
  return env
}

function sh(command: string, timeout = 300_000) {
  const result = spawnSync('sh', ['-c', command], { cwd: copy, encoding: 'utf8', env: childEnv(), timeout })
  return { status: result.status, output: `${result.stdout ?? ''}${result.stderr ?? ''}` }
}

async function untilHealthy(url: string, child: ChildProcess, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the quick start exited with code ${child.exitCode}`)
    const ok = await fetch(url).then(
      (response) => response.ok,
      () => false,
    )
    if (ok) return
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`${url} did not answer in time`)
}

beforeAll(async () => {
  copy = await mkdtemp(join(tmpdir(), 'keel-fresh-'))
  await copyWorkspace(root, copy)
  // A clone has a git directory (Biome and turbo look for one); nothing else is carried over.
  spawnSync('git', ['init', '-q'], { cwd: copy })
}, 60_000)

afterAll(async () => {
  if (copy) await rm(copy, { recursive: true, force: true })
})

describe('a fresh clone, following the docs verbatim', () => {
  it('starts from a copy with nothing installed or built', () => {
    expect(existsSync(join(copy, 'node_modules'))).toBe(false)
    expect(existsSync(join(copy, 'packages/core/dist'))).toBe(false)
    expect(existsSync(join(copy, 'servers/fs/dist'))).toBe(false)
  })

  it("runs the README's quick start: installs, builds and serves this directory over HTTP", async () => {
    const [quickStart, testCommand, ...rest] = await shellSteps('README.md')
    expect(testCommand?.command).toBe('pnpm test')
    expect(rest).toEqual([])
    const command = quickStart?.command ?? ''
    const port = /--port (\d+)/.exec(command)?.[1]
    expect(port, command).toBeDefined()
    const child = spawn('sh', ['-c', command], {
      cwd: copy,
      env: childEnv(),
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    })
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = `${stderr}${chunk.toString()}`.slice(-4000)
    })
    try {
      await untilHealthy(`http://127.0.0.1:${port}/healthz`, child, Date.now() + 240_000).catch((error) => {
        throw new Error(`${(error as Error).message}\n${stderr}`)
      })
      const connection = await connectHttp(`http://127.0.0.1:${port}/mcp`)
      try {
        const listing = await connection.client.callTool({ name: 'list_directory', arguments: { path: '.' } })
        expect(listing.isError ?? false).toBe(false)
        expect(JSON.stringify(listing.content)).toContain('README.md')
      } finally {
        await connection.close()
      }
    } finally {
      if (child.pid) process.kill(-child.pid, 'SIGTERM')
    }
  }, 300_000)

  it("runs CONTRIBUTING.md's setup commands without an error", async () => {
    const steps = (await shellSteps('CONTRIBUTING.md')).filter((step) => step.command !== 'pnpm test')
    expect(steps.map((step) => step.command)).toEqual([
      'pnpm install',
      'pnpm build',
      'pnpm run check',
      'pnpm typecheck',
    ])
    for (const step of steps) {
      const result = sh(step.command)
      expect(result.status, `${step.command}\n${result.output.slice(-4000)}`).toBe(0)
    }
  }, 600_000)
})
