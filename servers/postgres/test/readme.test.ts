import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const script = createRequire(import.meta.url).resolve('@keel-mcp/bundle/tools-table.mjs')
const serverDir = fileURLToPath(new URL('..', import.meta.url))

describe('README', () => {
  it('has the tools table the built server generates (pnpm run tools-table updates it)', async () => {
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(process.execPath, [script, '--check'], {
        cwd: serverDir,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let output = ''
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk
      })
      child.stderr.on('data', (chunk: Buffer) => {
        output += chunk
      })
      child.on('exit', (exitCode) => resolve({ code: exitCode, output }))
    })
    expect(output).toContain('README.md tools table is up to date')
    expect(code).toBe(0)
  })
})
