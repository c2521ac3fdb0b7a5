import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'postgres',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // One throwaway cluster for the whole run (see test/harness/postgres.ts).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
})
