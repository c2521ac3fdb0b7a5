import { budgetOutput, z } from '@keel-mcp/core'
import { writeOutput } from '../lib/output.js'
import { takeSnapshot } from '../lib/page-tree.js'
import {
  browse,
  capOf,
  defineTool,
  fullSnapshot,
  maxTokensArgument,
  onTab,
  outputDirOf,
  pageInfo,
  pageOutput,
  tabArgument,
  toFileArgument,
} from './shared.js'

/** A snapshot written to a file is capped too, far above what an answer holds. */
const FILE_MAX_CHARS = 5_000_000

export const snapshot = defineTool({
  name: 'snapshot',
  title: 'Snapshot',
  description:
    'The page as an accessibility tree with refs (e12) for actions; a cut one ends with a cursor. find is cheaper for one element.',
  input: {
    ref: z.string().optional().describe('Only this subtree'),
    depth: z.number().int().min(1).max(100).optional().describe('Levels'),
    cursor: z.string().max(2000).optional().describe('From a cut one'),
    max_tokens: maxTokensArgument,
    boxes: z.boolean().optional().describe('Boxes'),
    to_file: toFileArgument,
    tab: tabArgument,
  },
  output: { ...pageOutput, ...budgetOutput },
  annotations: browse,
  async run({ ref, depth, cursor, max_tokens, boxes, to_file, tab: tabId }, context) {
    const { settings } = context.deps
    if (to_file) {
      const dir = outputDirOf(settings)
      return onTab(context, tabId, async (tab) => {
        const whole = await takeSnapshot(tab, { ref, depth, cursor, boxes, maxChars: FILE_MAX_CHARS })
        const file = await writeOutput(dir, 'snapshot', tab.id, 'txt', whole.text)
        return {
          data: pageInfo(tab),
          text: `Snapshot of tab ${tab.id} written to ${file.path} (${file.bytes} bytes, ${whole.refs} refs).`,
        }
      })
    }
    return onTab(context, tabId, async (tab) => {
      const answer = await fullSnapshot(tab, settings, {
        ref,
        depth,
        cursor,
        boxes,
        maxChars: capOf(settings, max_tokens),
      })
      return { data: { ...answer.data, ...(answer.cut ? { budget: answer.cut } : {}) }, text: answer.text }
    })
  },
})
