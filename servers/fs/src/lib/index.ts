export { type CopyOptions, type CopyPlan, copyEntry } from './copy.js'
export { decodeCursor, encodeCursor, queryKey } from './cursor.js'
export { type DeleteOptions, type DeletePlan, deleteEntry } from './delete.js'
export {
  type AppliedEdit,
  type ApplyEditsResult,
  applyEdits,
  defaultMaxEditBytes,
  detectLineEnding,
  type Edit,
  type EditFileOptions,
  type EditFileResult,
  editFile,
  findNearMiss,
  type MatchStrategy,
} from './edit.js'
export { FsError, type FsErrorCode, type FsErrorOptions, isErrnoError, toFsError } from './errors.js'
export { type FileInfo, getFileInfo } from './file-info.js'
export { createDirectory, type MoveOptions, moveFile } from './fs-ops.js'
export {
  type DirectoryEntry,
  type ListDirectoryOptions,
  type ListDirectoryResult,
  listDirectory,
} from './list-directory.js'
export {
  type GuardResult,
  intersectRoots,
  isWithin,
  PathGuard,
  type ResolveOptions,
  type RootWarning,
  type SafePath,
} from './path-guard.js'
export {
  countLines,
  defaultMaxMediaBytes,
  defaultMaxTextBytes,
  type MediaFile,
  type ReadTextOptions,
  type ReadTextResult,
  readMediaFile,
  readTextFile,
} from './read.js'
export {
  looksBinary,
  type OpenedFile,
  openForRead,
  readFileBounded,
  sniffLength,
  sniffMimeType,
  type WriteOptions,
  type WriteResult,
  writeFileAtomic,
} from './safe-io.js'
export {
  type ContentMatch,
  enableRegexBacktrackingFallback,
  maxRegexLineLength,
  type SearchContentOptions,
  type SearchContentResult,
  searchContent,
} from './search-content.js'
export {
  type SearchFilesOptions,
  type SearchFilesResult,
  searchFiles,
} from './search-files.js'
export { type DirectoryTreeOptions, type DirectoryTreeResult, directoryTree } from './tree.js'
export { type DirectoryGroup, defaultMaxTreeEntries, type EntryType, listTree } from './tree-list.js'
export {
  defaultScanLimit,
  type WalkFileSystem,
  type WalkOptions,
  type WalkProblem,
  type WalkProblems,
} from './walk.js'
export { WatchHub, type WatchHubOptions } from './watch.js'
