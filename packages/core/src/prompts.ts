import { completable, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server'
import { z } from 'zod'
import type { PromptSpec } from './define.js'
import { errorReference, formatToolError } from './errors.js'
import { type InstanceParts, mapError } from './instance.js'

/** Registers the spec's prompts; their errors map like tool errors, as JSON-RPC errors. */
export function registerPrompts<D, C>(parts: InstanceParts<D, C>): void {
  const { runtime, mcp, handlerContext } = parts
  const { logger } = runtime
  const prompts = runtime.spec.prompts ?? []
  for (const prompt of prompts) {
    const argsSchema = promptArgsSchema(prompt)
    mcp.registerPrompt(
      prompt.name,
      {
        ...(prompt.title ? { title: prompt.title } : {}),
        ...(prompt.description ? { description: prompt.description } : {}),
        ...(argsSchema ? { argsSchema } : {}),
      } as never,
      (async (...callArgs: unknown[]) => {
        const ctx = callArgs[callArgs.length - 1] as { mcpReq: { signal: AbortSignal } }
        const args = (prompt.args ? callArgs[0] : {}) as Record<string, string | undefined>
        try {
          return await prompt.run(args, handlerContext(ctx.mcpReq.signal))
        } catch (error) {
          if (error instanceof ProtocolError) throw error
          const mapped = mapError(runtime, error)
          if (mapped && mapped.kind !== 'internal')
            throw new ProtocolError(ProtocolErrorCode.InvalidParams, formatToolError(mapped))
          const ref = errorReference()
          logger.error(`prompt ${prompt.name} failed unexpectedly (ref ${ref})`, { ref, error })
          throw new ProtocolError(ProtocolErrorCode.InternalError, `The prompt failed (ref ${ref})`)
        }
      }) as never,
    )
  }
}

const promptSchemas = new WeakMap<PromptSpec<unknown>, z.ZodObject>()

// completable() marks a schema in place, so each prompt's argument schema is built once per process.
function promptArgsSchema(prompt: PromptSpec<unknown>): z.ZodObject | undefined {
  if (!prompt.args) return undefined
  let schema = promptSchemas.get(prompt)
  if (!schema) {
    const shape: Record<string, z.ZodType> = {}
    for (const [argument, argumentSchema] of Object.entries(prompt.args)) {
      const completer = prompt.complete?.[argument]
      shape[argument] = completer
        ? (completable(
            argumentSchema as never,
            (async (value: string) => (await completer(value)).slice(0, 100)) as never,
          ) as never)
        : argumentSchema
    }
    schema = z.object(shape)
    promptSchemas.set(prompt, schema)
  }
  return schema
}
