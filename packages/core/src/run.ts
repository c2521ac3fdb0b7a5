import { type Runtime, selectTools, useSchemaCache } from './build-server.js'
import { ConfigError, type ParsedConfig, parseConfig } from './config.js'
import type { ServerSpec } from './define.js'
import { ToolError } from './errors.js'
import { fastPathEnabled } from './fast-path.js'
import { checkHandleTools, closeHandles } from './handles.js'
import { boundHeapGrowth } from './heap.js'
import type { HttpEndpoint } from './http.js'
import { createLogger, type Logger } from './logger.js'
import { observing } from './observe-config.js'
import { serverReadiness } from './readiness.js'
import { redactor } from './redact.js'
import { recordingEnv, secretPieces, startInputs, takeLauncherReplay } from './replay.js'
import { openSchemaCache } from './schema-cache.js'
import { serveStdioRuntime } from './serve-stdio.js'

/** Options of {@link run}. */
export interface RunOptions {
  /** Arguments without `node` and the script (default `process.argv.slice(2)`). */
  argv?: string[]
  env?: NodeJS.ProcessEnv
  /**
   * Own the process: exit on stdin end, SIGINT, SIGTERM and fatal errors (default true). Tests
   * that run a server in-process pass false and call `close()`.
   */
  manageProcess?: boolean
  /** How long `dispose` may take on shutdown (default 5 s). */
  disposeDeadlineMs?: number
  /** Where `--help` / `--version` text goes (default stdout). */
  print?: (text: string) => void
}

/** A started server. */
export interface RunningServer<D, C> {
  runtime: Runtime<D, C>
  /** The HTTP endpoint, when `--transport http`. */
  http?: HttpEndpoint
  /** Stops serving and disposes dependencies. Idempotent. */
  close(reason?: string): Promise<void>
  /** Resolves when the server has shut down. */
  closed: Promise<void>
}

/**
 * Serves a prepared runtime over Streamable HTTP. The HTTP stack is loaded on first use so that
 * stdio servers never pay for it at start-up.
 */
export async function serveHttp<D, C>(
  runtime: Runtime<D, C>,
  options: { fastPath?: boolean } = {},
): Promise<HttpEndpoint> {
  const http = await import('./http.js')
  return http.serveHttp(runtime, {}, options)
}

/** Thrown by {@link prepare} when the process should print and exit instead of serving. */
class EarlyExit extends Error {
  constructor(
    readonly code: number,
    readonly text: string,
  ) {
    super(text)
  }
}

/**
 * Parses config, builds deps and the runtime. Throws {@link ConfigError} with a one-line message
 * on bad configuration.
 */
export async function prepare<D, C>(
  spec: ServerSpec<D, C>,
  options: { argv?: string[]; env?: NodeJS.ProcessEnv; shutdownSignal?: AbortSignal; logger?: Logger } = {},
): Promise<Runtime<D, C>> {
  const argv = options.argv ?? process.argv.slice(2)
  // What the bin's launcher handed over (taken even by a server that records nothing: a request it
  // answered is never answered twice). A server that takes part reads its environment through a
  // proxy that notes each name: the record of this start holds those values (see replay.ts).
  const replay = takeLauncherReplay()
  const recording = replay && spec.handshakeReplay ? recordingEnv(options.env ?? process.env) : undefined
  const env = recording?.env ?? options.env ?? process.env
  const outcome = parseConfig(spec, argv, env)
  if (outcome.kind !== 'config') throw new EarlyExit(0, outcome.text)
  const { config, secrets, warnings } = outcome
  for (const secret of secrets) redactor.addSecret(secret)
  // Every secret, whatever its length (the redactor skips short ones): a record leaves them all out.
  const known: string[] = [...secrets]
  const addSecret = (value: string | undefined | null) => {
    if (value) known.push(value)
    redactor.addSecret(value)
  }
  const logger = options.logger ?? createLogger({ level: config.logLevel, name: spec.name }, env)
  for (const warning of warnings) logger.warn(warning)
  // Only a bin's own launcher offers a place to keep tool schemas; elsewhere this is undefined.
  useSchemaCache(
    openSchemaCache(spec, config, secrets, (options.env ?? process.env).KEEL_COMPILE_CACHE_DEBUG === '1'),
  )
  const tools = selectTools(spec, config)
  const deps = await spec.createDeps({
    config: config as ParsedConfig<C>,
    logger,
    addSecret,
    env,
  })
  // A stateful tool must take its handle kind's argument, or no handle could ever reach it.
  checkHandleTools(spec, tools)
  return {
    spec,
    config,
    deps,
    logger,
    tools,
    ...(spec.dynamicTools ? { available: selectTools(spec, { ...config, toolsets: ['all'] }) } : {}),
    shutdownSignal: options.shutdownSignal ?? new AbortController().signal,
    ...(replay ? { replay } : {}),
    ...(replay && recording
      ? {
          handshake: {
            file: replay.file,
            records: replay.records,
            inputs: () =>
              recording.whole()
                ? undefined
                : startInputs(argv, process.cwd(), recording.read, secretPieces(known)),
            secrets: () => secretPieces(known),
          },
        }
      : {}),
  }
}

/**
 * Runs a server: parses the command line, serves stdio (default) or Streamable HTTP, and ends
 * cleanly on stdin end, SIGINT or SIGTERM (exit 0) or a fatal error (exit 1), calling the
 * server's `dispose` with a deadline on every path.
 */
export async function run<D, C>(
  spec: ServerSpec<D, C>,
  options: RunOptions = {},
): Promise<RunningServer<D, C> | undefined> {
  const manage = options.manageProcess ?? true
  // A process the server owns keeps its memory steady: see heap.ts.
  if (manage) boundHeapGrowth()
  const bin = spec.bin ?? `mcp-server-${spec.name}`
  const shutdownController = new AbortController()
  let runtime: Runtime<D, C>
  try {
    runtime = await prepare(spec, { ...options, shutdownSignal: shutdownController.signal })
  } catch (error) {
    if (error instanceof EarlyExit) {
      // --help and --version: the process serves no protocol, so their text goes to stdout as CLIs expect.
      ;(options.print ?? ((text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`)))(
        error.text,
      )
      if (manage) process.exit(error.code)
      return undefined
    }
    const message =
      error instanceof ConfigError || error instanceof ToolError ? error.message : (error as Error)?.message
    process.stderr.write(`${bin}: ${redactor.redact(message ?? String(error))}\n`)
    if (manage) process.exit(error instanceof ConfigError ? error.exitCode : 1)
    throw error
  }
  const { config, logger } = runtime
  if (observing(config.observe)) {
    try {
      const { startOperations } = await import('./observe/start.js')
      runtime.operations = await startOperations({
        config: config.observe,
        redisUrl: config.redisUrl,
        serviceName: bin,
        serviceVersion: spec.version,
        logger,
        readiness: serverReadiness(spec, runtime.deps),
      })
    } catch (error) {
      process.stderr.write(`${bin}: cannot start: ${redactor.redact((error as Error).message)}\n`)
      await spec.dispose?.(runtime.deps)
      if (manage) process.exit(1)
      throw error
    }
  }
  let http: HttpEndpoint | undefined
  let stdio: { close(): Promise<void> } | undefined
  let closing: Promise<void> | undefined
  let resolveClosed!: () => void
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve
  })
  const deadline = options.disposeDeadlineMs ?? 5000

  const close = (reason = 'shutdown'): Promise<void> => {
    closing ??= (async () => {
      logger.debug('shutting down', { reason })
      shutdownController.abort(new Error('server shutting down'))
      const stop = async () => {
        await Promise.allSettled([http?.close(), stdio?.close()])
        closeHandles(runtime as Runtime<unknown, unknown>)
        await spec.dispose?.(runtime.deps)
        await runtime.operations?.close()
      }
      let timer: NodeJS.Timeout | undefined
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), deadline)
      })
      try {
        const result = await Promise.race([stop().then(() => 'ok' as const), timedOut])
        if (result === 'timeout') logger.warn(`dispose did not finish within ${deadline} ms; exiting anyway`)
      } catch (error) {
        logger.error('dispose failed', { error })
      } finally {
        clearTimeout(timer)
        resolveClosed()
      }
    })()
    return closing
  }

  const exitAfter = (reason: string, code: number) => {
    void close(reason).finally(() => {
      if (manage) process.exit(code)
    })
  }

  if (manage) {
    process.once('SIGINT', () => exitAfter('SIGINT', 0))
    process.once('SIGTERM', () => exitAfter('SIGTERM', 0))
    process.on('uncaughtException', (error) => {
      logger.error('fatal: uncaught exception', { error })
      exitAfter('uncaughtException', 1)
    })
    process.on('unhandledRejection', (reason) => {
      logger.error('fatal: unhandled promise rejection', {
        error: reason instanceof Error ? reason : String(reason),
      })
      exitAfter('unhandledRejection', 1)
    })
  }

  try {
    if (config.transport === 'http') {
      http = await serveHttp(runtime, { fastPath: fastPathEnabled(options.env ?? process.env) })
      logger.info(
        `serving MCP over Streamable HTTP at ${http.url}${config.stateless ? ' (stateless)' : ''}`,
        {
          tools: runtime.tools.length,
        },
      )
    } else {
      stdio = serveStdioRuntime(runtime, {
        onEnd: () => exitAfter('stdin closed', 0),
        fastPath: fastPathEnabled(options.env ?? process.env),
      })
      logger.debug('serving MCP over stdio', { tools: runtime.tools.length })
    }
  } catch (error) {
    const message =
      (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
        ? `port ${config.port} is already in use`
        : (error as Error).message
    process.stderr.write(`${bin}: cannot start: ${redactor.redact(message)}\n`)
    await close('startup failed')
    if (manage) process.exit(1)
    throw error
  }
  return { runtime, ...(http ? { http } : {}), close, closed }
}
