import { z } from '@keel-mcp/core'
import {
  browse,
  capOf,
  defineTool,
  fullSnapshot,
  maxTokensArgument,
  onTab,
  pageOutput,
  tabArgument,
} from './shared.js'

export const snapshot = defineTool({
  name: 'snapshot',
  title: 'Snapshot',
  description:
    'The page as an accessibility tree; elements carry refs (e12) for actions. A cut snapshot gives a cursor to continue. Prefer it to screenshots; use find for one element.',
  input: {
    ref: z.string().optional().describe('Only this subtree'),
    depth: z.number().int().min(1).max(100).optional().describe('Levels'),
    cursor: z.string().max(2000).optional().describe('Continue a cut snapshot'),
    max_tokens: maxTokensArgument,
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: browse,
  async run({ ref, depth, cursor, max_tokens, tab: tabId }, context) {
    const { settings } = context.deps
    return onTab(context, tabId, (tab) =>
      fullSnapshot(tab, settings, { ref, depth, cursor, maxChars: capOf(settings, max_tokens) }),
    )
  },
})
