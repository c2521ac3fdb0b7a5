import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// A real Prometheus (Debian's package) scraping servers' /metrics on loopback every second.

export const PROMETHEUS = process.env.PROMETHEUS_BIN ?? '/usr/bin/prometheus'

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
}

export interface Prometheus {
  url: string
  /** Runs an instant query; the result vector. */
  query(expression: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>
  /** Polls `expression` until `accept` holds for its result (bounded). */
  until(
    expression: string,
    accept: (result: Array<{ metric: Record<string, string>; value: [number, string] }>) => boolean,
    timeoutMs?: number,
  ): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>
  stop(): Promise<void>
}

export async function startPrometheus(targets: Record<string, string>): Promise<Prometheus> {
  const dir = await mkdtemp(join(tmpdir(), 'keel-prometheus-'))
  const port = await freePort()
  const jobs = Object.entries(targets)
    .map(
      ([job, target]) => `  - job_name: ${job}
    metrics_path: /metrics
    static_configs:
      - targets: ['${target}']`,
    )
    .join('\n')
  await writeFile(
    join(dir, 'prometheus.yml'),
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n${jobs}\n`,
  )
  const child: ChildProcess = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = `${stderr}${chunk}`.slice(-4000)
  })
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited: ${stderr}`)
    const ready = await fetch(`${url}/-/ready`).then(
      (response) => response.ok,
      () => false,
    )
    if (ready) break
    if (Date.now() > deadline) throw new Error(`prometheus was not ready within 30 s: ${stderr}`)
    await new Promise((wake) => setTimeout(wake, 200))
  }
  const query: Prometheus['query'] = async (expression) => {
    const response = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expression)}`)
    const body = (await response.json()) as { status: string; data: { result: never[] }; error?: string }
    if (body.status !== 'success') throw new Error(`query ${expression}: ${body.error}`)
    return body.data.result
  }
  return {
    url,
    query,
    async until(expression, accept, timeoutMs = 30_000) {
      const end = Date.now() + timeoutMs
      let last: Awaited<ReturnType<typeof query>> = []
      while (Date.now() < end) {
        last = await query(expression)
        if (accept(last)) return last
        await new Promise((wake) => setTimeout(wake, 500))
      }
      throw new Error(`${expression} never matched; last result: ${JSON.stringify(last)}`)
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        await new Promise((resolve) => child.once('exit', resolve))
      }
      await rm(dir, { recursive: true, force: true })
    },
  }
}
