// A throwaway npm registry on loopback: verdaccio with no uplinks (it knows only what we publish),
// anonymous publish, no web UI, no audit proxying. Storage lives in the given temp directory.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { freePort, killGroup, tail } from './processes.mjs'

/** verdaccio's config: YAML, written by hand (JSON is valid YAML). */
export function verdaccioConfig(dir) {
  const config = {
    storage: join(dir, 'storage'),
    auth: { htpasswd: { file: join(dir, 'htpasswd'), max_users: -1 } },
    uplinks: {},
    packages: {
      '@keel-mcp/*': { access: '$all', publish: '$anonymous $all', unpublish: '$all' },
      '**': { access: '$all', publish: '$anonymous $all' },
    },
    middlewares: { audit: { enabled: false } },
    web: { enable: false },
    publish: { allow_offline: true },
    server: { keepAliveTimeout: 60 },
    log: { type: 'stdout', format: 'pretty', level: 'warn' },
  }
  return `${JSON.stringify(config, null, 2)}\n`
}

function verdaccioBin() {
  const require = createRequire(import.meta.url)
  const manifestPath = require.resolve('verdaccio/package.json')
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'))
  const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin.verdaccio
  return join(dirname(manifestPath), bin)
}

/**
 * Starts verdaccio on 127.0.0.1 and waits (bounded) until it answers.
 * @returns {Promise<{ url: string, stop(): Promise<void>, log(): string }>}
 */
export async function startRegistry(dir, { readyTimeoutMs = 30_000 } = {}) {
  await mkdir(join(dir, 'storage'), { recursive: true })
  const configFile = join(dir, 'config.yaml')
  await writeFile(configFile, verdaccioConfig(dir))
  await writeFile(join(dir, 'htpasswd'), '')
  const port = await freePort()
  const url = `http://127.0.0.1:${port}/`
  const child = spawn(
    process.execPath,
    [verdaccioBin(), '--config', configFile, '--listen', `127.0.0.1:${port}`],
    {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  )
  let output = ''
  child.stdout.on('data', (chunk) => {
    output += chunk
  })
  child.stderr.on('data', (chunk) => {
    output += chunk
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const stop = async () => {
    killGroup(child, 'SIGTERM')
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5_000)
    await exited
    clearTimeout(timer)
  }
  const deadline = Date.now() + readyTimeoutMs
  for (;;) {
    if (child.exitCode !== null) throw new Error(`verdaccio exited during start-up\n${tail(output)}`)
    try {
      const response = await fetch(`${url}-/ping`, { signal: AbortSignal.timeout(1_000) })
      if (response.ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`verdaccio did not answer on ${url} within ${readyTimeoutMs / 1000} s\n${tail(output)}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return { url, stop, log: () => output }
}

/** A package's document (all versions) from the registry, or undefined when it is unknown. */
export async function packument(registryUrl, name) {
  const response = await fetch(`${registryUrl}${name.replace('/', '%2f')}`, {
    signal: AbortSignal.timeout(10_000),
  })
  if (response.status === 404) return undefined
  if (!response.ok) throw new Error(`GET ${name} from the local registry: HTTP ${response.status}`)
  return response.json()
}

/** Reads the config back (for tests). */
export async function readConfig(dir) {
  return JSON.parse(await readFile(join(dir, 'config.yaml'), 'utf8'))
}
