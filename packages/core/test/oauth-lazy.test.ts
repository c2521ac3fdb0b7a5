import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { build } from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// Start-up cost: the OAuth verifier (jose, discovery) must not load on stdio, nor on HTTP without
// --auth-issuer. A minimal server is bundled as ESM with code splitting, so whatever is loaded
// only by a dynamic import lands in its own chunk; a module hook records every module Node loads.

const ENTRY = fileURLToPath(new URL('./lazy-entry.ts', import.meta.url))
let work: string
let main: string
let joseChunks: string[]

const HOOK = `
import { appendFileSync } from 'node:fs'
export async function load(url, context, next) {
  if (process.env.KEEL_LOAD_LOG) appendFileSync(process.env.KEEL_LOAD_LOG, url + '\\n')
  return next(url, context)
}
`

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'keel-lazy-'))
  const result = await build({
    entryPoints: { main: ENTRY },
    outdir: join(work, 'out'),
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    metafile: true,
    logLevel: 'error',
    outExtension: { '.js': '.mjs' },
    // CommonJS dependencies inlined into ESM need a require.
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  })
  const outputs = Object.entries(result.metafile.outputs)
  // The entry's own output (dynamic imports of dependencies get an entryPoint of their own too).
  main = join(
    process.cwd(),
    outputs.find(([file, output]) => output.entryPoint && /[\\/]main\.mjs$/.test(file))?.[0] ?? '',
  )
  joseChunks = outputs
    .filter(([, output]) => Object.keys(output.inputs).some((input) => input.includes('/jose/')))
    .map(([file]) => pathToFileURL(join(process.cwd(), file)).href)
  await writeFile(join(work, 'hook.mjs'), HOOK)
  await writeFile(
    join(work, 'register.mjs'),
    `import { register } from 'node:module'\nregister(${JSON.stringify(pathToFileURL(join(work, 'hook.mjs')).href)})\n`,
  )
}, 60_000)

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true })
})

/** Starts the bundled server with the load hook; resolves once `ready` says it serves. */
function start(args: string[], log: string, ready: (stderr: string) => boolean) {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', join(work, 'register.mjs'), main, ...args],
    {
      env: { ...process.env, KEEL_LOAD_LOG: log, LOG_LEVEL: 'debug' },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  )
  let stderr = ''
  let stdout = ''
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const up = new Promise<void>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      if (ready(stderr)) resolve()
    })
    child.once('exit', () => reject(new Error(`exited before it was ready: ${stderr}`)))
  })
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
  })
  return { child, up, exited, output: () => stdout, errors: () => stderr }
}

async function loaded(log: string): Promise<string[]> {
  return (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean)
}

describe('the OAuth verifier loads only where it is used', () => {
  it('puts jose in a chunk of its own (else this test could not tell)', () => {
    expect(joseChunks.length).toBeGreaterThan(0)
    expect(joseChunks).not.toContain(pathToFileURL(main).href)
  })

  it('does not load on stdio', async () => {
    const log = join(work, 'stdio.log')
    const server = start([], log, (stderr) => stderr.includes('serving MCP over stdio'))
    await server.up
    server.child.stdin?.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } })}\n`,
    )
    server.child.stdin?.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`)
    await expect.poll(() => server.output().split('\n').filter(Boolean).length, { timeout: 20_000 }).toBe(2)
    expect(server.output()).toContain('ping_back')
    server.child.stdin?.end()
    expect(await server.exited).toBe(0)
    const urls = await loaded(log)
    expect(urls).toContain(pathToFileURL(main).href)
    for (const chunk of joseChunks) expect(urls).not.toContain(chunk)
  }, 30_000)

  it('does not load on HTTP without --auth-issuer, and loads with it', async () => {
    for (const [args, expectLoaded] of [
      [['--transport', 'http', '--port', '0'], false],
      [['--transport', 'http', '--port', '0', '--auth-issuer', 'http://127.0.0.1:9'], true],
    ] as const) {
      const log = join(work, `http-${expectLoaded}.log`)
      const server = start([...args], log, (stderr) => stderr.includes('serving MCP over Streamable HTTP'))
      await server.up
      server.child.kill('SIGTERM')
      await server.exited
      const urls = await loaded(log)
      for (const chunk of joseChunks) {
        if (expectLoaded) expect(urls).toContain(chunk)
        else expect(urls).not.toContain(chunk)
      }
    }
  }, 30_000)
})
