import { ToolError, z } from '@keel-mcp/core'
import { findElements } from '../lib/find.js'
import { shownUrl } from '../lib/url.js'
import { browse, capOf, defineTool, maxTokensArgument, onTab, tabArgument, untrusted } from './shared.js'

function encodeCursor(generation: number, offset: number): string {
  return `${generation}~find~${offset}`
}

export const find = defineTool({
  name: 'find',
  title: 'Find elements',
  description: 'Elements by text or accessible name and/or role, each with its ref and where it is.',
  input: {
    text: z.string().min(1).max(500).optional().describe('Text or name'),
    role: z.string().min(1).max(40).optional().describe('button, link, textbox…'),
    limit: z.number().int().min(1).max(200).default(20).describe('Max'),
    cursor: z.string().max(100).optional().describe('Same query'),
    boxes: z.boolean().default(false).describe('Boxes'),
    max_tokens: maxTokensArgument,
    tab: tabArgument,
  },
  output: { tab: z.string(), url: z.string(), total: z.number(), returned: z.number() },
  annotations: { ...browse, idempotentHint: true },
  async run({ text, role, limit, cursor, boxes, max_tokens, tab: tabId }, context) {
    if (!text && !role)
      throw new ToolError('invalid_argument', 'Give text, role, or both', { hint: 'find text="Add to cart"' })
    const cap = capOf(context.deps.settings, max_tokens)
    return onTab(context, tabId, async (tab) => {
      let offset = 0
      if (cursor) {
        const match = /^(\d+)~find~(\d+)$/.exec(cursor.trim())
        if (!match)
          throw new ToolError('invalid_argument', 'Not a find cursor', { hint: 'Pass the cursor find gave.' })
        if (Number(match[1]) !== tab.generation)
          throw new ToolError('conflict', 'The cursor belongs to an earlier page', {
            hint: 'Run find again.',
          })
        offset = Number(match[2])
      }
      const found = await findElements(tab, { text, role, offset, limit, boxes })
      const what = [text ? `text ${JSON.stringify(text)}` : '', role ? `role ${role}` : '']
        .filter(Boolean)
        .join(', ')
      const lines: string[] = []
      let size = 0
      for (const line of found.lines) {
        if (lines.length && size + line.length + 1 > cap) break
        lines.push(line)
        size += line.length + 1
      }
      const shownUpTo = offset + lines.length
      const more = shownUpTo < found.total
      const head =
        found.total === 0
          ? `No visible element matches ${what}.`
          : `${found.total} match${found.total === 1 ? '' : 'es'} for ${what}; ${offset + 1}–${shownUpTo} shown:`
      const tail = more
        ? `\n[${found.total - shownUpTo} more: find with the same query and cursor="${encodeCursor(tab.generation, shownUpTo)}".]`
        : ''
      const url = shownUrl(tab.page.url())
      return {
        data: { tab: tab.id, url, total: found.total, returned: lines.length },
        text: lines.length ? `${head}\n${untrusted(lines.join('\n'))}${tail}` : head,
      }
    })
  },
})
