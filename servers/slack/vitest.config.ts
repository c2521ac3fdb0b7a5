import { defineProject } from 'vitest/config'
import { workspaceSource } from '../../vitest.shared.js'

export default defineProject({
  ...workspaceSource,
  test: { name: 'slack', include: ['src/**/*.test.ts', 'test/**/*.test.ts'], testTimeout: 30_000 },
})
