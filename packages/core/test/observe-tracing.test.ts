import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../src/logger.js'
import { hashId, Observer } from '../src/observe/observer.js'
import { DURATION_BOUNDARIES, PooledIdGenerator, startTracing } from '../src/observe/otel.js'
import { type ObserveConfig, otelExports } from '../src/observe-config.js'
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../src/testing/otlp-receiver.js'
import { callStart, observeConfig } from './observe-fixture.js'

// The observer with OpenTelemetry spans, exported over OTLP/HTTP (JSON) to a loopback receiver:
// which requests are spans, which context each runs in, and whose child each upstream request is.

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT_SPAN = '00f067aa0ba902b7'
/** A client's W3C trace context whose trace is not sampled (flags 00). */
const NOT_SAMPLED = `00-${TRACE_ID}-${PARENT_SPAN}-00`
const SERVER = 2
const CLIENT = 3

let receiver: OtlpReceiver
let upstream: Server
let upstreamUrl = ''

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

beforeAll(async () => {
  receiver = await startOtlpReceiver()
  upstream = createServer((_req, res) => res.end('{}'))
  upstreamUrl = await listen(upstream)
})

afterAll(async () => {
  await receiver.close()
  await new Promise((resolve) => upstream.close(resolve))
})

const config = (): ObserveConfig => observeConfig({ otelEndpoint: receiver.url })

const start = callStart()

/** Runs `scenario` against an observer with tracing; returns the spans it exported (all of them, at close). */
async function traced(
  scenario: (watching: Observer) => Promise<void>,
  endpoints: { endpoint?: string; tracesEndpoint?: string; metricsEndpoint?: string } = {
    endpoint: receiver.url,
  },
): Promise<ReceivedSpan[]> {
  receiver.clear()
  const logger = createLogger({ name: 'x', level: 'error' })
  const tracing = await startTracing({
    ...endpoints,
    serviceName: 'x',
    serviceVersion: '1.0.0',
    logger,
    metricIntervalMs: 60_000,
  })
  const watching = new Observer({
    config: config(),
    serviceName: 'x',
    serviceVersion: '1.0.0',
    logger,
    limiter: undefined,
    tracing,
  })
  try {
    await scenario(watching)
  } finally {
    await watching.close()
  }
  return [...receiver.spans]
}

/** One tools/call request as the stdio transport serves it: the request observed, its call inside. */
async function serve(
  watching: Observer,
  id: number,
  work: () => Promise<unknown>,
  meta?: Record<string, string>,
  handle?: string,
): Promise<void> {
  const request = watching.request({
    method: 'tools/call',
    id,
    transport: 'stdio',
    params: { name: 'read', arguments: {}, ...(meta ? { _meta: meta } : {}) },
  })
  await request.run(async () => {
    const call = watching.call(start)
    await call.run(work)
    call.end({ outcome: 'ok', resultBytes: 0, ...(handle ? { handle } : {}) })
  })
  request.end()
}

const get = async (path: string) => (await fetch(`${upstreamUrl}${path}`)).text()

describe('the observer with OpenTelemetry spans', () => {
  it('makes no span of a request whose trace is not sampled, nor of anything in it, and counts it all', async () => {
    let entered: boolean | undefined
    const exported = await traced(async (watching) => {
      await serve(
        watching,
        1,
        async () => {
          await get('/unsampled')
          await watching.upstream('postgresql', 'query', async () => {
            entered = watching.contextEntered
          })
        },
        { traceparent: NOT_SAMPLED },
      )
      expect(watching.calls.get({ tool: 'read', outcome: 'ok' })).toBe(1)
      expect(watching.upstreamCalls.get({ system: 'postgresql', outcome: 'ok' })).toBe(1)
      expect(watching.upstreamCalls.get({ system: `http:${new URL(upstreamUrl).host}`, outcome: 'ok' })).toBe(
        1,
      )
    })
    // An upstream call outside a recorded span is never a span of its own (a root).
    expect(exported).toEqual([])
    expect(entered).toBe(false)
    // OpenTelemetry's metrics count every call, sampled or not (exported at close).
    expect(receiver.histograms.get('mcp.server.operation.duration')).toEqual([
      expect.objectContaining({
        attributes: { 'gen_ai.tool.name': 'read', 'keel.tool.outcome': 'ok' },
        count: 1,
      }),
    ])
    expect(
      receiver.histograms
        .get('keel.upstream.duration')
        ?.map((point) => [point.attributes['keel.upstream.system'], point.count])
        .sort(),
    ).toEqual([
      [`http:${new URL(upstreamUrl).host}`, 1],
      ['postgresql', 1],
    ])
  })

  it('exports the duration histograms with the MCP conventions’ buckets, cumulative, kept per tool and outcome', async () => {
    await traced(async (watching) => {
      for (const outcome of ['ok', 'ok', 'error']) {
        const call = watching.call({ ...start, transport: 'memory' })
        await call.run(async () => {})
        call.end({ outcome, resultBytes: 0 })
      }
    })
    const points = receiver.histograms.get('mcp.server.operation.duration') ?? []
    expect(points.map((point) => [point.attributes['keel.tool.outcome'], point.count]).sort()).toEqual([
      ['error', 1],
      ['ok', 2],
    ])
    for (const point of points) {
      expect(point.explicitBounds).toEqual(DURATION_BOUNDARIES)
      expect(point.bucketCounts).toHaveLength(DURATION_BOUNDARIES.length + 1)
      expect(point.bucketCounts.reduce((sum, count) => sum + count, 0)).toBe(point.count)
      expect(point.sum).toBeGreaterThanOrEqual(0)
      expect(point.temporality).toBe(2) // cumulative
    }
  })

  it('runs a request alone in no context, with its call on its span and its upstream requests as children', async () => {
    const entered: boolean[] = []
    let after: boolean | undefined
    const exported = await traced(async (watching) => {
      await serve(watching, 1, async () => {
        entered.push(watching.contextEntered)
        await get('/alone')
        entered.push(watching.contextEntered)
        await watching.upstream('postgresql', 'query', async () => {
          entered.push(watching.contextEntered)
          await get('/inside')
        })
      })
      after = watching.contextEntered
    })
    expect(entered).toEqual([false, false, true])
    expect(after).toBe(false)
    const request = exported.find((span) => span.kind === SERVER)
    expect(request).toMatchObject({
      name: 'tools/call read',
      parentSpanId: undefined,
      attributes: {
        'mcp.method.name': 'tools/call',
        'jsonrpc.request.id': '1',
        'network.transport': 'pipe',
        'gen_ai.tool.name': 'read',
        'gen_ai.operation.name': 'execute_tool',
        'mcp.protocol.generation': '2025',
        'mcp.session.id': hashId('session-1'),
        'keel.tool.outcome': 'ok',
      },
    })
    const query = exported.find((span) => span.name === 'postgresql query')
    const byPath = (path: string) => exported.find((span) => span.attributes['url.path'] === path)
    expect(byPath('/alone')).toMatchObject({ kind: CLIENT, parentSpanId: request?.spanId })
    expect(query).toMatchObject({ kind: CLIENT, parentSpanId: request?.spanId })
    expect(byPath('/inside')).toMatchObject({ kind: CLIENT, parentSpanId: query?.spanId })
    expect(exported).toHaveLength(4)
  })

  it('records the state handle a call was bound to as a hash on its span, never the handle', async () => {
    const handle = 'session.Zq81mKp0wLr7Tt3vXy5B'
    const exported = await traced(async (watching) => {
      await serve(watching, 1, async () => {}, undefined, handle)
      await serve(watching, 2, async () => {})
    })
    const [first, second] = exported.filter((span) => span.kind === SERVER)
    expect(first?.attributes['keel.handle.id']).toBe(hashId(handle))
    expect(second?.attributes['keel.handle.id']).toBeUndefined()
    expect(JSON.stringify(exported)).not.toContain(handle)
  })

  it('gives requests that overlap a context each: every upstream request is its own call’s child, or nobody’s when not sampled', async () => {
    let during: boolean | undefined
    let later: boolean[] = []
    const exported = await traced(async (watching) => {
      let release = () => {}
      const gate = new Promise<void>((resolve) => {
        release = resolve
      })
      // The first runs alone (no context); the others begin while it waits.
      const first = serve(watching, 1, async () => {
        await get('/first-before')
        await gate
        await get('/first-after')
      })
      await new Promise((resolve) => setTimeout(resolve, 20))
      await Promise.all([
        serve(watching, 2, async () => {
          during = watching.contextEntered
          await get('/second')
        }),
        serve(watching, 3, () => get('/unsampled'), { traceparent: NOT_SAMPLED }),
      ])
      release()
      await first
      // Nothing runs: the context is off again, and a request alone enters none.
      later.push(watching.contextEntered)
      await serve(watching, 4, async () => {
        later.push(watching.contextEntered)
        await get('/fourth')
      })
      later = [...later, watching.contextEntered]
    })
    expect(during).toBe(true)
    expect(later).toEqual([false, false, false])
    const requestOf = (id: string) =>
      exported.find((span) => span.kind === SERVER && span.attributes['jsonrpc.request.id'] === id)
    const byPath = (path: string) => exported.filter((span) => span.attributes['url.path'] === path)
    expect(requestOf('3')).toBeUndefined()
    expect(byPath('/unsampled')).toEqual([])
    for (const [path, id] of [
      ['/first-before', '1'],
      ['/first-after', '1'],
      ['/second', '2'],
      ['/fourth', '4'],
    ] as const) {
      expect(byPath(path), path).toHaveLength(1)
      expect(byPath(path)[0]?.parentSpanId, path).toBe(requestOf(id)?.spanId)
    }
    expect(exported).toHaveLength(7)
  })

  it('runs requests that are not sampled in no context however many overlap; a recorded one among them enters its own, and the context is off once it ends', async () => {
    const seen: Record<string, boolean> = {}
    let afterRecorded: boolean | undefined
    const exported = await traced(async (watching) => {
      let release = () => {}
      const gate = new Promise<void>((resolve) => {
        release = resolve
      })
      const unsampled = (id: number) =>
        serve(
          watching,
          id,
          async () => {
            seen[`u${id} before`] = watching.contextEntered
            await get(`/u${id}`)
            await watching.upstream('postgresql', 'query', async () => {})
            await gate
            await get(`/u${id}-after`)
          },
          { traceparent: NOT_SAMPLED },
        )
      // Three that are not sampled, overlapping: none enters a context.
      const waiting = [unsampled(1), unsampled(2), unsampled(3)]
      await new Promise((resolve) => setTimeout(resolve, 20))
      // A recorded one begins while they run: it enters its own, and its requests are its children.
      await serve(watching, 4, async () => {
        seen.recorded = watching.contextEntered
        await get('/recorded')
      })
      // It ended while the others still run: the context is off again.
      afterRecorded = watching.contextEntered
      release()
      await Promise.all(waiting)
      expect(watching.calls.get({ tool: 'read', outcome: 'ok' })).toBe(4)
      expect(watching.upstreamCalls.get({ system: 'postgresql', outcome: 'ok' })).toBe(3)
    })
    expect(seen).toEqual({ 'u1 before': false, 'u2 before': false, 'u3 before': false, recorded: true })
    expect(afterRecorded).toBe(false)
    const request = exported.find((span) => span.kind === SERVER)
    expect(request?.attributes['jsonrpc.request.id']).toBe('4')
    expect(exported.map((span) => span.attributes['url.path'] ?? span.name).sort()).toEqual([
      '/recorded',
      'tools/call read',
    ])
    expect(exported.find((span) => span.attributes['url.path'] === '/recorded')?.parentSpanId).toBe(
      request?.spanId,
    )
  })
})

describe('the caller’s W3C trace context', () => {
  const SAMPLED = `00-${TRACE_ID}-${PARENT_SPAN}-01`
  /** The spans of one request whose `_meta` carries `tracestate` (and a sampled traceparent), with an upstream call in it. */
  const withState = (tracestate: unknown) =>
    traced(async (watching) => {
      await serve(watching, 5, () => get('/with-state'), { traceparent: SAMPLED, tracestate } as Record<
        string,
        string
      >)
    })

  it('joins the caller’s trace and carries its tracestate on every span of it', async () => {
    const exported = await withState('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE')
    expect(exported).toHaveLength(2)
    for (const span of exported)
      expect(span).toMatchObject({ traceId: TRACE_ID, traceState: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE' })
    expect(exported.find((span) => span.kind === SERVER)?.parentSpanId).toBe(PARENT_SPAN)
  })

  it('drops malformed members, and a tracestate that is not a string, empty or oversized, without losing the trace', async () => {
    const kept = await withState('rojo=00f067aa0ba902b7,Bad Key=x,congo=')
    expect(kept.map((span) => span.traceState)).toEqual(['rojo=00f067aa0ba902b7', 'rojo=00f067aa0ba902b7'])
    // 512 characters are read; a longer one is not (the API drops it whole, and it is never parsed).
    const longest = `a=${'b'.repeat(254)},c=${'d'.repeat(253)}`
    expect(longest).toHaveLength(512)
    expect((await withState(longest)).map((span) => span.traceState)).toEqual([longest, longest])
    for (const tracestate of [42, '', ' , ', `${longest}d`, `a=${'b'.repeat(9000)}`]) {
      const exported = await withState(tracestate)
      expect(exported).toHaveLength(2)
      for (const span of exported) expect(span).toMatchObject({ traceId: TRACE_ID, traceState: undefined })
    }
  })
})

describe('the span ids', () => {
  it('are lowercase hex of W3C lengths, none repeated across refills of the pool', () => {
    const ids = new PooledIdGenerator()
    const traces = Array.from({ length: 2000 }, () => ids.generateTraceId())
    const spans = Array.from({ length: 2000 }, () => ids.generateSpanId())
    for (const id of traces) expect(id).toMatch(/^[0-9a-f]{32}$/)
    for (const id of spans) expect(id).toMatch(/^[0-9a-f]{16}$/)
    expect(new Set(traces).size).toBe(traces.length)
    expect(new Set(spans).size).toBe(spans.length)
    expect(traces).not.toContain('0'.repeat(32))
  })
})

describe('the OTLP protocol', () => {
  const PROTOCOL_VARIABLES = [
    'OTEL_EXPORTER_OTLP_PROTOCOL',
    'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
    'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL',
    'OTEL_TRACES_EXPORTER',
    'OTEL_METRICS_EXPORTER',
    'OTEL_BSP_SCHEDULE_DELAY',
  ]
  const otlpProtocols = (env: Record<string, string>) =>
    otelExports(env, {
      TRACES: 'http://127.0.0.1:4318/v1/traces',
      METRICS: 'http://127.0.0.1:4318/v1/metrics',
    }).protocols
  afterEach(() => {
    for (const name of PROTOCOL_VARIABLES) delete process.env[name]
  })

  it('is read the standard way: per signal, else for both, else JSON; grpc and anything else are refused with what to set', () => {
    expect(otlpProtocols({})).toEqual({ TRACES: 'http/json', METRICS: 'http/json' })
    expect(otlpProtocols({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' })).toEqual({
      TRACES: 'http/protobuf',
      METRICS: 'http/protobuf',
    })
    expect(
      otlpProtocols({
        OTEL_EXPORTER_OTLP_PROTOCOL: ' http/protobuf ',
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json',
      }),
    ).toEqual({ TRACES: 'http/protobuf', METRICS: 'http/json' })
    // An empty per-signal variable is not set: the general one holds.
    expect(
      otlpProtocols({
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: ' ',
      }),
    ).toEqual({ TRACES: 'http/protobuf', METRICS: 'http/protobuf' })
    // A signal's own variable spares it a general grpc; the other signal still meets it.
    expect(() =>
      otlpProtocols({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }),
    ).toThrow(/^OTEL_EXPORTER_OTLP_PROTOCOL=grpc/)
    expect(
      otlpProtocols({
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf',
      }),
    ).toEqual({ TRACES: 'http/json', METRICS: 'http/protobuf' })
    expect(() => otlpProtocols({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      /^OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: .*http\/protobuf or http\/json.*4318/,
    )
    expect(() => otlpProtocols({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/proto' })).toThrow(
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http/proto" is not an OTLP protocol: use http/protobuf or http/json',
    )
    expect(() => otlpProtocols({ OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'x'.repeat(500) })).toThrow(
      `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL="${'x'.repeat(40)}…" is not an OTLP protocol`,
    )
  })

  /** The spans of one scripted request (a call with an upstream query and an HTTP request in it), ids left out. */
  const scripted = async (endpoints?: Parameters<typeof traced>[1]) => {
    const exported = await traced(async (watching) => {
      await serve(watching, 7, async () => {
        await watching.upstream('postgresql', 'query', async () => {
          await get('/in-query')
        })
      })
    }, endpoints)
    const names = new Map(exported.map((span) => [span.spanId, span.name]))
    return exported
      .map(({ traceId, spanId, parentSpanId, ...rest }) => ({
        ...rest,
        parent: parentSpanId === undefined ? undefined : names.get(parentSpanId),
        sameTrace: traceId === exported[0]?.traceId,
        ids: /^[0-9a-f]{32}$/.test(traceId) && /^[0-9a-f]{16}$/.test(spanId),
      }))
      .sort((a, b) => a.name.localeCompare(b.name))
  }

  it('sends protobuf when asked, with the same spans, parents and metrics as JSON', async () => {
    const json = await scripted()
    expect([...(receiver.contentTypes.get('/v1/traces') ?? [])]).toEqual(['application/json'])
    // The durations differ from run to run; what the points say besides must not.
    const points = () =>
      (receiver.histograms.get('mcp.server.operation.duration') ?? []).map(
        ({ sum, bucketCounts, ...rest }) => ({
          ...rest,
          buckets: bucketCounts.length,
          sum: typeof sum,
        }),
      )
    const jsonMetrics = points()
    expect(jsonMetrics).toHaveLength(1)
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/protobuf'
    const protobuf = await scripted()
    expect([...(receiver.contentTypes.get('/v1/traces') ?? [])]).toEqual(['application/x-protobuf'])
    expect([...(receiver.contentTypes.get('/v1/metrics') ?? [])]).toEqual(['application/x-protobuf'])
    expect(protobuf).toHaveLength(3)
    expect(protobuf.map((span) => [span.name, span.parent])).toEqual([
      [expect.stringMatching(/^GET /), 'postgresql query'],
      ['postgresql query', 'tools/call read'],
      ['tools/call read', undefined],
    ])
    for (const span of protobuf) expect(span).toMatchObject({ sameTrace: true, ids: true })
    expect(protobuf).toEqual(json)
    expect(points()).toEqual(jsonMetrics)
  })

  it('can differ by signal: protobuf spans with JSON metrics', async () => {
    process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL = 'http/protobuf'
    process.env.OTEL_EXPORTER_OTLP_METRICS_PROTOCOL = 'http/json'
    expect(await scripted()).toHaveLength(3)
    expect([...(receiver.contentTypes.get('/v1/traces') ?? [])]).toEqual(['application/x-protobuf'])
    expect([...(receiver.contentTypes.get('/v1/metrics') ?? [])]).toEqual(['application/json'])
    expect(receiver.histograms.get('mcp.server.operation.duration')?.[0]?.count).toBe(1)
  })

  it('exports no span with OTEL_TRACES_EXPORTER=none, and no metrics with OTEL_METRICS_EXPORTER=none', async () => {
    process.env.OTEL_TRACES_EXPORTER = 'none'
    expect(await scripted()).toEqual([])
    expect(receiver.contentTypes.has('/v1/traces')).toBe(false)
    expect(receiver.histograms.get('mcp.server.operation.duration')?.[0]?.count).toBe(1)
    process.env.OTEL_TRACES_EXPORTER = 'otlp'
    process.env.OTEL_METRICS_EXPORTER = 'none'
    expect(await scripted()).toHaveLength(3)
    expect(receiver.contentTypes.has('/v1/metrics')).toBe(false)
    expect(receiver.metricNames.size).toBe(0)
  })

  it('sends spans as often as OTEL_BSP_SCHEDULE_DELAY says', async () => {
    /** Whether the request's span reached the receiver while the observer still runs (within `ms`). */
    const arrivesWithin = async (ms: number) => {
      let arrived = false
      const exported = await traced(async (watching) => {
        await serve(watching, 9, async () => {})
        const until = Date.now() + ms
        while (!receiver.spans.length && Date.now() < until)
          await new Promise((resolve) => setTimeout(resolve, 20))
        arrived = receiver.spans.length > 0
      })
      // Whatever did not leave while it ran leaves at shutdown.
      expect(exported.map((span) => span.name)).toEqual(['tools/call read'])
      return arrived
    }
    process.env.OTEL_BSP_SCHEDULE_DELAY = '50'
    expect(await arrivesWithin(5000)).toBe(true)
    process.env.OTEL_BSP_SCHEDULE_DELAY = '600000'
    expect(await arrivesWithin(1500)).toBe(false)
  })

  it('sends each signal to its own endpoint, as is, when one is given; a signal without any is not sent', async () => {
    const both = await scripted({
      endpoint: 'http://127.0.0.1:9/unused',
      tracesEndpoint: `${receiver.url}/tempo/api/traces`,
      metricsEndpoint: `${receiver.url}/prom/api/v1/otlp/v1/metrics`,
    })
    expect(both).toHaveLength(3)
    expect([...receiver.contentTypes.keys()].sort()).toEqual([
      '/prom/api/v1/otlp/v1/metrics',
      '/tempo/api/traces',
    ])
    expect(receiver.histograms.get('mcp.server.operation.duration')?.[0]?.count).toBe(1)
    // Only spans have an endpoint: metrics are not exported anywhere (nor to a default collector).
    expect(await scripted({ tracesEndpoint: `${receiver.url}/v1/traces` })).toHaveLength(3)
    expect([...receiver.contentTypes.keys()]).toEqual(['/v1/traces'])
    expect(await scripted({ metricsEndpoint: `${receiver.url}/v1/metrics` })).toEqual([])
    expect([...receiver.contentTypes.keys()]).toEqual(['/v1/metrics'])
  })

  it('refuses to start tracing for grpc, before loading the SDK', async () => {
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'grpc'
    await expect(
      startTracing({
        endpoint: receiver.url,
        serviceName: 'x',
        serviceVersion: '1.0.0',
        logger: createLogger({ name: 'x', level: 'error' }),
      }),
    ).rejects.toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported/)
  })
})
