import { z } from '@keel-mcp/core'
import { browse, defineTool, fullSnapshot, onTab, pageOutput, tabArgument } from './shared.js'

export const snapshot = defineTool({
  name: 'snapshot',
  title: 'Snapshot',
  description:
    'The page as an accessibility tree; elements carry refs (e12) for actions. Prefer it to screenshots.',
  input: {
    ref: z.string().optional().describe('Only this subtree'),
    depth: z.number().int().min(1).max(100).optional().describe('Levels'),
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: browse,
  async run({ ref, depth, tab: tabId }, context) {
    return onTab(context, tabId, (tab) => fullSnapshot(tab, context.deps.settings, { ref, depth }))
  },
})
