import { spawn, spawnSync } from 'node:child_process'
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { runProcess, spawnHttp } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPLICA_BIN, type RedisServer, startRedis, stopAll } from '../src/harness.js'

// Nothing of the scale-out is loaded unless --redis-url asks for it. The bundled bin initialises
// each inlined module on first use, so the Node built-ins a process requires show what it loaded:
// the Redis client needs net, tls and dns; stdio needs none of them, single-process HTTP no tls/dns.

const PRELOAD = `
const Module = require('node:module')
const seen = new Set()
const original = Module.prototype.require
Module.prototype.require = function (id) {
  if (Module.isBuiltin(id)) seen.add(id.replace(/^node:/, ''))
  return original.apply(this, arguments)
}
process.on('exit', () => require('node:fs').writeFileSync(process.env.KEEL_LOADED_FILE, [...seen].sort().join('\\n')))
`

let dir: string
let redis: RedisServer
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'keel-startup-'))
  await writeFile(join(dir, 'preload.cjs'), PRELOAD)
  redis = await startRedis()
})
afterAll(stopAll)

async function loadedOverHttp(name: string, env: Record<string, string>): Promise<string[]> {
  const file = join(dir, `${name}.txt`)
  const server = await spawnHttp(process.execPath, ['--require', join(dir, 'preload.cjs'), REPLICA_BIN], {
    env: { ...env, KEEL_LOADED_FILE: file },
  })
  const response = await fetch(server.url.replace(/\/mcp$/, '/healthz'))
  expect(response.status).toBe(200)
  await server.close()
  return (await readFile(file, 'utf8')).split('\n')
}

describe('start-up cost of the scale-out', () => {
  it('loads no network module at all on stdio', async () => {
    const file = join(dir, 'stdio.txt')
    const child = spawn(process.execPath, ['--require', join(dir, 'preload.cjs'), REPLICA_BIN], {
      env: { ...process.env, KEEL_LOADED_FILE: file, REDIS_URL: redis.url },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    const exited = new Promise((resolveExit) => child.once('exit', resolveExit))
    child.stdin.write(
      `${JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      })}\n${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n${JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
      })}\n`,
    )
    for (let wait = 0; wait < 500 && !stdout.includes('"id":1'); wait++)
      await new Promise((wake) => setTimeout(wake, 20))
    child.stdin.end()
    await exited
    const loaded = (await readFile(file, 'utf8')).split('\n')
    expect(stdout).toContain('"whoami"')
    // Even with REDIS_URL in the environment: stdio has no use for it.
    for (const module of ['net', 'tls', 'dns', 'http']) expect(loaded).not.toContain(module)
  })

  it('loads no Redis client for single-process HTTP, and loads it with --redis-url', async () => {
    const plain = await loadedOverHttp('http', {})
    expect(plain).toContain('http')
    for (const module of ['tls', 'dns']) expect(plain).not.toContain(module)
    const shared = await loadedOverHttp('redis', { REDIS_URL: redis.url })
    for (const module of ['net', 'tls', 'dns']) expect(shared).toContain(module)
  })
})

describe('the bundled bin', () => {
  it('keeps the Redis and OAuth clients in files of their own, which stdio never needs', async () => {
    const dist = dirname(REPLICA_BIN)
    const server = await readFile(join(dist, 'server.js'), 'utf8')
    // The clients' code is not in the bundle every start parses: only a reference to their files.
    expect(server).toContain('"./vendor/ioredis.js"')
    expect(server).toContain('"./vendor/jose.js"')
    expect(server.length).toBeLessThan(1.1 * 1024 * 1024)
    expect((await readFile(join(dist, 'vendor/ioredis.js'), 'utf8')).length).toBeGreaterThan(100_000)
    expect((await readFile(join(dist, 'vendor/jose.js'), 'utf8')).length).toBeGreaterThan(20_000)
    // A copy of the bin without them still serves stdio.
    const copy = join(dir, 'no-vendor')
    await cp(dist, copy, { recursive: true })
    await rm(join(copy, 'vendor'), { recursive: true })
    const request = (id: number, method: string, params?: object) =>
      `${JSON.stringify({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) })}\n`
    const { status: code, stdout } = spawnSync(process.execPath, [join(copy, 'index.js')], {
      input:
        request(0, 'initialize', {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'x', version: '1' },
        }) + request(1, 'tools/list'),
      encoding: 'utf8',
      timeout: 30_000,
    })
    expect(code).toBe(0)
    expect(stdout).toContain('"whoami"')
  })
})

describe('--redis-url at start-up', () => {
  it('refuses to start, with one clear line and no password, when Redis cannot be reached', async () => {
    const { code, stdout, stderr } = await runProcess(
      process.execPath,
      [REPLICA_BIN, '--transport', 'http', '--port', '0'],
      {
        env: { REDIS_URL: 'redis://:hunter2hunter2@127.0.0.1:1' },
      },
    )
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr).toMatch(
      /cannot start: cannot reach Redis \(--redis-url\): connect ECONNREFUSED 127\.0\.0\.1:1/,
    )
    expect(stderr).not.toContain('hunter2')
  })
})

describe('--help of a server built on core', () => {
  it('lists the scale-out options with their environment variables', async () => {
    const { code, stdout } = await runProcess(process.execPath, [REPLICA_BIN, '--help'])
    expect(code).toBe(0)
    expect(stdout).toMatch(/--state-secret <secret>\s+Key \(32\+ chars\).*\[env MCP_STATE_SECRET\]/)
    expect(stdout).toMatch(
      /--state-secret-file <path>\s+Read the state secret from this file\. \[env MCP_STATE_SECRET_FILE\]/,
    )
    expect(stdout).toMatch(/--redis-url <url>\s+Keep HTTP sessions and events in Redis .*\[env REDIS_URL\]/)
  })
})
