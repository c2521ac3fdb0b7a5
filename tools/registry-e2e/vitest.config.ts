import { defineProject } from 'vitest/config'
import { workspaceSource } from '../../vitest.shared.js'

// Unit tests only; the end-to-end run itself is `pnpm --filter @keel-mcp/registry-e2e run e2e`.
export default defineProject({
  ...workspaceSource,
  test: { name: 'registry-e2e', include: ['test/**/*.test.ts'], testTimeout: 30_000 },
})
