export { baseUrlOf, isLoopback, normaliseApiUrl } from './api-url.js'
export {
  type ClientOptions,
  GitHubClients,
  MAX_CACHED_CLIENTS,
  type Octokit,
  TokenHostError,
  tokenKey,
} from './client.js'
export { type ClassifiedError, classifyGitHubError } from './errors.js'
export { type FileSlice, isBinary, sliceFile } from './file-content.js'
export { answeredBy, PushAccess, type RepositoryRef, WITHHELD } from './lockdown.js'
export { isOwnImage, OUTSIDE_IMAGE, trustImageHost } from './markup.js'
export { hasNextPage, lastPage } from './pages.js'
export { clean, cleanRendered, sanitize, sanitizeRendered, stripInvisible } from './sanitize.js'
