// Octokit and the plugins it runs with, loaded on the first call (never at start-up). The bin
// bundles this module into a file of its own, dist/vendor/octokit.vendor.js (tools/bundle: any
// `*.vendor.js` import), so the published package needs none of them installed: no runtime
// dependency tree (and none of its engine warnings) on `npx`.
//
// The client is @octokit/rest without its request-log plugin: @octokit/core with the REST methods
// (`octokit.rest.*`) and pagination, as @octokit/rest composes them, and the retry and throttling
// plugins. request-log expanded each request's URL template a second time to log it at debug and
// info level (which the server discards) and on failure (client.ts logs failures itself).
export { Octokit } from '@octokit/core'
export { paginateRest } from '@octokit/plugin-paginate-rest'
export { legacyRestEndpointMethods } from '@octokit/plugin-rest-endpoint-methods'
export { retry } from '@octokit/plugin-retry'
export { throttling } from '@octokit/plugin-throttling'
export { default as Bottleneck } from 'bottleneck/light.js'
