import { defineProject } from 'vitest/config'
import { workspaceSource } from '../../vitest.shared.js'

export default defineProject({
  ...workspaceSource,
  // Hooks bundle fixtures (esbuild and the SDK rewrite): seconds on a loaded 2-core machine.
  test: { name: 'bundle', include: ['test/**/*.test.ts'], testTimeout: 60_000, hookTimeout: 60_000 },
})
