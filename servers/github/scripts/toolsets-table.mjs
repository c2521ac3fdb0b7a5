#!/usr/bin/env node
// The README's tools table, grouped by toolset and generated from the built bin: one tools/list per
// toolset (`--toolsets <name>`) plus the default list, so the table shows what each flag really
// lists. keel-tools-table renders one flat list; this server's catalogue is split by toolsets.
//
//   node scripts/toolsets-table.mjs           rewrite the table in ./README.md
//   node scripts/toolsets-table.mjs --check   exit 1 when ./README.md is out of date
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { listTools as listBinTools, withTable } from '@keel-mcp/bundle/tools-table.mjs'

const TOOLSETS = [
  'context',
  'repos',
  'issues',
  'pull_requests',
  'actions',
  'users',
  'labels',
  'notifications',
  'git',
  'stargazers',
  'orgs',
  'gists',
  'security_advisories',
  'code_security',
  'dependabot',
  'secret_protection',
  'discussions',
  'projects',
  'dynamic',
]
const readme = join(process.cwd(), 'README.md')

const listTools = (args) =>
  listBinTools(args, { GITHUB_TOKEN: '', GITHUB_PERSONAL_ACCESS_TOKEN: '', MCP_TOOLSETS: '' })

const cell = (text) => String(text).replaceAll('|', '\\|').replaceAll('*', '\\*').replaceAll('\n', ' ')

function render(rows) {
  const header = ['toolset', 'tool', 'access', 'default', 'what it does', 'arguments (`?`: optional)']
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column].length)),
  )
  const line = (cells) => `| ${cells.map((text, column) => text.padEnd(widths[column])).join(' | ')} |`
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n')
}

const defaults = new Set((await listTools([])).map((tool) => tool.name))
const rows = []
for (const toolset of TOOLSETS) {
  for (const tool of await listTools(['--toolsets', toolset])) {
    const properties = tool.inputSchema?.properties ?? {}
    const required = new Set(tool.inputSchema?.required ?? [])
    const args = Object.keys(properties)
      .map((name) => `\`${name}\`${required.has(name) ? '' : '?'}`)
      .join(', ')
    rows.push([
      toolset,
      `\`${tool.name}\``,
      tool.annotations?.readOnlyHint
        ? 'read'
        : tool.annotations?.destructiveHint !== false
          ? 'write (destructive)'
          : 'write',
      defaults.has(tool.name) ? 'yes' : '',
      cell(tool.description),
      args || '—',
    ])
  }
}

const current = await readFile(readme, 'utf8')
const next = withTable(current, render(rows))
if (process.argv.includes('--check')) {
  if (next !== current) {
    process.stderr.write(
      'README.md tools table is out of date: run `pnpm --filter @keel-mcp/server-github tools-table`\n',
    )
    process.exit(1)
  }
  process.stdout.write('README.md tools table is up to date\n')
} else if (next !== current) {
  await writeFile(readme, next)
  process.stdout.write('README.md tools table updated\n')
}
