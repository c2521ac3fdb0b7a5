export {
  AccountRoutingError,
  type AccountSpec,
  ownerOfRequest,
  parseAccounts,
  parseRoutes,
  routeByOwner,
} from './accounts.js'
export { baseUrlOf, isLoopback, normaliseApiUrl } from './api-url.js'
export {
  type ClientOptions,
  GitHubClients,
  MAX_CACHED_CLIENTS,
  type Octokit,
  TokenHostError,
  tokenKey,
} from './client.js'
export { type DiffFile, type DiffPage, type DiffPosition, pageDiff, parseDiff } from './diff.js'
export { type ClassifiedError, classifyGitHubError } from './errors.js'
export { type FileSlice, isBinary, sliceFile } from './file-content.js'
export { isFineGrained, lackedPermissions, MAX_TOKENS, TokenGrants } from './grants.js'
export { answeredBy, PushAccess, type RepositoryRef, WITHHELD } from './lockdown.js'
export { isOwnImage, OUTSIDE_IMAGE, trustImageHost } from './markup.js'
export { hasNextPage, lastPage } from './pages.js'
export { clean, cleanRendered, sanitize, sanitizeRendered, stripInvisible } from './sanitize.js'
export { hiddenByScopes, parseScopes, type ToolFacts } from './scopes.js'
export { describeDifference, gitBlobSha } from './write-check.js'
