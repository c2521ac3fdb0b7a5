import { checkToolContract, toolListSnapshot } from '@keel-mcp/core/testing'
import { describe, expect, it } from 'vitest'
import { coreTools, devtoolsTools, networkTools, optionalTools, server, visionTools } from '../src/server.js'
import { connect, hosts } from './helpers.js'

const all = ['--caps', 'evaluate,pdf', '--upload-dir', '.']

describe('browser contract', () => {
  it('follows the tool naming and annotation rules', () => {
    expect(
      checkToolContract(
        [...coreTools, ...Object.values(optionalTools), ...networkTools, ...visionTools, ...devtoolsTools],
        {
          serverName: 'browser',
          auditArguments: server.auditArguments,
        },
      ),
    ).toEqual([])
  })

  it('gives every tool an output schema', () => {
    for (const tool of [...coreTools, ...Object.values(optionalTools)])
      expect(tool.output, tool.name).toBeDefined()
  })

  it('offers evaluate, save_pdf and upload_file only when the command line turns them on', async () => {
    const plain = await connect()
    try {
      const names = (await plain.client.listTools()).tools.map((tool) => tool.name)
      expect(names).toEqual([
        'navigate',
        'go_back',
        'go_forward',
        'reload',
        'snapshot',
        'find',
        'click',
        'type',
        'fill_form',
        'select_option',
        'hover',
        'press_key',
        'drag',
        'take_screenshot',
        'list_tabs',
        'new_tab',
        'select_tab',
        'close_tab',
        'console_messages',
        'network_requests',
        'wait_for',
        'handle_dialog',
        'open_session',
        'close_session',
      ])
    } finally {
      await plain.close()
    }
    const full = await connect(all)
    try {
      const names = (await full.client.listTools()).tools.map((tool) => tool.name)
      expect(names).toEqual(expect.arrayContaining(['upload_file', 'evaluate', 'save_pdf']))
      expect(names).not.toContain('click_at')
      expect(names).not.toContain('downloads')
    } finally {
      await full.close()
    }
    const more = await connect([
      '--caps',
      'vision,downloads,network,devtools,emulate',
      '--download-dir',
      '.',
      '--output-dir',
      '.',
    ])
    try {
      const names = (await more.client.listTools()).tools.map((tool) => tool.name)
      expect(names).toEqual(
        expect.arrayContaining([
          'click_at',
          'drag_at',
          'type_at',
          'downloads',
          'network_request',
          'route',
          'save_storage_state',
          'performance_trace',
          'emulate',
        ]),
      )
    } finally {
      await more.close()
    }
  })

  it('keeps only browsing and reading tools with --read-only', async () => {
    const connection = await connect([...all, '--read-only'])
    try {
      const names = (await connection.client.listTools()).tools.map((tool) => tool.name)
      expect(names).toContain('navigate')
      expect(names).toContain('snapshot')
      for (const name of ['click', 'type', 'fill_form', 'evaluate', 'upload_file', 'handle_dialog'])
        expect(names).not.toContain(name)
    } finally {
      await connection.close()
    }
  })

  it('accepts no launch options, browser arguments, executable or profile paths in any tool', async () => {
    const connection = await connect(all)
    try {
      const { tools } = await connection.client.listTools()
      const properties = tools.flatMap((tool) => Object.keys(tool.inputSchema?.properties ?? {}))
      for (const forbidden of ['launchOptions', 'executablePath', 'args', 'userDataDir', 'headless'])
        expect(properties).not.toContain(forbidden)
      const refused = await connection.client
        .callTool({
          name: 'navigate',
          arguments: { url: 'https://example.com', launchOptions: { executablePath: '/bin/sh' } },
        })
        .then(
          (result) => result,
          (error: Error) => ({ isError: true, error: error.message }),
        )
      expect(refused.isError).toBe(true)
    } finally {
      await connection.close()
    }
  })

  it('keeps the whole catalogue within 155 tokens a tool (bytes / 4)', async () => {
    const connection = await connect(all)
    try {
      const { tools } = await connection.client.listTools()
      expect(tools).toHaveLength(27)
      expect(JSON.stringify(tools).length / 4 / tools.length).toBeLessThanOrEqual(155)
    } finally {
      await connection.close()
    }
  })

  it('keeps its tool list stable', async () => {
    const connection = await connect(all)
    try {
      expect(toolListSnapshot((await connection.client.listTools()).tools)).toMatchSnapshot()
    } finally {
      await connection.close()
    }
  })

  it('offers navigate and wait_for as tasks', async () => {
    const connection = await connect()
    try {
      const { tools } = await connection.client.listTools()
      const tasks = tools
        .filter((tool) => tool.execution?.taskSupport === 'optional')
        .map((tool) => tool.name)
      expect(tasks).toEqual(['navigate', 'wait_for'])
    } finally {
      await connection.close()
    }
  })

  it('starts no browser to connect and list tools', async () => {
    const connection = await connect()
    try {
      await connection.client.listTools()
      expect(hosts.at(-1)?.pid()).toBeUndefined()
    } finally {
      await connection.close()
    }
  })
})
