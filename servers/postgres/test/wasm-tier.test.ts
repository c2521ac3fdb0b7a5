import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { sharedPostgres } from './harness/index.js'

// The built bin keeps the SQL parser's WebAssembly on V8's baseline compiler (package.json,
// keel.v8Flags; the launcher sets them before it compiles the bundle). V8's optimising tier
// compiled the parser's largest functions (one of 100 KB of WebAssembly) in the seconds after
// start: 0.8 s of a V8 thread's CPU on Node 20, 3 s on Node 24, for no faster parsing after
// (docs/performance.md). V8 prints each optimised compilation of a WebAssembly function with
// --trace-wasm-compilation-times (to stdout, beside the protocol's lines).
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const shared = sharedPostgres()
const CALLS = 40

/** Runs the bin with `nodeFlags`, parses CALLS statements of new texts, and returns its stdout. */
async function traced(nodeFlags: string[]): Promise<string> {
  const child = spawn(process.execPath, ['--trace-wasm-compilation-times', ...nodeFlags, BIN], {
    env: { ...process.env, DATABASE_URL: shared.url, KEEL_COMPILE_CACHE: '0', KEEL_HANDSHAKE_REPLAY: '0' },
    stdio: ['pipe', 'pipe', 'ignore'],
  })
  let stdout = ''
  let pending = ''
  const waiters = new Map<number, () => void>()
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk
    pending += chunk
    const lines = pending.split('\n')
    pending = lines.pop() ?? ''
    for (const line of lines) {
      // V8 buffers its trace: a line of the protocol (one write) may follow part of a trace line.
      const start = line.indexOf('{"')
      if (start === -1) continue
      const { id } = JSON.parse(line.slice(start)) as { id?: number }
      if (id !== undefined) waiters.get(id)?.()
    }
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const send = (message: object) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`)
  const answered = (id: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${id} in 20 s`)), 20_000)
      waiters.set(id, () => {
        clearTimeout(timer)
        resolve()
      })
    })
  try {
    const initialized = answered(0)
    send({
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
    })
    await initialized
    send({ method: 'notifications/initialized' })
    for (let id = 1; id <= CALLS; id++) {
      const sql = `SELECT n.nspname, count(*) AS relations FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname NOT LIKE 'pg_%' GROUP BY n.nspname ORDER BY 2 DESC LIMIT ${id}`
      const done = answered(id)
      send({ id, method: 'tools/call', params: { name: 'query', arguments: { sql } } })
      await done
    }
    // Optimised compilations run on V8's threads and are printed when they finish.
    await new Promise((resolve) => setTimeout(resolve, 2_000))
  } finally {
    child.stdin.end()
    await exited
  }
  return stdout
}

describe("the SQL parser's WebAssembly", () => {
  it('stays on the baseline compiler in the built bin, and the same flags on the command line win', async () => {
    const optimised = /Compiled function \S+ using TurboFan/g
    const baseline = await traced([])
    expect(baseline).toContain(`"id":${CALLS}`)
    expect(baseline.match(optimised) ?? []).toEqual([])
    // Tier-up given back on node's command line: the same calls optimise the parser, so the
    // trace above would have shown it.
    const tieredUp = await traced(['--wasm-tier-up', '--wasm-dynamic-tiering'])
    expect(tieredUp).toContain(`"id":${CALLS}`)
    expect((tieredUp.match(optimised) ?? []).length).toBeGreaterThan(0)
  }, 60_000)
})
