import { z } from '@keel-mcp/core'
import { deleteEntry } from '../lib/index.js'
import { confirmWithUser } from './confirm.js'
import { defineTool, displayJoin, displayPath, flag, guardOf, pathArgument } from './shared.js'

const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`

/** Paths a result names at most; the counts cover the rest. */
const listedPaths = 200

export const deleteFileTool = defineTool({
  name: 'delete_file',
  title: 'Delete file',
  description:
    'Delete a file, link (not its target) or empty directory; recursive: a tree; dry_run: list only.',
  input: {
    path: pathArgument,
    recursive: flag('Recursive'),
    dry_run: flag('Dry run'),
  },
  output: { deleted: z.boolean(), paths: z.array(z.string()), count: z.number().int() },
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  toolset: 'destructive',
  async run({ path, recursive = false, dry_run = false }, context) {
    const guard = await guardOf(context)
    const target = await guard.resolveSafe(path, { followFinalSymlink: false, mustExist: true })
    const shown = displayPath(guard, target.path)
    const parentShown = shown.includes('/') ? shown.slice(0, shown.lastIndexOf('/')) : '.'
    const describe = (count: number, files: number, directories: number, links: number) =>
      count === 1
        ? shown
        : `${shown} and everything in it (${[
            plural(files, 'file'),
            plural(directories - 1, 'directory', 'directories'),
            ...(links ? [plural(links, 'link')] : []),
          ].join(', ')})`
    const plan = await deleteEntry(target, {
      recursive,
      dryRun: dry_run,
      signal: context.signal,
      confirm: (planned) =>
        confirmWithUser(
          context,
          `Delete ${describe(planned.paths.length, planned.files, planned.directories, planned.links)}? This cannot be undone.`,
        ),
    })
    const paths = plan.paths
      .slice(0, listedPaths)
      .map((entry) => (parentShown === '.' ? entry : displayJoin(parentShown, entry)))
    const more = plan.paths.length > paths.length ? `\n… and ${plan.paths.length - paths.length} more` : ''
    const summary = describe(plan.paths.length, plan.files, plan.directories, plan.links)
    return {
      data: { deleted: !dry_run, paths, count: plan.paths.length },
      text: dry_run
        ? `Dry run: nothing deleted. Would delete ${summary}:\n${paths.join('\n')}${more}`
        : `Deleted ${summary}.`,
    }
  },
})
