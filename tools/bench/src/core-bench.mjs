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
 * What the operations flags cost a warm call (issues #28, #29): the same no-op server plain, with
 * metrics only, with metrics and OpenTelemetry spans exported to a loopback sink, and with an
 * audit log and a rate limit (never reached). Goal (#28): metrics and OpenTelemetry on ≤ 1.05×
 * the plain server's CPU per call and p50.
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
    const contender = (label, flags, extra = {}) => ({
      label,
      command: process.execPath,
      args: [server, ...flags],
      call,
      ...extra,
    })
    const [metrics, traced, audited, plain] = await compareServers('core: operations on', [
      contender('metrics', ['--metrics-port', '0']),
      contender('metrics + OpenTelemetry', ['--metrics-port', '0', '--otel-endpoint', endpoint]),
      contender('audit log + rate limit', [
        '--audit-log',
        join(dir, 'audit.jsonl'),
        '--rate-limit',
        '1000000/s',
      ]),
      contender('keel no-op (all off)', [], { reference: true }),
    ])
    const ratio = (figures, pick) => (pick(figures) / pick(plain)).toFixed(2)
    const line = (label, figures) =>
      `${label}: CPU per call ${ratio(figures, (f) => f.cpu)}× (+${(figures.cpu - plain.cpu).toFixed(3)} ms), p50 ${ratio(figures, (f) => f.p50)}×`
    console.log(
      `\nGoal (#28): metrics and OpenTelemetry on ≤ 1.05× a warm call. ${line('Metrics', metrics)}; ${line('metrics + OpenTelemetry spans', traced)}; ${line('audit log + rate limit', audited)}.`,
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
