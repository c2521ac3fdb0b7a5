import { defineProject } from 'vitest/config'
import { workspaceSource } from '../../vitest.shared.js'

export default defineProject({
  ...workspaceSource,
  test: { name: 'conformance', include: ['test/**/*.test.ts'], testTimeout: 150_000 },
})
