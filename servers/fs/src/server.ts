import { defineServer, svgIcon } from '@keel-mcp/core'
import pkg from '../package.json' with { type: 'json' }
import { positionals } from './config.js'
import { createFsDeps } from './deps.js'
import { mapError } from './errors.js'
import { icon } from './icon.js'
import { fileResource } from './resources.js'
import { copyFileTool } from './tools/copy-file.js'
import { createDirectoryTool } from './tools/create-directory.js'
import { deleteFileTool } from './tools/delete-file.js'
import { directoryTreeTool } from './tools/directory-tree.js'
import { editFileTool } from './tools/edit-file.js'
import { getFileInfoTool } from './tools/get-file-info.js'
import { listAllowedDirectoriesTool } from './tools/list-allowed-directories.js'
import { listDirectoryTool } from './tools/list-directory.js'
import { moveFileTool } from './tools/move-file.js'
import { readMediaFileTool } from './tools/read-media-file.js'
import { readMultipleFilesTool } from './tools/read-multiple-files.js'
import { readTextFileTool } from './tools/read-text-file.js'
import { searchContentTool } from './tools/search-content.js'
import { searchFilesTool } from './tools/search-files.js'
import type { FsDeps } from './tools/shared.js'
import { writeFileTool } from './tools/write-file.js'

/**
 * Every tool, in the order clients list them: reading and finding first, then writing, then the
 * `destructive` toolset (copy and delete), which is only listed when asked for.
 */
export const tools = [
  readTextFileTool,
  readMediaFileTool,
  readMultipleFilesTool,
  listDirectoryTool,
  directoryTreeTool,
  searchFilesTool,
  searchContentTool,
  getFileInfoTool,
  listAllowedDirectoriesTool,
  writeFileTool,
  editFileTool,
  createDirectoryTool,
  moveFileTool,
  copyFileTool,
  deleteFileTool,
]

export const server = defineServer<FsDeps>({
  name: 'fs',
  version: pkg.version,
  icons: [svgIcon(icon)],
  description: pkg.description,
  instructions: (config) =>
    [
      'Access is limited to the allowed directories (list_allowed_directories); relative paths resolve against the first.',
      'Find before reading: search_content for text, search_files for names, directory_tree for layout; read_text_file takes line ranges.',
      config.readOnly
        ? 'Read-only: no tool writes.'
        : 'edit_file for changes to part of a file, write_file for whole files.',
      !config.readOnly && config.toolsets.some((name) => name === 'all' || name === 'destructive')
        ? 'delete_file removes for good: dry_run first for a tree.'
        : '',
    ]
      .filter(Boolean)
      .join(' '),
  positionals,
  toolsets: {
    default: 'reading, searching, writing, editing, moving',
    destructive: 'copy_file, delete_file (off unless named)',
  },
  defaultToolsets: ['default'],
  // The audit log (--audit-log) records which files a call touched; never what was written.
  auditArguments: ['path', 'paths', 'source', 'destination'],
  helpFooter: [
    'Examples:',
    '  mcp-server-fs ~/projects/app                 serve one directory over stdio',
    '  mcp-server-fs ./docs ./src --read-only       two directories, no writing tools',
    '  mcp-server-fs . --transport http --port 3000',
    '  mcp-server-fs . --toolsets all               also copy_file and delete_file',
  ].join('\n'),
  tools,
  resourceTemplates: [fileResource],
  createDeps: ({ config, logger }) => createFsDeps(config.positionals, logger),
  dispose: (deps) => deps.watchers.close(),
  // Ready while every configured directory is still a directory this process can read.
  async ready(deps) {
    const { access, stat } = await import('node:fs/promises')
    const { constants } = await import('node:fs')
    for (const root of deps.directories.base.roots) {
      if (!(await stat(root)).isDirectory()) throw new Error(`${root} is no longer a directory`)
      await access(root, constants.R_OK | constants.X_OK)
    }
  },
  mapError,
  async onRootsChanged({ deps, client, log }) {
    deps.directories.clear()
    // Apply the new roots now, so that problems with them are logged when they happen.
    await deps.directories
      .forClient(client)
      .catch((error: unknown) =>
        log.warn('could not apply the new client roots', { error: (error as Error).message }),
      )
  },
})
