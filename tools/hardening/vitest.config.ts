import { defineProject } from 'vitest/config'
import { workspaceSource } from '../../vitest.shared.js'

export default defineProject({
  ...workspaceSource,
  test: {
    name: 'hardening',
    include: ['test/**/*.test.ts'],
    // The suites spawn servers, clusters and fakes of their own and measure memory: one file at a time.
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 120_000,
  },
})
