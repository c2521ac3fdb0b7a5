import { fileURLToPath } from 'node:url'
import { runProcess } from '@keel-mcp/core/testing'
import { describe, expect, it } from 'vitest'

// A typo in --toolsets, --tools or --exclude-tools stops the start (exit 2) with the valid names,
// instead of serving fewer tools, or none, without a word. No browser is launched for this.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))

describe('unknown names on the command line', () => {
  it.each([
    [
      '--toolsets',
      'tabs',
      /^mcp-server-browser: Invalid --toolsets: unknown toolset "tabs"; this server has no toolsets/,
    ],
    ['--tools', 'goto', /^mcp-server-browser: Invalid --tools: unknown tool "goto"; known: .*navigate/],
    [
      '--exclude-tools',
      'click_on',
      /^mcp-server-browser: Invalid --exclude-tools: unknown tool "click_on"; known: .*click/,
    ],
  ])('refuses %s %s at start with exit 2, naming what exists', async (flag, value, message) => {
    const { code, stdout, stderr } = await runProcess(process.execPath, [BIN, flag, value])
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toMatch(message)
  })

  it('says in --help that there are no toolsets, instead of offering --toolsets', async () => {
    const { code, stdout } = await runProcess(process.execPath, [BIN, '--help'])
    expect(code).toBe(0)
    expect(stdout).toContain('Toolsets: none (all tools are served)')
    expect(stdout).not.toContain('--toolsets')
  })
})
