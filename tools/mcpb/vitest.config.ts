import { defineProject } from 'vitest/config'
import { workspaceSource } from '../../vitest.shared.js'

export default defineProject({
  ...workspaceSource,
  test: { name: 'mcpb', include: ['test/**/*.test.ts'], testTimeout: 60_000 },
})
