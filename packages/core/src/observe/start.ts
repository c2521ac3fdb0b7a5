import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Logger } from '../logger.js'
import { type ObserveConfig, otelConfigured } from '../observe-config.js'
import { answerReadiness, type ReadinessCheck } from '../readiness.js'
import { installObserver } from './hooks.js'
import { PROMETHEUS_CONTENT_TYPE } from './metrics.js'
import { Observer } from './observer.js'
import { startTracing } from './otel.js'
import { memoryRateLimiter, type RateLimiter, redisRateLimiter } from './rate-limit.js'

// Starts what the operations flags ask for and installs it behind core's hooks. Loaded (with
// everything it imports) only when one of those flags is set.

export interface Operations {
  observer: Observer
  /** Answers `/metrics` (and `/readyz` on the metrics port); false for any other path. */
  serve(req: IncomingMessage, res: ServerResponse): boolean
  /** The loopback port of `--metrics-port`, when set. */
  metricsPort: number | undefined
  close(): Promise<void>
}

export async function startOperations(options: {
  config: ObserveConfig
  redisUrl: string | undefined
  serviceName: string
  serviceVersion: string
  logger: Logger
  readiness: Record<string, ReadinessCheck>
  metricIntervalMs?: number
}): Promise<Operations> {
  const { config, logger } = options
  let limiter: RateLimiter | undefined
  if (config.rateLimit || config.writeRateLimit) {
    if (options.redisUrl) {
      const { connectRedis } = await import('../scale/redis.js')
      limiter = redisRateLimiter(await connectRedis(options.redisUrl, logger, `${options.serviceName}-rate`))
    } else limiter = memoryRateLimiter()
  }
  const tracing = otelConfigured(config)
    ? await startTracing({
        endpoint: config.otelEndpoint,
        tracesEndpoint: config.otelTracesEndpoint,
        metricsEndpoint: config.otelMetricsEndpoint,
        serviceName: options.serviceName,
        serviceVersion: options.serviceVersion,
        logger,
        ...(options.metricIntervalMs ? { metricIntervalMs: options.metricIntervalMs } : {}),
      })
    : undefined
  const observer = new Observer({
    config,
    serviceName: options.serviceName,
    serviceVersion: options.serviceVersion,
    logger,
    limiter,
    tracing,
  })
  installObserver(observer)

  const serve = (req: IncomingMessage, res: ServerResponse): boolean => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname
    if (path !== '/metrics' && path !== '/readyz') return false
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: 'Method not allowed' }))
      return true
    }
    if (path === '/readyz') {
      void answerReadiness(res, options.readiness)
      return true
    }
    res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE, 'cache-control': 'no-store' })
    res.end(observer.registry.render())
    return true
  }

  let server: Server | undefined
  let metricsPort: number | undefined
  if (config.metricsPort !== undefined) {
    server = createServer((req, res) => {
      if (!serve(req, res)) {
        res.writeHead(404, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: 'Not found: /metrics and /readyz are served here' }))
      }
    })
    await new Promise<void>((resolve, reject) => {
      server?.once('error', reject)
      server?.listen(config.metricsPort, '127.0.0.1', () => resolve())
    })
    metricsPort = (server.address() as AddressInfo).port
    logger.info(`metrics at http://127.0.0.1:${metricsPort}/metrics`)
  }
  return {
    observer,
    serve,
    metricsPort,
    async close() {
      installObserver(undefined)
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
      await observer.close()
    },
  }
}
