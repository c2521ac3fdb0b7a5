import { defineConfig } from 'vitest/config'

// One root config; each package has a few-line vitest.config.ts of its own and runs as a project.
export default defineConfig({
  test: {
    projects: ['packages/*', 'servers/*', 'tools/*'],
  },
})
