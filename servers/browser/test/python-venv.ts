import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { access, mkdir, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

// The Python MCP SDK for tests: one virtual environment, made once under the OS temp dir and
// reused by every run (the same place and marker core's other Python-driven tests use).

/** The Python MCP SDK release the tests drive the server with. */
export const PYTHON_MCP_VERSION = '2.3.0'

let prepared: Promise<string> | undefined

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  )

/** The venv's interpreter, creating the venv first when missing (`KEEL_PYTHON_VENV` overrides where). */
export function pythonMcp(): Promise<string> {
  prepared ??= createVenv().catch((error: unknown) => {
    prepared = undefined
    throw error
  })
  return prepared
}

async function createVenv(): Promise<string> {
  const venv = process.env.KEEL_PYTHON_VENV ?? join(tmpdir(), `keel-python-mcp-${PYTHON_MCP_VERSION}`)
  const python = join(venv, 'bin', 'python')
  const marker = (directory: string) => join(directory, '.keel-ready')
  if (await exists(marker(venv))) return python
  if (await exists(venv)) await rm(venv, { recursive: true, force: true })
  await mkdir(dirname(venv), { recursive: true })
  // Built aside and renamed into place with its marker: two runs at once never share a half-made venv.
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
  return python
}

/** Runs a command to its end; rejects on a non-zero exit or past `timeoutMs` (then killed). */
export function execute(
  command: string,
  args: string[],
  timeoutMs: number,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONUNBUFFERED: '1' },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk
    })
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
