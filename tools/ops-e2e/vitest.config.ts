import { defineProject } from 'vitest/config'
import { workspaceSource } from '../../vitest.shared.js'

export default defineProject({
  ...workspaceSource,
  test: { name: 'ops-e2e', include: ['test/**/*.test.ts'], testTimeout: 120_000, hookTimeout: 120_000 },
})
