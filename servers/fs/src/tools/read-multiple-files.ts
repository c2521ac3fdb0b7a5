import { stat } from 'node:fs/promises'
import { z } from '@keel-mcp/core'
import { describeError } from '../errors.js'
import { readTextFile, type SafePath } from '../lib/index.js'
import { defineTool, formatBytes, guardOf, items, limits, nonEmpty } from './shared.js'

interface Planned {
  path: string
  file?: SafePath
  size?: number
  error?: string
}

export const readMultipleFilesTool = defineTool({
  name: 'read_multiple_files',
  title: 'Read multiple files',
  description: `Text files at once, each read or failing alone; ${formatBytes(limits.multipleBytes)} in all.`,
  input: {
    paths: z.array(z.string()).max(50).refine(nonEmpty, 'must not be empty').describe('Paths'),
  },
  output: {
    files: items(),
  },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run({ paths }, context) {
    const guard = await guardOf(context)
    const planned: Planned[] = await Promise.all(
      paths.map(async (path): Promise<Planned> => {
        try {
          const file = await guard.resolveSafe(path)
          return { path, file, size: (await stat(file.path)).size }
        } catch (error) {
          context.signal.throwIfAborted()
          return { path, error: describeError(error, context.log) }
        }
      }),
    )
    // Water-filling: the smallest files are read whole, the rest share what is left equally.
    const budgets = new Map<Planned, number>()
    const readable = planned.filter((item) => item.file).sort((left, right) => left.size! - right.size!)
    let remaining = limits.multipleBytes
    readable.forEach((item, index) => {
      const share = Math.floor(remaining / (readable.length - index))
      const budget = Math.max(1, Math.min(item.size!, share))
      budgets.set(item, budget)
      remaining = Math.max(0, remaining - budget)
    })
    const files = await Promise.all(
      planned.map(async (item) => {
        if (!item.file) return { path: item.path, error: item.error! }
        try {
          const result = await readTextFile(item.file, {
            maxBytes: budgets.get(item)!,
            signal: context.signal,
          })
          return {
            path: item.path,
            content: result.text,
            ...(result.truncated ? { truncated: true } : {}),
            ...(result.truncated && result.nextLine ? { nextLine: result.nextLine } : {}),
          }
        } catch (error) {
          context.signal.throwIfAborted()
          return { path: item.path, error: describeError(error, context.log) }
        }
      }),
    )
    const text = files
      .map((file) => {
        const head = `==> ${file.path} <==\n`
        if (file.error !== undefined) return `${head}${file.error}`
        const body = file.content ?? ''
        const notice = file.truncated
          ? `${body.endsWith('\n') || body === '' ? '' : '\n'}[truncated: the shared ${formatBytes(limits.multipleBytes)} budget ran out${file.nextLine ? `; continue with read_text_file start_line=${file.nextLine}` : ''}]`
          : ''
        return `${head}${body}${notice}`
      })
      .join('\n')
    return { data: { files }, text }
  },
})
