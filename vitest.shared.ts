// Shared by every package's vitest.config.ts. Workspace packages export their TypeScript sources
// under the `keel-source` condition (the published manifests point at dist/ instead), so tests
// run against core's source: no build of core first, and never a stale dist/.
const conditions = ['keel-source', 'module', 'node', 'development|production']

export const workspaceSource = { resolve: { conditions }, ssr: { resolve: { conditions } } }
