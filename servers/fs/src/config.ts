import { homedir } from 'node:os'
import path from 'node:path'
import { type PositionalSpec, z } from '@keel-mcp/core'

/**
 * A leading `~` in a configured directory is the user's home: client configs (Claude Desktop's JSON) pass
 * arguments without a shell to expand it. Paths from the model are never expanded (the guard refuses them).
 */
export function expandHome(directory: string): string {
  if (directory === '~') return homedir()
  if (directory.startsWith('~/') || directory.startsWith(`~${path.sep}`))
    return path.join(homedir(), directory.slice(2))
  return directory
}

/** The allowed directories, from the command line. */
export const positionals: PositionalSpec = {
  name: 'directory',
  description:
    'Allowed directories. MCP roots from the client can only narrow them; with none given, the client roots are used.',
  schema: z
    .array(z.string().min(1, 'must not be empty'))
    .transform((directories) => directories.map(expandHome)),
}
