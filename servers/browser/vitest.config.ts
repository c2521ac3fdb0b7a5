import { defineProject } from 'vitest/config'
import { workspaceSource } from '../../vitest.shared.js'

export default defineProject({
  ...workspaceSource,
  test: { name: 'browser', include: ['src/**/*.test.ts', 'test/**/*.test.ts'], testTimeout: 30_000 },
})
