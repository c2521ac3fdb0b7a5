import { defineProject } from 'vitest/config'
import { workspaceSource } from '../../vitest.shared.js'

export default defineProject({
  ...workspaceSource,
  test: { name: 'create-server', include: ['test/**/*.test.ts'], testTimeout: 30_000, hookTimeout: 300_000 },
})
