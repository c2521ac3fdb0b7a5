import { spawn } from 'node:child_process'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// The official conformance suite (tools/conformance's runner, the whole active server suite)
// against nginx in front of three replicas of the conformance fixture sharing Redis: every
// scenario's requests are spread over the replicas.

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const repoDir = resolve(packageDir, '../..')

function run(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, args, { cwd: repoDir, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
    })
    child.once('error', reject)
    child.once('exit', (code) => resolveRun({ code, output }))
  })
}

describe('official MCP conformance suite through the load balancer', () => {
  it('passes the active server suite against three replicas behind nginx, with no expected failures', async () => {
    const { code, output } = await run([
      'tools/conformance/src/run-suite.mjs',
      '--expected-failures',
      'tools/conformance/expected-failures.yml',
      '--',
      process.execPath,
      join(packageDir, 'dist/cluster.js'),
      '--bin',
      'tools/conformance/dist/index.js',
    ])
    expect(output).toMatch(/at http:\/\/127\.0\.0\.1:\d+\/mcp/)
    expect(output).toMatch(
      /PASS: \d+ scenarios .* 0 unexpected failure\(s\), 0 stale baseline entries, 0 other problem\(s\)/,
    )
    expect(output).toMatch(/tools-call-elicitation\s+\d+\s+0\s+0\s+pass/)
    expect(code).toBe(0)
  })
})
