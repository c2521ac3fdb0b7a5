import { spawn } from 'node:child_process'
import { createHash, randomUUID } from 'node:crypto'
import { access, mkdir, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { PYTHON_DRIVER } from './python-driver.js'

/** The Python MCP SDK release the tests drive servers with. */
export const PYTHON_MCP_VERSION = '2.3.0'

/** Where the Python MCP SDK is installed, and its interpreter. */
export interface PythonMcp {
  venv: string
  python: string
}

/** What the Python client connects to: a spawned stdio server, or a Streamable HTTP endpoint. */
export type PythonTarget =
  | { command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  | { url: string }

/**
 * One step of a {@link PythonPlan}. Each step's outcome is `{ ok }` (the result as JSON, aliases
 * as on the wire), `{ error: { code, message, data } }` (a JSON-RPC error) or `{ exception }`.
 * - `info`: negotiated version, server info, capabilities, the discover or initialize result.
 * - `list_tools`, `list_resources`, `list_resource_templates`, `list_prompts` (bypass the client cache).
 * - `call_tool` (`name`, `arguments`), `read_resource` (`uri`), `get_prompt` (`name`, `arguments`), `ping`.
 * - `request` (`method`, `params`): any request, stamped as the client stamps its own.
 * - `set_logging_level` (`level`), `subscribe` (`uri`, the 2025 `resources/subscribe`).
 * - `listen` (`uris`, `count`, `timeout` s, `during`: steps run once the stream is acknowledged):
 *   a 2026-07-28 `subscriptions/listen`; answers `{ honored, during, events: [{ type, uri, afterMs }] }`
 *   or `{ timedOut: true, events }`.
 * - `wait_notifications` (`method`, `count`, `timeout` s): the notifications seen so far of that method.
 * - `write_local` (`path`, `content`): the Python process writes a file (a change from outside the server).
 * - `sleep` (`seconds`).
 * Steps may carry `meta` (the request's `_meta`).
 */
export type PythonStep = { op: string; meta?: Record<string, unknown> } & Record<string, unknown>

/** A run of the Python client against one server. */
export interface PythonPlan {
  target: PythonTarget
  /** `auto` (the SDK's default: `server/discover`, 2026-07-28) or `legacy` (the `initialize` handshake). */
  mode: 'auto' | 'legacy'
  steps: PythonStep[]
  /** 2026-07-28: the log level stamped in every request's `_meta` (`io.modelcontextprotocol/logLevel`). */
  logLevel?: string
  /** Answers elicitation requests with this (enables the elicitation capability). */
  elicit?: { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> }
}

/** The outcome of a step. */
export type PythonStepResult =
  | { ok: any }
  | { error: { code: number; message: string; data?: unknown } }
  | { exception: string }

/** What the Python client printed. */
export interface PythonRun {
  protocolVersion?: string
  results: PythonStepResult[]
  /** Every server notification the client saw (method and params), in order. */
  notifications: Array<{ method: string; params: any }>
  /** Set when connecting failed. */
  connectError?: string
  stderr: string
}

let prepared: Promise<PythonMcp> | undefined

/**
 * A virtual environment holding the Python MCP SDK ({@link PYTHON_MCP_VERSION}), created once under
 * the OS temp dir (`KEEL_PYTHON_VENV` overrides where) and reused by every test file and run. Two
 * processes creating it at once each build in a directory of their own and rename it into place:
 * the first rename wins, the other is discarded. The interpreter is `KEEL_PYTHON` or `python3`.
 */
export function pythonMcp(): Promise<PythonMcp> {
  prepared ??= createVenv().catch((error: unknown) => {
    prepared = undefined
    throw error
  })
  return prepared
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  )
}

async function createVenv(): Promise<PythonMcp> {
  const venv = process.env.KEEL_PYTHON_VENV ?? join(tmpdir(), `keel-python-mcp-${PYTHON_MCP_VERSION}`)
  const marker = (directory: string) => join(directory, '.keel-ready')
  const ready = { venv, python: join(venv, 'bin', 'python') }
  if (await exists(marker(venv))) return ready
  // The venv only ever appears by a rename with its marker inside: a directory there without one was
  // left by something else, and is no venv to keep.
  if (await exists(venv)) await rm(venv, { recursive: true, force: true })
  await mkdir(dirname(venv), { recursive: true })
  const building = `${venv}.building-${process.pid}-${randomUUID().slice(0, 8)}`
  try {
    await execute(process.env.KEEL_PYTHON ?? 'python3', ['-m', 'venv', building], 120_000)
    await execute(
      join(building, 'bin', 'python'),
      [
        '-m',
        'pip',
        'install',
        '--disable-pip-version-check',
        '--retries',
        '0',
        '--timeout',
        '15',
        `mcp==${PYTHON_MCP_VERSION}`,
      ],
      300_000,
    )
    await writeFile(marker(building), `${PYTHON_MCP_VERSION}\n`)
    await rename(building, venv).catch(async (error: NodeJS.ErrnoException) => {
      if (!(await exists(marker(venv)))) throw error
    })
  } finally {
    await rm(building, { recursive: true, force: true })
  }
  return ready
}

function execute(
  command: string,
  args: string[],
  timeoutMs: number,
  input?: string,
  env?: Record<string, string>,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...(process.env as Record<string, string>), ...env },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk
    })
    child.stdin.on('error', () => {})
    child.stdin.end(input)
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      if (code === 0) resolve({ stdout, stderr })
      else
        reject(
          new Error(
            `${command} ${args.join(' ')} ended with ${signal ?? `code ${code}`}; stderr: ${stderr.slice(-3000)}`,
          ),
        )
    })
  })
}

/**
 * Runs a Python script with the venv's interpreter (the MCP SDK importable) and resolves with its
 * output; rejects when it exits non-zero or outlives `timeoutMs`.
 */
export async function runPythonScript(
  source: string,
  options: { args?: string[]; input?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  const { venv, python } = await pythonMcp()
  const file = join(venv, `script-${createHash('sha256').update(source).digest('hex').slice(0, 16)}.py`)
  if (!(await exists(file))) {
    const partial = `${file}.${process.pid}-${randomUUID().slice(0, 8)}`
    await writeFile(partial, source)
    await rename(partial, file)
  }
  return execute(python, [file, ...(options.args ?? [])], options.timeoutMs ?? 60_000, options.input, {
    PYTHONUNBUFFERED: '1',
    ...options.env,
  })
}

/**
 * Drives a server with the Python MCP SDK's `Client`: connects (spawning the stdio server itself,
 * or to the URL), runs the plan's steps in order and resolves with every step's outcome. The
 * client's own failures come back as `connectError` or per-step `exception`, for the test to assert.
 */
export async function runPythonClient(
  plan: PythonPlan,
  options: { timeoutMs?: number } = {},
): Promise<PythonRun> {
  const { stdout, stderr } = await runPythonScript(PYTHON_DRIVER, {
    input: JSON.stringify(plan),
    timeoutMs: options.timeoutMs ?? 60_000,
  })
  const line = stdout.trim().split('\n').at(-1) ?? ''
  let parsed: Partial<Omit<PythonRun, 'stderr'>>
  try {
    parsed = JSON.parse(line)
  } catch {
    throw new Error(
      `the Python client printed no answer; stdout: ${stdout.slice(-1000)}; stderr: ${stderr.slice(-3000)}`,
    )
  }
  return { ...parsed, results: parsed.results ?? [], notifications: parsed.notifications ?? [], stderr }
}
