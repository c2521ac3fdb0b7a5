import { ToolError } from '@keel-mcp/core'
import { classifyGitHubError } from './lib/index.js'

/**
 * Octokit errors → the ToolError the model reads. GitHub's message is kept (cleaned, capped);
 * the request, its headers and the token stay out. Unknown errors return undefined: core turns
 * them into `internal` with a log reference.
 */
export function toToolError(error: unknown): ToolError | undefined {
  if (ToolError.is(error)) return error
  const classified = classifyGitHubError(error)
  if (!classified) return undefined
  return new ToolError(classified.kind, classified.message, {
    ...(classified.hint ? { hint: classified.hint } : {}),
    cause: error,
    ...(classified.status === undefined && !classified.unconfirmed
      ? {}
      : {
          details: {
            ...(classified.status === undefined ? {} : { status: classified.status }),
            ...(classified.unconfirmed ? { unconfirmed: true } : {}),
          },
        }),
  })
}
