// Octokit and the plugins it runs with, loaded on the first call (never at start-up). The bin
// bundles this module into a file of its own, dist/vendor/octokit.vendor.js (tools/bundle: any
// `*.vendor.js` import), so the published package needs none of them installed: no runtime
// dependency tree (and none of its engine warnings) on `npx`.
export { retry } from '@octokit/plugin-retry'
export { throttling } from '@octokit/plugin-throttling'
export { Octokit } from '@octokit/rest'
export { default as Bottleneck } from 'bottleneck/light.js'
