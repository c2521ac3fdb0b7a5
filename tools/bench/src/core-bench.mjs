// Core's own per-call cost: a Keel server with one no-op tool against the SDK's plain server with
// the same tool (baselines/), both over stdio, alternated. What is left between them is core's
// per-call path: argument validation, signal and timeout, log plumbing, output cap, projection.
// The same Keel server runs twice: with core's stdio fast path (the default) and without it
// (KEEL_FAST_PATH=0: every message through the SDK), so the fast path's share is an A/B of one run.

import { existsSync } from 'node:fs'
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { compareServers } from './harness.mjs'
import { startOtlpSink } from './rpc.mjs'

const baseline = (name) => fileURLToPath(new URL(`./baselines/${name}`, import.meta.url))
const call = { name: 'noop', arguments: { text: 'hello' } }
/** The SDK's plain no-op server: the reference of the core suite and of its yardsticks. */
const sdkNoop = {
  label: 'SDK no-op',
  command: process.execPath,
  args: [baseline('sdk-noop.mjs')],
  call,
  reference: true,
}
const FS_BIN = fileURLToPath(new URL('../../../servers/fs/dist/index.js', import.meta.url))

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
    sdkNoop,
    // The reference servers' SDK generation, for context: not the goal's baseline.
    { label: 'SDK v1 no-op', command: process.execPath, args: [baseline('sdk-v1-noop.mjs')], call },
    // The same Keel server to a 2026-07-28 client (each request carries its version and
    // capabilities; core's fast path serves 2025-era connections only).
    {
      label: 'keel no-op, 2026-07-28 client',
      command: process.execPath,
      args: [baseline('keel-noop.mjs')],
      call,
      era: 'modern',
    },
    {
      label: 'SDK no-op, 2026-07-28 client',
      command: process.execPath,
      args: [baseline('sdk-noop.mjs')],
      call,
      era: 'modern',
    },
  ]
}

/**
 * What the operations flags cost a warm call (issues #28, #29): the same server plain, with metrics
 * only, with metrics and OpenTelemetry spans exported to a loopback sink (every span recorded, the
 * SDK's default sampler; sampled off; one trace in ten), and with an audit log and a rate limit
 * (never reached); sequential and with 8 calls in flight.
 * Twice: on the
 * no-op (the harshest base: core's floor) and on a real server's warm call, Keel fs's
 * `read_text_file` of 1 KiB (its built bin). Goal (#28): each ≤ 1.05× the plain server's CPU per call.
 * Then the official OpenTelemetry SDK alone on the SDK's plain server (baselines/sdk-noop-otel.mjs):
 * what one recorded span costs a call with no Keel code, the floor under "every span recorded"; and
 * the same server with an audit line a call written through a write stream
 * (baselines/sdk-noop-audit.mjs), the yardstick for the audit log. The
 * same flags on a call with upstream work (GitHub `get_issue`) are in the github suite.
 */
/** Calls each process serves before the steady-state operations tables measure it. */
const OPS_STEADY_WARMUP = Number(process.env.BENCH_OPS_STEADY_WARMUP ?? 3000)

async function operationsCost() {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'keel-bench-ops-')))
  const sink = await startOtlpSink()
  const { endpoint } = sink
  const traced = ['--metrics-port', '0', '--otel-endpoint', endpoint]
  const flagSets = (slug) => [
    ['metrics', ['--metrics-port', '0']],
    ['metrics + OpenTelemetry', traced],
    // Sampling as a busy deployment would (the standard variable, read by the SDK): no trace
    // recorded, the OpenTelemetry metrics still are.
    ['metrics + OpenTelemetry, sampled off', traced, { OTEL_TRACES_SAMPLER: 'always_off' }],
    // One trace in ten recorded (the standard ratio sampler).
    [
      'metrics + OpenTelemetry, sampled 1 in 10',
      traced,
      { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
    ],
    [
      'audit log + rate limit',
      ['--audit-log', join(dir, `${slug}-audit.jsonl`), '--rate-limit', '1000000/s'],
    ],
  ]
  const compare = async (title, slug, base, warmCall, plainLabel, options = {}) => {
    const contenders = [
      ...flagSets(slug).map(([label, flags, env]) => ({
        label,
        command: process.execPath,
        args: [...base, ...flags],
        call: warmCall,
        ...(env ? { env } : {}),
      })),
      { label: plainLabel, command: process.execPath, args: base, call: warmCall, reference: true },
    ]
    const [metrics, spans, unsampled, tenth, audited, plain] = await compareServers(
      title,
      contenders,
      options,
    )
    const ratio = (figures, pick) => (pick(figures) / pick(plain)).toFixed(2)
    const line = (label, figures) =>
      `${label}: CPU per call ${ratio(figures, (f) => f.cpu)}× (+${(figures.cpu - plain.cpu).toFixed(3)} ms), p50 ${ratio(figures, (f) => f.p50)}×, CPU per call at 8 in flight ${ratio(figures, (f) => f.cpuInflight)}×`
    console.log(
      `\nGoal (#28): operations on ≤ 1.05× a warm call${options.warmup ? ` after ${options.warmup} calls` : ''} (${plainLabel}: ${plain.cpu.toFixed(3)} ms server CPU a call, ${plain.cpuInflight.toFixed(3)} ms at 8 in flight). ${line('Metrics', metrics)}; ${line('metrics + OpenTelemetry spans', spans)}; ${line('the same sampled off', unsampled)}; ${line('sampled 1 in 10', tenth)}; ${line('audit log + rate limit', audited)}.`,
    )
    return { spans, audited, plain }
  }
  // Two yardsticks on the SDK's plain no-op server, no Keel code, against the same server without
  // them: the official OpenTelemetry SDK alone (one span recorded a call by the SDK's tracer, batch
  // processor and OTLP/HTTP exporter, to the same sink), the floor under "every span recorded"; and
  // one audit line a call written the common way (the record JSON.stringify'd and appended through
  // an fs write stream), the yardstick for the audit log. The lines below set both beside a warm fs
  // call of the same run.
  const yardsticks = async (steady, fs) => {
    const [sdkSpan, sdkAudit, sdkPlain] = await compareServers(
      `core: the SDK no-op with one span a call recorded by the official OpenTelemetry SDK alone, and with one audit line a call written through a write stream, steady state (${OPS_STEADY_WARMUP} calls first)`,
      [
        {
          label: 'SDK no-op + official SDK span',
          command: process.execPath,
          args: [baseline('sdk-noop-otel.mjs'), endpoint],
          call,
        },
        {
          label: 'SDK no-op + audit line (write stream)',
          command: process.execPath,
          args: [baseline('sdk-noop-audit.mjs'), join(dir, 'sdk-audit.jsonl')],
          call,
        },
        sdkNoop,
      ],
      steady,
    )
    const added = sdkSpan.cpu - sdkPlain.cpu
    const inflight = sdkSpan.cpuInflight - sdkPlain.cpuInflight
    const fsPart = fs
      ? `; against keel fs's warm call in this run (${fs.plain.cpu.toFixed(3)} ms, with every span recorded +${(fs.spans.cpu - fs.plain.cpu).toFixed(3)} ms) the official SDK's span alone is ${((added / fs.plain.cpu) * 100).toFixed(0)} % of a call, against the goal's 5 %`
      : ''
    console.log(
      `\nThe official SDK's own recorded span (#28's floor): +${added.toFixed(3)} ms server CPU a call (${(sdkSpan.cpu / sdkPlain.cpu).toFixed(2)}× the SDK no-op's ${sdkPlain.cpu.toFixed(3)} ms), +${inflight.toFixed(3)} ms at 8 in flight${fsPart}.`,
    )
    const line = sdkAudit.cpu - sdkPlain.cpu
    const fsAudit = fs
      ? `; keel fs's audit log with a rate limit in this run: +${(fs.audited.cpu - fs.plain.cpu).toFixed(3)} ms (${(fs.audited.cpu / fs.plain.cpu).toFixed(2)}×), where a line written the common way would be ${((line / fs.plain.cpu) * 100).toFixed(0)} % of that call`
      : ''
    console.log(
      `\nAn audit line a call written through a write stream (the audit log's yardstick): +${line.toFixed(3)} ms server CPU a call (${(sdkAudit.cpu / sdkPlain.cpu).toFixed(2)}× the SDK no-op), +${(sdkAudit.cpuInflight - sdkPlain.cpuInflight).toFixed(3)} ms at 8 in flight${fsAudit}.`,
    )
  }
  try {
    // Each process is warmed with the harness's 100 calls (a young process: what a flag adds may
    // not be optimized yet), then again with OPS_STEADY_WARMUP calls (a long-running server's
    // steady state). Both are reported; neither hides the other.
    // A steady-state call costs a third of a young one: more calls a round keep the CPU figure
    // above the noise.
    const steady = { warmup: OPS_STEADY_WARMUP, calls: 2000, inflightCalls: 4000 }
    const noop = [baseline('keel-noop.mjs')]
    await compare('core: operations on', 'noop', noop, call, 'keel no-op (all off)')
    await compare(
      `core: operations on, steady state (${OPS_STEADY_WARMUP} calls first)`,
      'noop-steady',
      noop,
      call,
      'keel no-op (all off)',
      steady,
    )
    if (existsSync(FS_BIN)) {
      const file = join(dir, 'one-kib.txt')
      await writeFile(file, '0123456789abcde\n'.repeat(64))
      const read = { name: 'read_text_file', arguments: { path: file } }
      await compare(
        'core: operations on, fs read_text_file 1 KiB',
        'fs',
        [FS_BIN, dir],
        read,
        'keel fs (all off)',
      )
      const fs = await compare(
        `core: operations on, fs read_text_file 1 KiB, steady state (${OPS_STEADY_WARMUP} calls first)`,
        'fs-steady',
        [FS_BIN, dir],
        read,
        'keel fs (all off)',
        steady,
      )
      await yardsticks(steady, fs)
    } else {
      console.log('\n(servers/fs is not built: the operations table on fs read_text_file is left out)')
      await yardsticks(steady)
    }
  } finally {
    sink.close()
    await rm(dir, { recursive: true, force: true })
  }
}

export async function run() {
  await operationsCost()
  const [keel, off, sdk, v1, modern, sdkModern] = await compareServers('core', contenders())
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
  console.log(
    `2026-07-28 client ÷ 2025 client, same Keel server: CPU per call ${(modern.cpu / keel.cpu).toFixed(2)}×, p50 ${(modern.p50 / keel.p50).toFixed(2)}×, calls/s at 8 in flight ${(modern.rate / keel.rate).toFixed(2)}×. Keel ÷ SDK no-op, both to a 2026-07-28 client: CPU per call ${(modern.cpu / sdkModern.cpu).toFixed(2)}×, p50 ${(modern.p50 / sdkModern.p50).toFixed(2)}×.`,
  )
}
