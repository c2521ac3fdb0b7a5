import { serveStdio } from '@modelcontextprotocol/server/stdio'
import { createInstance, type Runtime } from './build-server.js'
import { stdioChangeStreams } from './change-streams.js'
import { StdioFastPath } from './fast-path.js'
import { HandshakeRecorder } from './replay.js'
import { LineTransport, type LineTransportOptions } from './stdio.js'

/** The notification that tells a client to list again, by the listing it answered. */
const LIST_CHANGED: Record<string, string> = {
  'tools/list': 'notifications/tools/list_changed',
  'prompts/list': 'notifications/prompts/list_changed',
  'resources/list': 'notifications/resources/list_changed',
  'resources/templates/list': 'notifications/resources/list_changed',
}

/** Options of {@link serveStdioRuntime}. */
export interface StdioServeOptions {
  input?: LineTransportOptions['input']
  output?: LineTransportOptions['output']
  /** Called once when the input ends (the client closed stdin) or fails. */
  onEnd?: () => void
  /** Serve the warm call loop in core (`fast-path.ts`); false leaves every message to the SDK. */
  fastPath?: boolean
}

/**
 * Serves a prepared runtime over newline-delimited JSON-RPC (stdin/stdout by default): the SDK's
 * stdio entry picks the era and pins one instance; core's line transport frames and checks every
 * line, and its fast path serves warm calls on a 2025-era connection.
 */
export function serveStdioRuntime<D, C>(
  runtime: Runtime<D, C>,
  options: StdioServeOptions = {},
): { close(): Promise<void>; readonly fastPathServed: number } {
  const { logger } = runtime
  const streams = stdioChangeStreams(runtime)
  const fast =
    options.fastPath === false
      ? undefined
      : new StdioFastPath(
          (message) => transport.send(message as never),
          (message) => transport.post(message as never),
        )
  const transport: LineTransport = new LineTransport({
    ...(options.input ? { input: options.input } : {}),
    ...(options.output ? { output: options.output } : {}),
    ...(options.onEnd ? { onEnd: options.onEnd } : {}),
    prepare: (message) => streams.prepare(message),
    ...(runtime.replay
      ? { replay: { ...runtime.replay, onReplayMismatch: (method: string) => replayed(method) } }
      : {}),
    ...(runtime.handshake ? { recorder: new HandshakeRecorder(runtime.handshake) } : {}),
    ...(fast ? { claim: (message: unknown) => fast.claim(message) } : {}),
  })
  // An answer the launcher sent from a record that differs from this start's own: a listing is
  // followed by its list_changed notification, so the client lists again; anything else is logged.
  const replayed = (method: string) => {
    const notification = LIST_CHANGED[method]
    if (notification) transport.post({ jsonrpc: '2.0', method: notification } as never)
    else
      logger.warn(
        `the answer to ${method} sent from the record of an earlier start differs from this start's`,
      )
  }
  const served = serveStdio(
    (context) => {
      const instance = createInstance(runtime, {
        forwardProcessLogs: true,
        connection: 'stdio',
        uninitialized: context?.era === 'modern',
      })
      streams.attach(instance, context?.era)
      fast?.attach(instance, context?.era)
      return instance
    },
    { transport, onerror: (error) => logger.debug('stdio error', { error: error.message }) },
  )
  return {
    /** How many messages the fast path has served (0 when it is off). */
    get fastPathServed() {
      return fast?.served ?? 0
    },
    close: async () => {
      streams.close()
      // The fast path's calls end when the instance closes, as the SDK's own requests do: a call
      // that has its answer by then (a shutdown's "cancelled") is still answered.
      await served.close()
      fast?.close()
    },
  }
}
