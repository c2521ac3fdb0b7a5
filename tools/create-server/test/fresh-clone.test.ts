import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { connectHttp, connectStdio } from '@keel-mcp/core/testing'
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

  it("runs the README's quick start, connects the Inspector CLI to it as the README says, then stops it", async () => {
    const [quickStart, inspector, testCommand] = await shellSteps('README.md')
    expect(testCommand?.command).toBe('pnpm test')
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
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
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
      // The "connect a client" step, verbatim: the MCP Inspector's CLI (Node 22 from npm) calls
      // list_directory on the running server and prints the files.
      expect(inspector?.command).toContain(`http://127.0.0.1:${port}/mcp`)
      const inspected = sh(inspector?.command ?? 'false', 240_000)
      expect(inspected.status, inspected.output.slice(-4000)).toBe(0)
      expect(inspected.output).toContain('README.md')
    } finally {
      // "Stop it": the signal Ctrl-C sends, to the server alone (not the shell that started it).
      // The shell may have exec'd node itself, or still be node's parent.
      const server = spawnSync('pgrep', ['-P', String(child.pid), '-f', 'servers/fs/dist/index.js'], {
        encoding: 'utf8',
      })
      const pids = server.stdout.split('\n').filter(Boolean).map(Number)
      for (const pid of pids.length ? pids : [child.pid ?? 0]) if (pid) process.kill(pid, 'SIGINT')
    }
    expect(
      await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('running'), 10_000))]),
    ).toBe(0)
  }, 600_000)

  it("puts every server's command on the PATH as the README's checkout section says, and a client connects through it", async () => {
    const link = (await shellSteps('README.md')).find((step) => step.command.startsWith('pnpm servers:link'))
    expect(link?.command).toBe('pnpm servers:link')
    // npm's global prefix points into a temporary directory: the command runs verbatim, and the
    // machine's own global bin directory is left alone.
    const prefix = await mkdtemp(join(tmpdir(), 'keel-prefix-'))
    const bin = join(prefix, 'bin')
    try {
      const linked = spawnSync('sh', ['-c', link?.command ?? 'false'], {
        cwd: copy,
        encoding: 'utf8',
        env: { ...childEnv(), npm_config_prefix: prefix, PATH: `${bin}${delimiter}${process.env.PATH}` },
        timeout: 300_000,
      })
      expect(linked.status, `${linked.stdout}${linked.stderr}`.slice(-4000)).toBe(0)
      for (const slug of ['fs', 'postgres', 'github', 'slack', 'browser'])
        expect(linked.stdout).toContain(`mcp-server-${slug} →`)
      const version = spawnSync('mcp-server-fs', ['--version'], {
        encoding: 'utf8',
        cwd: tmpdir(),
        env: { ...childEnv(), PATH: `${bin}${delimiter}${process.env.PATH}` },
      })
      const pkg = JSON.parse(await readFile(join(copy, 'servers/fs/package.json'), 'utf8'))
      expect(version.stdout.trim()).toBe(pkg.version)
      const connection = await connectStdio({
        command: 'mcp-server-fs',
        args: [copy],
        cwd: tmpdir(),
        env: { PATH: `${bin}${delimiter}${process.env.PATH}` },
      })
      try {
        expect(connection.client.getServerVersion()?.version).toBe(pkg.version)
        const read = await connection.client.callTool({
          name: 'read_text_file',
          arguments: { path: join(copy, 'README.md'), head: 1 },
        })
        expect(JSON.stringify(read.content)).toContain('# Keel')
      } finally {
        await connection.close()
      }
      const unlinked = spawnSync('sh', ['-c', 'pnpm servers:unlink'], {
        cwd: copy,
        encoding: 'utf8',
        env: { ...childEnv(), npm_config_prefix: prefix },
      })
      expect(unlinked.status, unlinked.stderr).toBe(0)
      expect(existsSync(join(bin, 'mcp-server-fs'))).toBe(false)
    } finally {
      await rm(prefix, { recursive: true, force: true })
    }
  }, 600_000)

  it("builds the README's MCP Bundles, one per server", async () => {
    const bundle = (await shellSteps('README.md')).find((step) => step.command.startsWith('pnpm bundle:mcpb'))
    expect(bundle?.command).toBe('pnpm bundle:mcpb')
    const result = sh(bundle?.command ?? 'false')
    expect(result.status, result.output.slice(-4000)).toBe(0)
    const files = (await readdir(join(copy, 'dist-mcpb'))).sort()
    expect(files.map((file) => file.replace(/-\d+\.\d+\.\d+\.mcpb$/, ''))).toEqual([
      'browser',
      'fs',
      'github',
      'postgres',
      'slack',
    ])
  }, 600_000)

  it('runs no README shell command the tests above do not cover', async () => {
    expect((await shellSteps('README.md')).map((step) => step.command.replace(/ .*/, ''))).toEqual([
      'npm',
      'npx',
      'pnpm',
      'pnpm',
      'pnpm',
    ])
  })

  it("runs CONTRIBUTING.md's setup commands without an error", async () => {
    const all = await shellSteps('CONTRIBUTING.md')
    // The system packages line: the same packages .ci/run installs on a fresh machine, and each
    // one present here (where the tests just ran on them), so the line is a no-op to run again.
    const apt = all.find((step) => step.command.startsWith('apt-get install'))
    const wanted = (apt?.command ?? '').split(/\s+/).slice(3)
    const ciScript = await readFile(join(root, '.ci/run'), 'utf8')
    const ciPackages = [...ciScript.matchAll(/need\+=\(([^)]*)\)/g)].flatMap((match) =>
      (match[1] ?? '').split(/\s+/),
    )
    expect(wanted.sort()).toEqual([...new Set(ciPackages)].sort())
    for (const name of wanted) {
      const status = spawnSync('dpkg-query', ['--status', name], { encoding: 'utf8' })
      if (status.error) break // not a Debian machine: nothing to check the line against
      expect(status.stdout, name).toContain('Status: install ok installed')
    }
    const steps = all.filter((step) => step.command !== 'pnpm test' && step !== apt)
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
