import { type AnyTool, shapeOf } from '../define.js'

/** The naming rule for tools across every Keel server. */
export const TOOL_NAME_PATTERN = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/

/**
 * Checks tools against the house rules: `snake_case` names of at most 64 characters,
 * a title and a description, the required annotations, a description on every argument, and no
 * server prefix. Returns the problems found (an empty list when the tools comply).
 */
export function checkToolContract(
  tools: readonly AnyTool[],
  options: { serverName?: string } = {},
): string[] {
  const problems: string[] = []
  const seen = new Set<string>()
  for (const tool of tools) {
    const where = `tool ${tool.name}`
    if (seen.has(tool.name)) problems.push(`${where}: duplicate name`)
    seen.add(tool.name)
    if (!TOOL_NAME_PATTERN.test(tool.name)) problems.push(`${where}: name must be snake_case [a-z0-9_]`)
    if (tool.name.length > 64) problems.push(`${where}: name longer than 64 characters`)
    if (options.serverName && tool.name.startsWith(`${options.serverName}_`))
      problems.push(`${where}: no server prefix`)
    if (!tool.title?.trim()) problems.push(`${where}: missing title`)
    if (!tool.description?.trim()) problems.push(`${where}: missing description`)
    if (tool.description && tool.description.length > 1024)
      problems.push(`${where}: description over 1024 characters`)
    const annotations = tool.annotations as unknown as Record<string, unknown> | undefined
    if (typeof annotations?.readOnlyHint !== 'boolean') problems.push(`${where}: readOnlyHint must be stated`)
    if (typeof annotations?.openWorldHint !== 'boolean')
      problems.push(`${where}: openWorldHint must be stated`)
    if (annotations?.readOnlyHint === false && typeof annotations.destructiveHint !== 'boolean') {
      problems.push(`${where}: a writing tool must state destructiveHint`)
    }
    for (const [field, schema] of Object.entries(
      shapeOf(tool.input) as Record<string, { description?: string }>,
    )) {
      if (!schema.description?.trim()) problems.push(`${where}: argument ${field} has no .describe() text`)
    }
  }
  return problems
}

/** A stable, comparable view of a `tools/list` answer (for snapshots). */
export function toolListSnapshot(tools: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  return [...tools]
    .sort((a, b) => String(a.name).localeCompare(String(b.name)))
    .map(({ name, title, description, inputSchema, outputSchema, annotations }) => ({
      name,
      title,
      description,
      annotations,
      inputSchema,
      ...(outputSchema ? { outputSchema } : {}),
    }))
}
