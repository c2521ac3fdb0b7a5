import { type AnyTool, shapeOf } from '../define.js'

/** The naming rule for tools across every Keel server. */
export const TOOL_NAME_PATTERN = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/

/**
 * Argument names that hold content or a secret wherever Keel's servers use them: never recorded
 * by the audit log ({@link checkToolContract}'s `auditArguments`).
 */
export const CONTENT_ARGUMENTS: ReadonlySet<string> = new Set([
  ...['body', 'content', 'text', 'markdown', 'message', 'comment', 'comments', 'title'],
  ...['description', 'commit_message', 'commit_title', 'edits', 'files', 'fields', 'values'],
  ...['inputs', 'sql', 'params', 'query', 'script', 'prompt_text', 'password', 'token', 'secret'],
])

/**
 * Checks tools against the house rules: `snake_case` names of at most 64 characters,
 * a title and a description, the required annotations, a description on every argument, and no
 * server prefix. With `auditArguments` (the server's), also that each name the audit log records
 * is an argument of some tool, and that neither it nor a tool's own list names content
 * ({@link CONTENT_ARGUMENTS}). Returns the problems found (an empty list when the tools comply).
 */
export function checkToolContract(
  tools: readonly AnyTool[],
  options: { serverName?: string; auditArguments?: readonly string[] } = {},
): string[] {
  const problems: string[] = []
  const seen = new Set<string>()
  const argumentNames = new Set<string>()
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
    const shape = shapeOf(tool.input) as Record<string, { description?: string }>
    for (const [field, schema] of Object.entries(shape)) {
      argumentNames.add(field)
      if (!schema.description?.trim()) problems.push(`${where}: argument ${field} has no .describe() text`)
    }
    for (const name of tool.auditArguments ?? []) {
      if (!(name in shape)) problems.push(`${where}: audit argument ${name} is not one of its arguments`)
      if (CONTENT_ARGUMENTS.has(name)) problems.push(`${where}: audit argument ${name} holds content`)
    }
  }
  for (const name of options.auditArguments ?? []) {
    if (!argumentNames.has(name)) problems.push(`audit argument ${name} is no tool's argument`)
    if (CONTENT_ARGUMENTS.has(name)) problems.push(`audit argument ${name} holds content`)
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
