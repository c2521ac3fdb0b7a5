import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { runProcess } from '@keel-mcp/core/testing'
import { describe, expect, it } from 'vitest'

const script = createRequire(import.meta.url).resolve('@keel-mcp/bundle/tools-table.mjs')
const serverDir = fileURLToPath(new URL('..', import.meta.url))

describe('README', () => {
  it('has the tools table the built server generates (pnpm run tools-table updates it)', async () => {
    const { code, stdout, stderr } = await runProcess(process.execPath, [script, '--check'], {
      cwd: serverDir,
    })
    const output = stdout + stderr
    expect(output).toContain('README.md tools table is up to date')
    expect(code).toBe(0)
  })
})
