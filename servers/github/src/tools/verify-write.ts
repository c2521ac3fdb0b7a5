import { ToolError } from '@keel-mcp/core'
import { describeDifference, gitBlobSha, type Octokit } from '../lib/index.js'
import { signalOf } from './shared.js'

/**
 * No silent truncation: a write succeeds only when GitHub's name for the stored blob is the name
 * of the bytes sent. Otherwise the stored blob is read back and the error names the difference
 * (size, line endings, byte-order mark, encoding), and whether a commit was already made.
 */
export async function verifyStored(
  octokit: Octokit,
  where: { owner: string; repo: string },
  path: string,
  sent: Uint8Array,
  stored: string | null | undefined,
  options: { commit?: string; signal: AbortSignal },
): Promise<void> {
  if (stored === gitBlobSha(sent)) return
  const after = options.commit
    ? `Commit ${options.commit.slice(0, 7)} was made with it.`
    : 'Nothing was committed.'
  if (!stored) {
    throw new ToolError('unavailable', `GitHub did not say what it stored for ${path}. ${after}`, {
      hint: 'Read the file back with get_file_contents before relying on it.',
    })
  }
  let difference = 'its content differs'
  try {
    const { data } = await octokit.rest.git.getBlob({
      ...where,
      file_sha: stored,
      ...signalOf(options.signal),
    })
    difference = describeDifference(sent, Buffer.from(data.content, 'base64'))
  } catch {
    // The stored blob could not be read: the mismatch of names is still a fact to report.
  }
  throw new ToolError(
    'conflict',
    `GitHub stored ${path} differently from what was sent: ${difference}. ${after}`,
    {
      hint: options.commit
        ? 'Check the file with get_file_contents; write it again or revert the commit.'
        : 'Try again; if it persists, the content may be altered on the way (proxy, encoding).',
      details: { path, stored },
    },
  )
}
