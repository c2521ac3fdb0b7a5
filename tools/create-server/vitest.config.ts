import { defineProject } from 'vitest/config'

export default defineProject({
  test: { name: 'create-server', include: ['test/**/*.test.ts'], testTimeout: 30_000, hookTimeout: 300_000 },
})
