// Child processes with bounded waits: every command gets a deadline, runs in its own process group
// (so npm/pnpm and whatever they spawn die together), and its output is kept to explain a failure.
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'

/** A free TCP port on 127.0.0.1. */
export async function freePort() {
  const server = createServer()
  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Children still running, so an aborted run can end them (see killAll). */
const running = new Set()

/** Kills every command `run` started that is still running, with all its descendants. */
export function killAll(signal = 'SIGKILL') {
  for (const child of running) killGroup(child, signal)
}

/** Sends a signal to one process, ignoring one that is gone already. */
export function killPid(pid, signal = 'SIGKILL') {
  try {
    process.kill(pid, signal)
  } catch {
    // already gone
  }
}

/** Every descendant pid of `pid` (Linux /proc; empty elsewhere). */
export function descendants(pid) {
  let entries = []
  try {
    entries = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))
  } catch {
    return []
  }
  const children = new Map()
  for (const entry of entries) {
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, so split after ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)])
    } catch {
      // the process ended meanwhile
    }
  }
  const found = []
  const queue = [pid]
  while (queue.length) {
    for (const child of children.get(queue.shift()) ?? []) {
      found.push(child)
      queue.push(child)
    }
  }
  return found
}

/**
 * Kills a child, its process group and every descendant (turbo, for one, starts its tasks in
 * process groups of their own).
 */
export function killGroup(child, signal = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return
  for (const pid of descendants(child.pid)) killPid(pid, signal)
  try {
    process.kill(-child.pid, signal)
  } catch {
    child.kill(signal)
  }
}

/**
 * Runs a command to completion within `timeoutMs`. Resolves with its output; rejects with the
 * output's tail when it fails or overruns.
 * @param {string} command
 * @param {string[]} args
 * @param {{ cwd?: string, env?: NodeJS.ProcessEnv, timeoutMs?: number, label?: string }} [options]
 * @returns {Promise<{ output: string, ms: number }>}
 */
export function run(command, args, { cwd, env = process.env, timeoutMs = 180_000, label } = {}) {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    running.add(child)
    child.once('exit', () => running.delete(child))
    let output = ''
    const collect = (chunk) => {
      output += chunk
      if (output.length > 2_000_000) output = output.slice(-1_000_000)
    }
    child.stdout.on('data', collect)
    child.stderr.on('data', collect)
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      killGroup(child, 'SIGKILL')
    }, timeoutMs)
    child.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      const ms = Math.round(performance.now() - started)
      if (code === 0 && !timedOut) return resolve({ output, ms })
      const what = label ?? `${command} ${args.join(' ')}`
      const why = timedOut ? `did not finish within ${timeoutMs / 1000} s` : `exited with ${code ?? signal}`
      reject(new Error(`${what} ${why}\n${tail(output)}`))
    })
  })
}

/** The last lines of a command's output, indented, for an error message. */
export function tail(text, lines = 40) {
  return text
    .trimEnd()
    .split('\n')
    .slice(-lines)
    .map((line) => `    | ${line}`)
    .join('\n')
}

/** Resolves with `promise`, or rejects after `ms` with a message naming `what`. */
export async function within(ms, what, promise) {
  let timer
  const deadline = new Promise((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000} s`)), ms)
  })
  try {
    return await Promise.race([promise, deadline])
  } finally {
    clearTimeout(timer)
  }
}
