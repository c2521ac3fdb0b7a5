import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { connectInMemory } from '@keel-mcp/core/testing'
import { describe, expect, it } from 'vitest'
import { BOT_TOKEN, fake, testServer, USER_TOKEN, useCleanup } from './helpers.js'

useCleanup()

// Every tool, called on the fake workspace through both client generations: each client checks
// structuredContent against the outputSchema it was given in tools/list (v1 with Ajv) and throws
// when they disagree, so a call that resolves is a result that validates.
const calls: Array<
  [string, Record<string, unknown> | ((previous: Map<string, any>) => Record<string, unknown>)]
> = [
  ['list_channels', { limit: 5 }],
  ['get_channel_info', { channel: '#general' }],
  ['find_channel', { name: '#general' }],
  ['get_channel_history', { channel: '#general', limit: 5 }],
  ['get_thread_replies', { channel: 'C0GENERAL', thread_ts: '1700000099.000100' }],
  ['get_message', { permalink: 'https://fake.slack.com/archives/C0GENERAL/p1700000098000100' }],
  ['search_messages', { query: 'general', count: 5 }],
  ['list_users', { limit: 5 }],
  ['get_user_profile', { user: 'U00000002' }],
  ['find_user', { name: 'user3' }],
  ['post_message', { channel: '#random', text: 'hello' }],
  [
    'reply_to_thread',
    (previous) => ({ channel: 'C0RANDOM', thread_ts: previous.get('post_message').ts, text: 'in thread' }),
  ],
  [
    'add_reaction',
    (previous) => ({ channel: 'C0RANDOM', ts: previous.get('post_message').ts, name: 'eyes' }),
  ],
  ['update_message', { channel: 'C0RANDOM', ts: '1700000050.000100', text: 'edited' }],
  ['delete_message', { channel: 'C0RANDOM', ts: '1700000050.000100' }],
  ['list_user_groups', {}],
  ['list_unreads', {}],
  ['mark_read', { channel: '#general' }],
  ['list_files', {}],
  ['get_file', { file: 'F0NOTES' }],
  ['upload_file', { channel: '#random', path: 'report.txt' }],
  [
    'schedule_message',
    { channel: '#random', text: 'later', post_at: new Date(Date.now() + 3_600_000).toISOString() },
  ],
  ['list_scheduled_messages', {}],
  [
    'delete_scheduled_message',
    (previous) => ({ channel: '#random', id: previous.get('schedule_message').id }),
  ],
  ['get_canvas', { canvas: 'F0CANVAS' }],
  ['create_canvas', { title: 'Notes', markdown: '# Notes' }],
  ['edit_canvas', { canvas: 'F0CANVAS', markdown: '- more' }],
]

describe.each([
  { label: 'v2 client', generation: 'v2' as const },
  { label: 'v1 client (Ajv)', generation: 'v1' as const },
])('structured results match the listed output schemas ($label)', ({ generation }) => {
  it('calls every tool and gets structuredContent the client validated', async () => {
    const slack = await fake()
    const uploads = await mkdtemp(path.join(tmpdir(), 'keel-slack-upload-'))
    await writeFile(path.join(uploads, 'report.txt'), 'quarterly numbers\n')
    const connection = await connectInMemory(testServer, {
      generation,
      argv: ['--allow-writes', '--upload-dir', uploads],
      env: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_USER_TOKEN: USER_TOKEN, SLACK_API_URL: slack.url },
    })
    try {
      const { tools } = await connection.client.listTools()
      expect(tools.filter((tool) => !tool.outputSchema).map((tool) => tool.name)).toEqual([])
      expect(calls.map(([name]) => name).sort()).toEqual(tools.map((tool) => String(tool.name)).sort())
      const previous = new Map<string, any>()
      for (const [name, args] of calls) {
        const result = await connection.client.callTool({
          name,
          arguments: typeof args === 'function' ? args(previous) : args,
        })
        expect({ name, isError: result.isError ?? false }).toEqual({ name, isError: false })
        expect(result.structuredContent).toBeTypeOf('object')
        previous.set(name, result.structuredContent)
      }
    } finally {
      await connection.close()
      await rm(uploads, { recursive: true, force: true })
    }
  })
})
