import { defineProject } from 'vitest/config'
import { workspaceSource } from '../../vitest.shared.js'

export default defineProject({
  ...workspaceSource,
  // The cluster tests start Redis, nginx and replica processes: one file at a time.
  test: {
    name: 'scale-e2e',
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    fileParallelism: false,
  },
})
