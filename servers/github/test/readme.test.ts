import { fileURLToPath } from 'node:url'
import { runProcess } from '@keel-mcp/core/testing'
import { describe, expect, it } from 'vitest'

const serverDir = fileURLToPath(new URL('..', import.meta.url))

describe('README', () => {
  it('has the toolsets table the built server generates (pnpm run tools-table updates it)', async () => {
    const { code, stdout, stderr } = await runProcess(
      process.execPath,
      ['scripts/toolsets-table.mjs', '--check'],
      {
        cwd: serverDir,
      },
    )
    expect(stdout + stderr).toContain('README.md tools table is up to date')
    expect(code).toBe(0)
  })
})
