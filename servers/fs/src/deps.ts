import type { Logger } from '@keel-mcp/core'
import { AllowedDirectories } from './directories.js'
import { PathGuard, type WalkFileSystem, WatchHub, type WatchHubOptions } from './lib/index.js'
import type { FsDeps } from './tools/shared.js'

/**
 * Builds the server's dependencies from the configured directories. A missing or unusable directory is a
 * warning, never a crash: the server starts, and the tools say what is wrong.
 */
export async function createFsDeps(
  directories: readonly string[],
  logger: Logger,
  options: { walkFileSystem?: WalkFileSystem; watch?: WatchHubOptions } = {},
): Promise<FsDeps> {
  const { guard, warnings } = await PathGuard.create(directories)
  for (const warning of warnings) {
    logger.warn(`directory ${warning.root} ${warning.reason}${warning.dropped ? '; it is ignored' : ''}`)
  }
  if (directories.length === 0) {
    logger.warn(
      'no directories given: only the roots the client offers are accessible; a client without roots gets nothing. Pass directories: mcp-server-fs <dir>...',
    )
  } else if (guard.roots.length === 0) {
    logger.warn(
      'none of the given directories can be used: every tool call will be refused until the server is restarted with valid directories',
    )
  } else {
    logger.debug('allowed directories', { directories: guard.roots })
  }
  return {
    directories: new AllowedDirectories(guard, warnings, logger),
    watchers: new WatchHub(options.watch),
    ...(options.walkFileSystem ? { walkFileSystem: options.walkFileSystem } : {}),
  }
}
