import { budgetOutput, maxTokensArgument, openBudget, ToolError, withMarker, z } from '@keel-mcp/core'
import { readTextFile } from '../lib/index.js'
import {
  count,
  cursorArgument,
  defineTool,
  formatBytes,
  guardOf,
  limits,
  pathArgument,
  withNotices,
} from './shared.js'

const cap = formatBytes(limits.textBytes)
// The description says what the line arguments mean; their own texts only name them. Line numbers list
// their minimum (it says they are 1-based); a count of lines need not.
const lineNumber = (what: string) => z.number().int().min(1).optional().describe(what)
const lineCount = (what: string) => count().optional().describe(what)

export const readTextFileTool = defineTool({
  name: 'read_text_file',
  title: 'Read text file',
  description: 'A text file, whole or by lines (head, tail, start_line to end_line); says where to resume.',
  input: {
    path: pathArgument,
    head: lineCount('Head'),
    tail: lineCount('Tail'),
    start_line: lineNumber('Start line'),
    end_line: lineNumber('End line'),
    cursor: cursorArgument,
    max_tokens: maxTokensArgument,
  },
  // The text itself is the content block only: a structured copy would send it twice.
  output: {
    lines: z.number().int(),
    truncated: z.boolean(),
    nextLine: z.number().int().optional(),
    ...budgetOutput,
  },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(args, context) {
    const { path, head, tail, start_line, end_line } = args
    // A cut continues in the same text (the same lines read again), past the characters shown.
    const budget = openBudget('read_text_file', args)
    const ranged = start_line !== undefined || end_line !== undefined
    if (Number(head !== undefined) + Number(tail !== undefined) + Number(ranged) > 1) {
      throw new ToolError('invalid_argument', 'Give only one of head, tail, or start_line/end_line.')
    }
    if (start_line !== undefined && end_line !== undefined && end_line < start_line) {
      throw new ToolError('invalid_argument', `end_line (${end_line}) is before start_line (${start_line}).`)
    }
    const guard = await guardOf(context)
    const file = await guard.resolveSafe(path)
    const result = await readTextFile(file, {
      head,
      tail,
      startLine: start_line,
      endLine: end_line,
      maxBytes: limits.textBytes,
      signal: context.signal,
    })
    let notice = ''
    if (result.truncated && tail !== undefined) {
      notice = `[truncated at ${cap}: only the last ${result.lineCount} lines fit; read earlier lines with start_line/end_line]`
    } else if (result.lineCut) {
      notice = `[line ${result.startLine} is longer than ${cap} and was cut${result.nextLine ? `; continue with start_line=${result.nextLine}` : ''}]`
    } else if (result.truncated) {
      const first = result.startLine ?? 1
      notice = `[truncated at ${cap}: lines ${first}-${first + result.lineCount - 1} of a ${formatBytes(result.totalBytes)} file shown; continue with start_line=${result.nextLine}]`
    }
    const data = {
      lines: result.lineCount,
      truncated: result.truncated || result.lineCut,
      ...(result.nextLine === undefined ? {} : { nextLine: result.nextLine }),
    }
    if (result.text === '' && !notice) return { data, text: '[empty file]' }
    const part = budget.text(result.text)
    if (part.cut) return { data: { ...data, budget: part.cut }, text: withMarker(part.text, part.marker) }
    return { data, text: withNotices(part.text, notice) }
  },
})
