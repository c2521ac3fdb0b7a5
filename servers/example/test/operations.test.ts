import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import {
  type Connection,
  connectStdio,
  type ModuleLoadRecorder,
  recordModuleLoads,
  runProcess,
  spawnRaw,
  startOtlpReceiver,
} from '@keel-mcp/core/testing'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

// The operations flags on a stdio server (the template every server is made from): rate limits
// answered as tool errors, metrics and readiness on a port of their own, and nothing of it —
// least of all OpenTelemetry — loaded unless a flag asks for it.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const open: Connection[] = []
let recorder: ModuleLoadRecorder
beforeAll(async () => {
  recorder = await recordModuleLoads()
})
afterAll(async () => {
  await recorder?.dispose()
})
afterEach(async () => {
  await Promise.all(open.splice(0).map((connection) => connection.close()))
})

const textOf = (result: Record<string, any>) =>
  (result.content as Array<{ text?: string }>).map((block) => block.text ?? '').join('\n')

/** The modules a bin run with `args` loaded (the recorder's log holds every earlier run's too). */
async function loadedWith(args: string[], env: Record<string, string> = {}): Promise<string[]> {
  const before = (await recorder.loaded()).length
  const raw = spawnRaw(process.execPath, [...recorder.args, BIN, ...args], {
    env: { ...recorder.env, ...env },
  })
  await raw.initialize()
  const called = await raw.request('tools/call', { name: 'add_note', arguments: { title: 'a', body: 'b' } })
  expect(called.result?.isError ?? false).toBe(false)
  const { code } = await raw.end()
  expect(code).toBe(0)
  return (await recorder.loaded()).slice(before)
}

describe('operations on a stdio server', () => {
  it('loads no OpenTelemetry (and no observer) unless a flag asks, and the OpenTelemetry SDK only for --otel-endpoint', async () => {
    const plain = await loadedWith([])
    expect(plain.filter((file) => /otel|opentelemetry/i.test(file))).toEqual([])
    const metricsOnly = await loadedWith(['--metrics-port', '0'])
    expect(metricsOnly.filter((file) => /otel|opentelemetry/i.test(file))).toEqual([])
    // A collector that is not there: export fails quietly; the OpenTelemetry SDK did load.
    let sink: Server | undefined
    try {
      sink = createServer((_req, res) => res.end('{}'))
      await new Promise<void>((resolve) => sink?.listen(0, '127.0.0.1', resolve))
      const endpoint = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`
      const traced = await loadedWith(['--otel-endpoint', endpoint])
      expect(traced.filter((file) => /otel-sdk\.vendor\.js$/.test(file)).length).toBeGreaterThan(0)
      // The standard switch turns it all off again: no observer, no SDK.
      const disabled = await loadedWith(['--otel-endpoint', endpoint], { OTEL_SDK_DISABLED: 'true' })
      expect(
        disabled.filter((file) => !file.startsWith('node:') && /otel|opentelemetry|observe/i.test(file)),
      ).toEqual([])
    } finally {
      sink?.close()
    }
  })

  it('answers calls over the budget with a rate_limited tool error naming the wait, and spares other methods', async () => {
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN, '--rate-limit', '1/m', '--rate-limit-burst', '2'],
    })
    open.push(connection)
    const { client } = connection
    const call = () => client.callTool({ name: 'add_note', arguments: { title: 't', body: 'b' } })
    expect((await call()).isError ?? false).toBe(false)
    expect((await call()).isError ?? false).toBe(false)
    const refused = await call()
    expect(refused.isError).toBe(true)
    expect(textOf(refused)).toMatch(/^rate_limited: Too many calls: the call rate limit allows more in \d+ s/)
    expect(textOf(refused)).toMatch(/Hint: Wait \d+ s before calling again/)
    expect((await client.listTools()).tools.length).toBe(3)
  })

  it('keeps a separate, tighter budget for tools that write', async () => {
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN, '--rate-limit', '100/s', '--write-rate-limit', '1/m'],
    })
    open.push(connection)
    const { client } = connection
    expect(
      (await client.callTool({ name: 'add_note', arguments: { title: 't', body: 'b' } })).isError ?? false,
    ).toBe(false)
    const refused = await client.callTool({ name: 'add_note', arguments: { title: 't2', body: 'b' } })
    expect(textOf(refused)).toMatch(/^rate_limited: Too many calls: the write rate limit/)
    // Reading is not writing: served from the general budget.
    const read = await client.callTool({ name: 'search_notes', arguments: { query: 't' } })
    expect(read.isError ?? false).toBe(false)
  })

  it('exports OTLP protobuf when OTEL_EXPORTER_OTLP_PROTOCOL asks, and refuses grpc as a configuration error', async () => {
    const receiver = await startOtlpReceiver()
    try {
      const raw = spawnRaw(process.execPath, [BIN, '--otel-endpoint', receiver.url], {
        env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_METRIC_EXPORT_INTERVAL: '60000' },
      })
      await raw.initialize()
      const called = await raw.request('tools/call', {
        name: 'add_note',
        arguments: { title: 'a', body: 'b' },
      })
      expect(called.result?.isError ?? false).toBe(false)
      // The spans and metrics leave at shutdown, if not before.
      expect((await raw.end()).code).toBe(0)
      expect([...(receiver.contentTypes.get('/v1/traces') ?? [])]).toEqual(['application/x-protobuf'])
      expect([...(receiver.contentTypes.get('/v1/metrics') ?? [])]).toEqual(['application/x-protobuf'])
      const call = receiver.spans.find((span) => span.name === 'tools/call add_note')
      expect(call, receiver.spans.map((span) => span.name).join(', ')).toMatchObject({
        kind: 2,
        attributes: {
          'gen_ai.tool.name': 'add_note',
          'keel.tool.outcome': 'ok',
          'network.transport': 'pipe',
        },
        resource: { 'service.name': 'mcp-server-example' },
      })
      expect(call?.traceId).toMatch(/^[0-9a-f]{32}$/)
      expect(receiver.histograms.get('mcp.server.operation.duration')?.[0]?.count).toBe(1)

      const refused = await runProcess(process.execPath, [BIN, '--otel-endpoint', receiver.url], {
        env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      })
      expect(refused.code).toBe(1)
      expect(refused.stdout).toBe('')
      expect(refused.stderr).toMatch(
        /^mcp-server-example: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: .*4318/m,
      )
    } finally {
      await receiver.close()
    }
  })

  it('serves /metrics and /readyz on --metrics-port, with the calls made over stdio', async () => {
    let stderr = ''
    const connection = await connectStdio({
      command: process.execPath,
      args: [BIN, '--metrics-port', '0', '--tool-timeout', '200'],
      onStderr: (chunk) => {
        stderr += chunk
      },
    })
    open.push(connection)
    await connection.client.callTool({ name: 'add_note', arguments: { title: 'x', body: 'y' } })
    // Counting to 100 at 50 ms a step outlasts the 200 ms limit: a timeout.
    await connection.client.callTool({ name: 'count_slowly', arguments: { n: 100, interval_ms: 50 } })
    const port = /metrics at http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(stderr)?.[1]
    expect(port, stderr).toBeDefined()
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    expect(metrics).toContain('mcp_tool_calls_total{tool="add_note",outcome="ok"} 1')
    expect(metrics).toContain('mcp_tool_calls_total{tool="count_slowly",outcome="timeout"} 1')
    expect(metrics).toContain('mcp_tool_errors_total{tool="count_slowly",kind="timeout"} 1')
    expect(metrics).toContain('mcp_requests_total{method="tools/call",outcome="ok"} 2')
    expect(metrics).toContain('mcp_tool_call_duration_seconds_count{tool="add_note"} 1')
    expect(metrics).toMatch(/^process_resident_memory_bytes \d+$/m)
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({ status: 'ready', checks: {} })
    expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404)
  })
})
