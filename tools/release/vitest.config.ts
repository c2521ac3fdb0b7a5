import { defineProject } from 'vitest/config'

export default defineProject({
  test: { name: 'release-tools', include: ['test/**/*.test.ts'], testTimeout: 60_000 },
})
