#!/usr/bin/env node
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { startCluster, stopAll } from './harness.js'

// A local cluster: redis-server, replicas of a server bin sharing it, and nginx in front, all on
// loopback. Logs the nginx URL as core logs its own (`serving MCP over Streamable HTTP at …`), so
// anything that starts a server bin (the conformance runner) can start a whole cluster instead.
// Stops everything on SIGTERM or SIGINT.
//
//   node dist/cluster.js [--replicas 3] [--bin <server bin>] [-- <server args…>]
//
// `--transport` and `--port` are accepted and ignored (the cluster always serves HTTP through nginx).

const separator = process.argv.indexOf('--', 2)
const own = separator === -1 ? process.argv.slice(2) : process.argv.slice(2, separator)
const serverArgs = separator === -1 ? [] : process.argv.slice(separator + 1)
const { values } = parseArgs({
  args: own,
  options: {
    replicas: { type: 'string', default: '3' },
    bin: { type: 'string' },
    transport: { type: 'string' },
    port: { type: 'string' },
  },
  strict: true,
})
const count = Number(values.replicas)
if (!Number.isInteger(count) || count < 1 || count > 16) {
  process.stderr.write('cluster: --replicas must be a whole number from 1 to 16\n')
  process.exit(2)
}

let stopping = false
async function stop(code: number) {
  if (stopping) return
  stopping = true
  await stopAll()
  process.exit(code)
}
process.once('SIGTERM', () => void stop(0))
process.once('SIGINT', () => void stop(0))

async function start() {
  const { redis, replicas, nginx } = await startCluster(count, {
    args: serverArgs,
    ...(values.bin ? { bin: resolve(values.bin) } : {}),
  })
  process.stderr.write(
    `serving MCP over Streamable HTTP at ${nginx.url} (nginx, ${count} replicas: ${replicas
      .map((replica) => replica.url)
      .join(' ')}; Redis ${redis.url})\n`,
  )
}

start().catch(async (error: unknown) => {
  process.stderr.write(`cluster: cannot start: ${(error as Error).message}\n`)
  await stop(1)
})
