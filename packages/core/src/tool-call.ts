import {
  inputRequired,
  LOG_LEVEL_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
} from '@modelcontextprotocol/server'
import { InputNeeded, modernClientAccess, requestStateCodec, servesModernEra } from './client-access.js'
import type { ContentBlock, ToolContext } from './define.js'
import { errorReference, formatToolError, isAbortError, ToolError } from './errors.js'
import { type InstanceParts, mapError, type Runtime } from './instance.js'
import { truncateUtf8 } from './limits.js'
import { type LogRecord, logData, type McpLogLevel, mcpLevelAtLeast, toMcpLevel } from './logger.js'
import { redactor } from './redact.js'
import { describeIssues, planFor } from './tool-schema.js'

// The tool-call pipeline: tools/list, and tools/call from arguments to result (see
// docs/architecture.md, "A tool call, from the wire to the tool and back").

/** Hard ceiling on the text a single result may carry: below the official client's 10 MiB message limit. */
export const RESULT_TEXT_CEILING_BYTES = 8 * 1024 * 1024

function internalResult(runtime: Runtime<unknown, unknown>, tool: string, error: unknown) {
  const ref = errorReference()
  runtime.logger.error(`tool ${tool} failed unexpectedly (ref ${ref})`, { tool, ref, error })
  return new ToolError(
    'internal',
    `${tool} failed unexpectedly (ref ${ref}); the details are in the server log`,
  )
}

function abortPromise(signal: AbortSignal): { promise: Promise<never>; cancel: () => void } {
  let cancel = () => {}
  const promise = new Promise<never>((_, reject) => {
    const onAbort = () => reject(signal.reason)
    if (signal.aborted) onAbort()
    signal.addEventListener('abort', onAbort, { once: true })
    cancel = () => signal.removeEventListener('abort', onAbort)
  })
  promise.catch(() => {})
  return { promise, cancel }
}

class TimeoutError extends Error {
  override name = 'TimeoutError'
}

export function capContent(content: ContentBlock[]): ContentBlock[] {
  let budget = RESULT_TEXT_CEILING_BYTES
  return content.map((block) => {
    if (block.type !== 'text') return block
    const { text, truncated } = truncateUtf8(block.text, Math.max(0, budget))
    budget -= Buffer.byteLength(text)
    return truncated
      ? { type: 'text', text: `${text}\n[truncated: the result exceeded the server's output ceiling]` }
      : block
  })
}

/** Serves `tools/list` and `tools/call` on one instance. */
export function registerTools<D, C>(parts: InstanceParts<D, C>): void {
  const { runtime, mcp, state, client, sessionFor } = parts
  const { config, logger } = runtime
  const server = mcp.server
  server.setRequestHandler(
    'tools/list',
    () => ({ tools: runtime.tools.map((tool) => planFor(tool).listed) }) as never,
  )
  server.setRequestHandler('tools/call', async (request, ctx) => {
    const name = request.params.name
    const tool = runtime.tools.find((candidate) => candidate.name === name)
    if (!tool) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Unknown tool "${name}". Available tools: ${runtime.tools.map((candidate) => candidate.name).join(', ')}`,
      )
    }
    const plan = planFor(tool)
    const parsed = plan.schema.safeParse(request.params.arguments ?? {})
    if (!parsed.success) {
      const { text, issues } = describeIssues(parsed.error)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Invalid arguments for tool ${name}: ${text}`,
        {
          tool: name,
          issues,
        },
      )
    }
    const started = performance.now()
    const timeoutMs = tool.timeoutMs ?? config.toolTimeoutMs
    const controller = new AbortController()
    const forwardAbort = (source: AbortSignal) => () => controller.abort(source.reason)
    const abortOnCancel = forwardAbort(ctx.mcpReq.signal)
    const abortOnShutdown = forwardAbort(runtime.shutdownSignal)
    ctx.mcpReq.signal.addEventListener('abort', abortOnCancel, { once: true })
    runtime.shutdownSignal.addEventListener('abort', abortOnShutdown, { once: true })
    const timer = setTimeout(
      () => controller.abort(new TimeoutError(`${name} did not finish within ${timeoutMs} ms`)),
      timeoutMs,
    )
    const metaLevel = (ctx.mcpReq._meta as Record<string, unknown> | undefined)?.[LOG_LEVEL_META_KEY]
    const threshold = (typeof metaLevel === 'string' ? metaLevel : state.clientLevel) as
      | McpLogLevel
      | undefined
    const callLogger = logger.child(name, { tool: name }).withForwarder((record: LogRecord) => {
      const level = toMcpLevel(record.level)
      if (!mcpLevelAtLeast(level, threshold ?? 'warning')) return
      void ctx.mcpReq.log(level, logData(record), record.logger).catch(() => {})
    })
    const progressToken = ctx.mcpReq._meta?.progressToken
    let lastProgress = Number.NEGATIVE_INFINITY
    const toolContext: ToolContext<D> = {
      deps: runtime.deps,
      signal: controller.signal,
      log: callLogger,
      client: servesModernEra(server) ? modernClientAccess(client, ctx.mcpReq as never) : client,
      requestId: ctx.mcpReq.id,
      session: sessionFor(ctx.sessionId),
      auth: ctx.http?.authInfo?.token ? { token: ctx.http.authInfo.token } : undefined,
      async progress(progress, total, message) {
        // Progress must increase for one token; late or repeated values are dropped, not sent.
        if (progressToken === undefined || progress <= lastProgress || controller.signal.aborted) return
        lastProgress = progress
        await ctx.mcpReq
          .notify({
            method: 'notifications/progress',
            params: {
              progressToken,
              progress,
              ...(total !== undefined ? { total } : {}),
              ...(message ? { message } : {}),
            },
          })
          .catch(() => {})
      },
    }
    const aborted = abortPromise(controller.signal)
    let outcome = 'ok'
    try {
      const output = await Promise.race([
        Promise.resolve().then(() => tool.run(parsed.data, toolContext)),
        aborted.promise,
      ])
      let structured: Record<string, unknown> | undefined
      if (plan.output) {
        const checked = plan.output.safeParse(output.data)
        if (!checked.success) {
          throw new Error(
            `tool ${name} returned data that does not match its output schema: ${describeIssues(checked.error).text}`,
          )
        }
        structured = checked.data as Record<string, unknown>
      }
      const content: ContentBlock[] = output.content ?? [
        { type: 'text', text: output.text ?? (structured !== undefined ? JSON.stringify(structured) : '') },
      ]
      const result: Record<string, unknown> = { content: capContent(content) }
      if (structured !== undefined) result.structuredContent = structured
      return server.projectCallToolResult(result as never, plan.outputJson as never) as never
    } catch (error) {
      if (error instanceof InputNeeded) {
        outcome = 'input_required'
        const requestState = await requestStateCodec().mint({ answers: error.answers })
        return inputRequired({
          inputRequests: error.requests,
          requestState,
        }) as never
      }
      let toolError: ToolError
      if (controller.signal.aborted && (isAbortError(error) || error === controller.signal.reason)) {
        const reason = controller.signal.reason
        toolError =
          reason instanceof TimeoutError
            ? new ToolError('timeout', reason.message, {
                hint: 'Narrow the request (smaller range, fewer rows, a more specific pattern) and try again.',
              })
            : new ToolError(
                'cancelled',
                runtime.shutdownSignal.aborted ? 'The server is shutting down' : 'The call was cancelled',
              )
      } else {
        toolError =
          mapError(runtime, error) ?? internalResult(runtime as Runtime<unknown, unknown>, name, error)
        if (toolError.cause !== undefined && toolError.kind !== 'internal') {
          logger.debug(`tool ${name} error cause`, { tool: name, error: toolError.cause })
        }
      }
      outcome = `error:${toolError.kind}`
      return {
        content: [{ type: 'text', text: formatToolError(toolError) }],
        isError: true,
        ...(toolError.details
          ? {
              _meta: {
                'keel/error': {
                  kind: toolError.kind,
                  ...(redactor.redactValue(toolError.details) as object),
                },
              },
            }
          : {}),
      } as never
    } finally {
      clearTimeout(timer)
      aborted.cancel()
      ctx.mcpReq.signal.removeEventListener('abort', abortOnCancel)
      runtime.shutdownSignal.removeEventListener('abort', abortOnShutdown)
      logger.debug('tool call', {
        tool: name,
        durationMs: Math.round((performance.now() - started) * 100) / 100,
        outcome,
      })
    }
  })
}
