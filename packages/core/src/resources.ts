import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  ResourceTemplate,
} from '@modelcontextprotocol/server'
import { subscriptionHook } from './change-streams.js'
import type { ResourceContents } from './define.js'
import { errorReference, formatToolError } from './errors.js'
import { type InstanceParts, mapError } from './instance.js'

/** Registers the spec's resources and templates (with completions), and resource subscriptions. */
export function registerResources<D, C>(parts: InstanceParts<D, C>): void {
  const { runtime, mcp, state, handlerContext } = parts
  const { spec, logger } = runtime
  const server = mcp.server
  const resources = spec.resources ?? []
  const templates = spec.resourceTemplates ?? []
  const subscribable = [...resources, ...templates].some((resource) => resource.subscribe)
  const readErrors = (error: unknown, uri: string): never => {
    if (error instanceof ProtocolError) throw error
    const mapped = mapError(runtime, error)
    if (mapped?.kind === 'not_found') throw new ResourceNotFoundError(uri)
    if (mapped && mapped.kind !== 'internal') {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, formatToolError(mapped))
    }
    const ref = errorReference()
    logger.error(`reading ${uri} failed unexpectedly (ref ${ref})`, { ref, error })
    throw new ProtocolError(ProtocolErrorCode.InternalError, `Reading the resource failed (ref ${ref})`)
  }
  const toContents = (contents: ResourceContents[]) => ({ contents })

  for (const resource of resources) {
    mcp.registerResource(
      resource.name,
      resource.uri,
      {
        ...(resource.title ? { title: resource.title } : {}),
        description: resource.description,
        mimeType: resource.mimeType,
      },
      async (uri, ctx) => {
        try {
          return toContents(await resource.read(uri, handlerContext(ctx.mcpReq.signal)))
        } catch (error) {
          return readErrors(error, uri.href)
        }
      },
    )
  }
  for (const template of templates) {
    const complete: Record<
      string,
      (value: string, completionContext?: { arguments?: Record<string, string> }) => Promise<string[]>
    > = {}
    for (const [variable, completer] of Object.entries(template.complete ?? {})) {
      complete[variable] = async (value, completionContext) => {
        try {
          const context = {
            ...handlerContext(runtime.shutdownSignal),
            arguments: completionContext?.arguments ?? {},
          }
          return (await completer(value, context)).slice(0, 100)
        } catch {
          return []
        }
      }
    }
    const list = template.list
    mcp.registerResource(
      template.name,
      new ResourceTemplate(template.uriTemplate, {
        list: list
          ? async (ctx) => ({ resources: await list(handlerContext(ctx.mcpReq.signal)) })
          : undefined,
        complete,
      }),
      {
        ...(template.title ? { title: template.title } : {}),
        description: template.description,
        mimeType: template.mimeType,
      },
      async (uri, variables, ctx) => {
        try {
          return toContents(
            await template.read(
              uri,
              variables as Record<string, string | string[]>,
              handlerContext(ctx.mcpReq.signal),
            ),
          )
        } catch (error) {
          return readErrors(error, uri.href)
        }
      },
    )
  }
  if (subscribable) {
    const hookFor = subscriptionHook(spec)
    server.setRequestHandler('resources/subscribe', async (request) => {
      const uri = request.params.uri
      if (state.subscriptions.has(uri)) return {}
      const subscribe = hookFor(uri)
      if (!subscribe)
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `Resource ${uri} does not support subscriptions`,
        )
      let url: URL
      try {
        url = new URL(uri)
      } catch {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid resource URI: ${uri}`)
      }
      const notify = () => {
        if (mcp.isConnected()) void server.sendResourceUpdated({ uri }).catch(() => {})
      }
      // Reserve the slot first so a second subscribe while this one resolves is not doubled.
      state.subscriptions.set(uri, () => {})
      let dispose: (() => void) | undefined
      try {
        dispose = await subscribe(url, notify, handlerContext(runtime.shutdownSignal))
      } catch (error) {
        state.subscriptions.delete(uri)
        return readErrors(error, uri)
      }
      if (state.subscriptions.has(uri)) state.subscriptions.set(uri, dispose ?? (() => {}))
      else dispose?.()
      return {}
    })
    server.setRequestHandler('resources/unsubscribe', (request) => {
      state.subscriptions.get(request.params.uri)?.()
      state.subscriptions.delete(request.params.uri)
      return {}
    })
    const previous = server.onclose
    server.onclose = () => {
      for (const dispose of state.subscriptions.values()) dispose()
      state.subscriptions.clear()
      previous?.()
    }
  }
}
