import { defineProject } from 'vitest/config'
import { workspaceSource } from '../../vitest.shared.js'

// The `module` condition picks the OpenTelemetry packages' ESM builds, whose imports have no file
// extensions (they expect a bundler, as the bins get): core's tests resolve without it.
const conditions = workspaceSource.resolve.conditions.filter((condition) => condition !== 'module')

export default defineProject({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: { name: 'core', include: ['src/**/*.test.ts', 'test/**/*.test.ts'], testTimeout: 30_000 },
})
