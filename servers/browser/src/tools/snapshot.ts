import { z } from '@keel-mcp/core'
import { browse, defineTool, fullSnapshot, onTab, pageOutput, tabArgument } from './shared.js'

export const snapshot = defineTool({
  name: 'snapshot',
  title: 'Page snapshot',
  description:
    'The accessibility tree of the page as indented text; elements carry refs (e12) for the action tools. Prefer it to screenshots.',
  input: {
    ref: z.string().min(2).max(16).optional().describe('Only the subtree of this ref'),
    depth: z.number().int().min(1).max(100).optional().describe('Levels to show'),
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: browse,
  async run({ ref, depth, tab: tabId }, context) {
    return onTab(context, tabId, (tab) => fullSnapshot(tab, context.deps.settings, { ref, depth }))
  },
})
