import { capText, z } from '@keel-mcp/core'
import { editFile } from '../lib/index.js'
import { defineTool, displayPath, flag, guardOf, limits, nonEmpty, pathArgument } from './shared.js'

const strategies: Record<string, string> = {
  'line-endings': 'after matching line endings',
  indentation: 'ignoring indentation',
  whitespace: 'ignoring whitespace',
}

export const editFileTool = defineTool({
  name: 'edit_file',
  title: 'Edit file',
  description:
    'Replace text: edits in order, all or none; lenient on line endings, indentation. A miss shows the nearest text.',
  input: {
    path: pathArgument,
    edits: z
      .array(
        z.object({
          old_text: z.string().refine(nonEmpty, 'must not be empty').describe('Unique unless replace_all'),
          new_text: z.string().describe('New text'),
          replace_all: z.boolean().optional().describe('Replace all'),
        }),
      )
      .refine(nonEmpty, 'must not be empty')
      .describe('Edits'),
    dry_run: flag('Dry run'),
  },
  output: { path: z.string(), changed: z.boolean(), diff: z.string() },
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  async run({ path, edits, dry_run = false }, context) {
    const guard = await guardOf(context)
    const file = await guard.resolveSafe(path, { forWrite: true, mustExist: true })
    const result = await editFile(
      file,
      edits.map((edit) => ({ oldText: edit.old_text, newText: edit.new_text, replaceAll: edit.replace_all })),
      { dryRun: dry_run, signal: context.signal },
    )
    const name = displayPath(guard, file.path)
    if (!result.changed)
      return {
        data: { path: name, changed: false, diff: '' },
        text: `No change: the edits leave ${name} as it was.`,
      }
    const notes = result.applied
      .filter((applied) => applied.strategy !== 'exact' || applied.replacements > 1)
      .map(
        (applied) =>
          `edit ${applied.index + 1}: ${applied.replacements} replacement${applied.replacements === 1 ? '' : 's'}${strategies[applied.strategy] ? `, matched ${strategies[applied.strategy]}` : ''}`,
      )
    const summary = dry_run
      ? `Dry run: ${name} not written. The edits would change it as follows.`
      : `Edited ${name} (${edits.length} edit${edits.length === 1 ? '' : 's'}).`
    // The diff's Index/=== preamble repeats the path: tokens for nothing.
    const diff = capText(result.diff.replace(/^Index: .*\n=+\n/, ''), limits.diffBytes).text
    return { data: { path: name, changed: !dry_run, diff }, text: [summary, ...notes, diff].join('\n') }
  },
})
