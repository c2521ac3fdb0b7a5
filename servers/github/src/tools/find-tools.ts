import { type AnyTool, z } from '@keel-mcp/core'
import { defineTool, type GithubDeps, list, result } from './shared.js'

const MAX_MATCHES = 20

/**
 * Tool search for clients that cannot defer tools: the model finds tools by words and enables a
 * toolset on this connection (the client gets `notifications/tools/list_changed`). `catalogue`
 * returns every tool of the server (given late: the list includes this tool).
 */
export function findToolsFor(catalogue: () => AnyTool<GithubDeps>[], toolsets: Record<string, string>) {
  return defineTool({
    name: 'find_tools',
    title: 'Find tools',
    description: 'Search all GitHub tools by words; enable_toolset adds one toolset to your list.',
    toolset: 'dynamic',
    input: {
      query: z.string().max(200).default('').describe('Words, e.g. "dependabot alert"'),
      enable_toolset: z.string().optional().describe('Toolset to enable'),
    },
    output: { tools: list(), enabled: z.array(z.string()).optional() },
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    async run({ query, enable_toolset }, { deps, enableTools }) {
      const available = catalogue().filter((tool) => !deps.readOnly || tool.annotations.readOnlyHint)
      const words = query.toLowerCase().split(/\s+/).filter(Boolean)
      const matches = available
        .filter((tool) => {
          const text =
            `${tool.name.replaceAll('_', ' ')} ${tool.toolset ?? ''} ${tool.description}`.toLowerCase()
          return words.every((word) => text.includes(word))
        })
        .slice(0, MAX_MATCHES)
        .map((tool) => ({
          name: tool.name,
          toolset: tool.toolset ?? 'default',
          description: tool.description,
        }))
      const notices: string[] = []
      if (!matches.length) notices.push(`No tool matches; toolsets: ${Object.keys(toolsets).join(', ')}.`)
      if (enable_toolset === undefined) {
        if (matches.length) notices.push('Enable one with enable_toolset.')
        return result({ tools: matches }, notices.length ? { notice: notices.join(' ') } : {})
      }
      if (!(enable_toolset in toolsets) || enable_toolset === 'default') {
        notices.push(`Unknown toolset "${enable_toolset}"; toolsets: ${Object.keys(toolsets).join(', ')}.`)
        return result({ tools: matches, enabled: [] }, { notice: notices.join(' ') })
      }
      const names = available.filter((tool) => tool.toolset === enable_toolset).map((tool) => tool.name)
      const { enabled, lasting } = await enableTools(names)
      notices.push(
        lasting
          ? enabled.length
            ? `Enabled: ${enabled.join(', ')}.`
            : `Toolset ${enable_toolset} is already listed.`
          : `This request cannot change the tool list (no session): start the server with --toolsets ${enable_toolset}.`,
      )
      return result({ tools: matches, enabled: lasting ? enabled : [] }, { notice: notices.join(' ') })
    },
  })
}
