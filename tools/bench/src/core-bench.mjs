// Core's own per-call cost: a Keel server with one no-op tool against the SDK's plain server with
// the same tool (baselines/), both over stdio, alternated. What is left between them is core's
// per-call path: argument validation, signal and timeout, log plumbing, output cap, projection.
// The same Keel server runs twice: with core's stdio fast path (the default) and without it
// (KEEL_FAST_PATH=0: every message through the SDK), so the fast path's share is an A/B of one run.

import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { compareServers } from './harness.mjs'

const baseline = (name) => fileURLToPath(new URL(`./baselines/${name}`, import.meta.url))
const call = { name: 'noop', arguments: { text: 'hello' } }

export function contenders() {
  return [
    { label: 'keel no-op', command: process.execPath, args: [baseline('keel-noop.mjs')], call },
    {
      label: 'keel no-op, fast path off',
      command: process.execPath,
      args: [baseline('keel-noop.mjs')],
      env: { KEEL_FAST_PATH: '0' },
      call,
    },
    {
      label: 'SDK no-op',
      command: process.execPath,
      args: [baseline('sdk-noop.mjs')],
      call,
      reference: true,
    },
    // The reference servers' SDK generation, for context: not the goal's baseline.
    { label: 'SDK v1 no-op', command: process.execPath, args: [baseline('sdk-v1-noop.mjs')], call },
  ]
}

/**
 * What the operations flags cost a warm call: the same no-op server plain, with metrics, an audit
 * log and a rate limit (never reached), and with OpenTelemetry spans exported to a loopback sink.
 * Goal: ≤ 1.05× the plain server's CPU per call and p50.
 */
async function operationsCost() {
  const dir = await mkdtemp(join(tmpdir(), 'keel-bench-ops-'))
  const sink = createServer((request, response) => {
    request.resume()
    request.on('end', () => response.end('{}'))
  })
  await new Promise((resolve) => sink.listen(0, '127.0.0.1', resolve))
  const endpoint = `http://127.0.0.1:${sink.address().port}`
  try {
    const server = baseline('keel-noop.mjs')
    const [metered, traced, plain] = await compareServers('core: operations on', [
      {
        label: 'metrics + audit + rate limit',
        command: process.execPath,
        args: [
          server,
          '--metrics-port',
          '0',
          '--audit-log',
          join(dir, 'audit.jsonl'),
          '--rate-limit',
          '1000000/s',
        ],
        call,
      },
      {
        label: '+ OpenTelemetry',
        command: process.execPath,
        args: [server, '--metrics-port', '0', '--otel-endpoint', endpoint],
        call,
      },
      { label: 'keel no-op (all off)', command: process.execPath, args: [server], call, reference: true },
    ])
    console.log(
      `\nGoal: operations on ≤ 1.05× a warm call. Metrics, audit and a rate limit: CPU per call ${(metered.cpu / plain.cpu).toFixed(2)}×, p50 ${(metered.p50 / plain.p50).toFixed(2)}×; with OpenTelemetry spans: CPU ${(traced.cpu / plain.cpu).toFixed(2)}×, p50 ${(traced.p50 / plain.p50).toFixed(2)}×.`,
    )
  } finally {
    sink.close()
    await rm(dir, { recursive: true, force: true })
  }
}

export async function run() {
  await operationsCost()
  const [keel, off, sdk, v1] = await compareServers('core', contenders())
  console.log(
    `\nGoal: keel no-op ≤ 1.5× the SDK no-op. CPU per call ${(keel.cpu / sdk.cpu).toFixed(2)}×, p50 ${(keel.p50 / sdk.p50).toFixed(2)}×.`,
  )
  console.log(
    `Issue #29: keel no-op against the SDK v1 no-op (the reference servers' generation): CPU per call ${(keel.cpu / v1.cpu).toFixed(2)}×, p50 ${(keel.p50 / v1.p50).toFixed(2)}×, calls/s at 8 in flight ${(keel.rate / v1.rate).toFixed(2)}×.`,
  )
  console.log(
    `Fast path on ÷ off (KEEL_FAST_PATH=0), same server: CPU per call ${(keel.cpu / off.cpu).toFixed(2)}×, p50 ${(keel.p50 / off.p50).toFixed(2)}×, calls/s at 8 in flight ${(keel.rate / off.rate).toFixed(2)}×.`,
  )
  console.log(
    `SDK v2 against v1 (the reference servers' generation), same tool: CPU per call ${(sdk.cpu / v1.cpu).toFixed(2)}×, p50 ${(sdk.p50 / v1.p50).toFixed(2)}×.`,
  )
}
