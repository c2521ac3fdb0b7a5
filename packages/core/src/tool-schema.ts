import { z } from 'zod'
import type { ParsedConfig } from './config.js'
import type { AnyTool, ServerSpec } from './define.js'
import { ToolError } from './errors.js'

// How tools are listed: one JSON Schema per tool, built once per process; and which tools a
// process serves after toolsets, read-only and allow/deny lists.

export interface ToolPlan {
  tool: AnyTool
  schema: z.ZodObject
  output: z.ZodObject | undefined
  listed: Record<string, unknown>
  /** `listed` with `execution.taskSupport`, for connections that offer tasks. */
  listedWithTasks: Record<string, unknown>
  outputJson: Record<string, unknown> | undefined
}

const plans = new WeakMap<AnyTool, ToolPlan>()

function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>
  delete json.$schema
  return stripSafeIntegerBounds(json) as Record<string, unknown>
}

// z.number().int() states ±(2^53-1) bounds: true but noise, and every schema word costs tokens.
function stripSafeIntegerBounds(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(stripSafeIntegerBounds)
  if (!node || typeof node !== 'object') return node
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if (
      (key === 'minimum' && value === Number.MIN_SAFE_INTEGER) ||
      (key === 'maximum' && value === Number.MAX_SAFE_INTEGER)
    )
      continue
    out[key] = stripSafeIntegerBounds(value)
  }
  return out
}

export function planFor(tool: AnyTool): ToolPlan {
  let plan = plans.get(tool)
  if (!plan) {
    // Unknown keys are refused rather than silently dropped: a misspelt argument must not turn into a default.
    const schema = z.object(tool.input).strict()
    const output = tool.output ? z.object(tool.output) : undefined
    const outputJson = output ? jsonSchemaOf(output, 'output') : undefined
    const listed: Record<string, unknown> = {
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: jsonSchemaOf(schema, 'input'),
      annotations: { title: tool.title, ...tool.annotations },
    }
    if (outputJson) listed.outputSchema = outputJson
    if (tool.icons?.length) listed.icons = tool.icons
    const listedWithTasks = tool.taskSupport
      ? { ...listed, execution: { taskSupport: tool.taskSupport } }
      : listed
    plan = { tool, schema, output, listed, listedWithTasks, outputJson }
    plans.set(tool, plan)
  }
  return plan
}

/** Formats zod issues as `field: problem` items the model can act on. */
export function describeIssues(error: z.ZodError): {
  text: string
  issues: Array<{ path: string; message: string }>
} {
  const issues = error.issues.map((issue) => ({
    path: issue.path.length ? issue.path.join('.') : '(arguments)',
    message:
      issue.code === 'unrecognized_keys' ? `unknown argument(s): ${issue.keys.join(', ')}` : issue.message,
  }))
  return { text: issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '), issues }
}

/** Applies toolsets, read-only and allow/deny lists. Throws on unknown tool names in the lists. */
export function selectTools<D, C>(spec: ServerSpec<D, C>, config: ParsedConfig<C>): AnyTool<D>[] {
  const all = typeof spec.tools === 'function' ? spec.tools(config) : spec.tools
  const names = new Set(all.map((tool) => tool.name))
  for (const name of [...config.tools, ...config.excludeTools]) {
    if (!names.has(name)) {
      throw new ToolError(
        'invalid_argument',
        `unknown tool "${name}" in --tools/--exclude-tools; known: ${[...names].join(', ')}`,
      )
    }
  }
  const wanted = config.toolsets.length ? config.toolsets : (spec.defaultToolsets ?? ['all'])
  return all.filter((tool) => {
    if (!wanted.includes('all') && !wanted.includes(tool.toolset ?? 'default')) return false
    // Read-only removes writers from the list entirely, whatever else was asked for.
    if (config.readOnly && !tool.annotations.readOnlyHint) return false
    if (config.tools.length && !config.tools.includes(tool.name)) return false
    return !config.excludeTools.includes(tool.name)
  })
}
