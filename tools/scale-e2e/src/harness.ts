import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type SpawnedHttpServer, spawnHttp } from '@keel-mcp/core/testing'

// Real parts for the scale-out tests: Debian's redis-server and nginx, started on loopback in a
// temp dir, and replicas of the built replica server as separate processes. Everything started
// here is registered, and `stopAll()` (in afterAll/afterEach) stops it even when a test failed.

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
export const REPLICA_BIN = join(packageDir, 'dist/index.js')
export const REDIS_SERVER = process.env.REDIS_SERVER_BIN ?? '/usr/bin/redis-server'
export const NGINX = process.env.NGINX_BIN ?? '/usr/sbin/nginx'

const cleanups: Array<() => Promise<void>> = []

/** Stops everything the harness started, newest first. */
export async function stopAll(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

function waitForOutput(
  child: ChildProcess,
  pattern: RegExp,
  what: string,
  timeoutMs = 15_000,
): Promise<void> {
  return new Promise((resolveWait, reject) => {
    let output = ''
    const timer = setTimeout(
      () => reject(new Error(`${what} did not start: ${output.slice(-1500)}`)),
      timeoutMs,
    )
    const onData = (chunk: Buffer) => {
      output += chunk
      if (pattern.test(output)) {
        clearTimeout(timer)
        resolveWait()
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${what} exited (${code}): ${output.slice(-1500)}`))
    })
  })
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolveStop) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
    child.once('exit', () => {
      clearTimeout(timer)
      resolveStop()
    })
    child.kill(signal)
  })
}

export interface RedisServer {
  url: string
  port: number
  /** Stops Redis (its data is gone: no persistence), then starts it again on the same port. */
  restart(): Promise<void>
  stop(): Promise<void>
  start(): Promise<void>
}

/** A throwaway redis-server on a free loopback port, no persistence. */
export async function startRedis(): Promise<RedisServer> {
  const dir = await mkdtemp(join(tmpdir(), 'keel-redis-'))
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = async () => {
    child = spawn(
      REDIS_SERVER,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    await waitForOutput(child, /Ready to accept connections/, 'redis-server')
  }
  const stop = async () => {
    if (child) await stopChild(child)
  }
  await start()
  cleanups.push(async () => {
    await stop()
    await rm(dir, { recursive: true, force: true })
  })
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    stop,
    async restart() {
      await stop()
      await start()
    },
  }
}

export interface Replica extends SpawnedHttpServer {
  port: number
  pid: number
  /** SIGKILL: the replica dies mid-whatever, as a crashed process would. */
  kill(): Promise<void>
}

/** Starts `count` replicas of the replica server, each on its own free port, as separate processes. */
export async function startReplicas(
  count: number,
  options: {
    redisUrl?: string
    stateSecret?: string
    args?: string[]
    env?: Record<string, string>
    /** The server bin to run (default: this package's replica server). */
    bin?: string
  } = {},
): Promise<Replica[]> {
  const env: Record<string, string> = { LOG_LEVEL: 'debug', ...options.env }
  if (options.redisUrl) env.REDIS_URL = options.redisUrl
  if (options.stateSecret) env.MCP_STATE_SECRET = options.stateSecret
  const replicas: Replica[] = []
  for (let index = 0; index < count; index++) {
    const spawned = await spawnHttp(process.execPath, [options.bin ?? REPLICA_BIN, ...(options.args ?? [])], {
      env,
      // A loaded machine (CI runs packages one after another, but other work shares the cores).
      timeoutMs: 30_000,
    })
    const replica: Replica = Object.assign(spawned, {
      port: Number(new URL(spawned.url).port),
      pid: spawned.child.pid ?? 0,
      kill: () => stopChild(spawned.child, 'SIGKILL'),
    })
    cleanups.push(() => stopChild(spawned.child))
    replicas.push(replica)
  }
  return replicas
}

export interface Nginx {
  /** `http://127.0.0.1:PORT/mcp` */
  url: string
  config: string
  accessLog(): Promise<string>
}

/**
 * nginx as a plain round-robin load balancer in front of `ports` (no sticky sessions, no upstream
 * keep-alive: every request picks the next replica), with buffering off for SSE: the settings of
 * docs/deploying.md. `site` replaces the upstream and server blocks (the test of the doc passes the
 * doc's own block, with `{port}` and `{upstreams}` filled in).
 */
export async function startNginx(
  ports: number[],
  site?: (port: number, upstreams: string[]) => string,
  /** The port to listen on (default: a free one); known ahead when replicas must name nginx's URL. */
  listenPort?: number,
): Promise<Nginx> {
  const dir = await mkdtemp(join(tmpdir(), 'keel-nginx-'))
  const port = listenPort ?? (await freePort())
  const upstreams = ports.map((upstream) => `127.0.0.1:${upstream}`)
  const config = mainConfig(dir, (site ?? siteConfig)(port, upstreams))
  await writeFile(join(dir, 'nginx.conf'), config)
  const child = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  cleanups.push(async () => {
    await stopChild(child, 'SIGQUIT')
    await rm(dir, { recursive: true, force: true })
  })
  // nginx says nothing when it starts: poll until it answers (bounded).
  const deadline = Date.now() + 15_000
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`nginx exited: ${await readFile(join(dir, 'error.log'), 'utf8').catch(() => '')}`)
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`)
      .then((response) => response.ok)
      .catch(() => false)
    if (ok) break
    if (Date.now() > deadline) throw new Error('nginx did not answer within 15 s')
    await new Promise((wake) => setTimeout(wake, 100))
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    config,
    accessLog: () => readFile(join(dir, 'access.log'), 'utf8'),
  }
}

/** nginx's main configuration for a test run: foreground, one process, everything in `dir`. */
function mainConfig(dir: string, site: string): string {
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  log_format replica '$request_method $status $upstream_addr $sent_http_x_keel_replica';
  access_log ${dir}/access.log replica;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
${site}
}
`
}

export interface Cluster {
  redis: RedisServer
  replicas: Replica[]
  nginx: Nginx
}

/**
 * Redis, `count` replicas sharing it, and round-robin nginx in front: the deployment
 * docs/deploying.md describes. Stopped by `stopAll`.
 */
export async function startCluster(
  count = 3,
  options: Omit<Parameters<typeof startReplicas>[1], 'redisUrl'> = {},
): Promise<Cluster> {
  const redis = await startRedis()
  const replicas = await startReplicas(count, { ...options, redisUrl: redis.url })
  const nginx = await startNginx(replicas.map((replica) => replica.port))
  return { redis, replicas, nginx }
}

/** The upstream and server blocks of docs/deploying.md, on loopback. */
export function siteConfig(port: number, upstreams: string[]): string {
  return `
  upstream mcp {
${upstreams.map((upstream) => `    server ${upstream} max_fails=1 fail_timeout=30s;`).join('\n')}
  }

  server {
    listen 127.0.0.1:${port};
    client_max_body_size 4m;

    location / {
      proxy_pass http://mcp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_buffering off;
      proxy_cache off;
      proxy_read_timeout 1h;
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries 3;
    }
  }
`
}
