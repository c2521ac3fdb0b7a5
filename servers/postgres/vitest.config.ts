import { defineProject } from 'vitest/config'
import { workspaceSource } from '../../vitest.shared.js'

export default defineProject({
  ...workspaceSource,
  test: {
    name: 'postgres',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // One throwaway cluster for the whole run (see test/harness/postgres.ts).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
})
