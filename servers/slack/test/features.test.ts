import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { call, connect, fake, USER_TOKEN, useCleanup } from './helpers.js'

useCleanup()
const temporary: string[] = []
afterEach(async () => {
  await Promise.all(temporary.splice(0).map((directory) => rm(directory, { recursive: true, force: true })))
})
const user = { SLACK_USER_TOKEN: USER_TOKEN }

describe('unreads', () => {
  it('tells a bot-token-only server that unreads need a user token', async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--allow-writes'])
    const listed = await call(connection, 'list_unreads')
    expect(listed.text).toMatch(/^unavailable: list_unreads needs a user token/)
    expect((await call(connection, 'mark_read', { channel: '#general' })).text).toMatch(/needs a user token/)
  })

  it('lists readable conversations with unread messages, newest first, and mark_read clears one', async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--allow-writes', '--include-dms'], user)
    const listed = await call(connection, 'list_unreads')
    // general: 4 messages after the marker; D0DIRECT: 1; random: none; the private channel is not readable.
    expect(
      listed.data.conversations.map((entry: { id: string; unread: number }) => [entry.id, entry.unread]),
    ).toEqual([
      ['C0GENERAL', 4],
      ['D0DIRECT', 1],
    ])
    await call(connection, 'mark_read', { channel: '#general' })
    expect(slack.features.marked).toEqual([{ channel: 'C0GENERAL', ts: '1700000099.000100' }])
    const after = await call(connection, 'list_unreads')
    expect(after.data.conversations.map((entry: { id: string }) => entry.id)).toEqual(['D0DIRECT'])
    expect(
      slack.calls
        .filter((entry) => entry.method === 'conversations.mark')
        .every((entry) => entry.token === USER_TOKEN),
    ).toBe(true)
  })
})

describe('user groups', () => {
  it('lists groups with members by name, and resolves @group and @user mentions in history', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    const groups = await call(connection, 'list_user_groups')
    expect(groups.data.groups).toEqual([
      {
        id: 'S0DEVS',
        handle: '@devs',
        name: 'Developers',
        count: 2,
        members: [
          { id: 'U00000001', name: 'disp1' },
          { id: 'U00000002', name: 'disp2' },
        ],
      },
    ])
    const history = await call(connection, 'get_channel_history', { channel: '#random' })
    const ping = history.data.messages.find((message: { text: string }) => message.text.startsWith('ping'))
    expect(ping.mentions).toEqual({ U00000002: '@disp2', S0DEVS: '@devs' })
  })
})

describe('files', () => {
  it('lists only files shared where the server may read, and reads a text file within the budget', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    const listed = await call(connection, 'list_files')
    expect(listed.data.files.map((file: { id: string }) => file.id)).toEqual([
      'F0NOTES',
      'F0IMAGE',
      'F0CANVAS',
    ])
    const notes = await call(connection, 'get_file', { file: 'F0NOTES' })
    expect(notes.text.split('\n')[0]).toContain('untrusted')
    expect(notes.data).toMatchObject({ content: 'line one\nline two\n', truncated: false })
    const cut = await call(connection, 'get_file', { file: 'F0NOTES', max_bytes: 4 })
    expect(cut.data).toMatchObject({ content: 'line', truncated: true })
    const image = await call(connection, 'get_file', { file: 'F0IMAGE' })
    expect(image.data.content).toBeUndefined()
    expect(image.data.file).toMatchObject({ type: 'png', link: expect.stringContaining('diagram.png') })
    expect(slack.fileRequests.map((request) => request.path)).toEqual([
      '/files-pri/F0NOTES/notes.txt',
      '/files-pri/F0NOTES/notes.txt',
    ])
    expect((await call(connection, 'get_file', { file: 'F0SECRET' })).text).toMatch(/^permission_denied: /)
  })

  it('never sends the token to a file URL on another host', async () => {
    const seen: string[] = []
    const other = createServer((request, response) => {
      seen.push(String(request.headers.authorization))
      response.end('stolen')
    })
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
    try {
      const slack = await fake()
      const port = (other.address() as AddressInfo).port
      const notes = slack.features.files[0]
      slack.features.files.push({
        ...notes!,
        id: 'F0ELSEWHERE',
        url_private: `http://127.0.0.1:${port}/x.txt`,
      })
      const connection = await connect(slack)
      const result = await call(connection, 'get_file', { file: 'F0ELSEWHERE' })
      expect(result.text).toMatch(/^permission_denied: The file is not on a Slack file host/)
      expect(seen).toEqual([])
    } finally {
      other.close()
    }
  })

  it('uploads only from the upload directory, never through a link, and only to write-allowed channels', async () => {
    const base = await mkdtemp(path.join(tmpdir(), 'keel-slack-'))
    temporary.push(base)
    const uploads = path.join(base, 'uploads')
    await mkdir(path.join(uploads, 'sub'), { recursive: true })
    await writeFile(path.join(uploads, 'sub', 'report.txt'), 'numbers\n')
    await writeFile(path.join(base, 'secret.txt'), 'outside\n')
    await symlink(path.join(base, 'secret.txt'), path.join(uploads, 'link.txt'))
    await symlink(base, path.join(uploads, 'up'))
    const slack = await fake()
    const connection = await connect(slack, [
      '--allow-writes',
      '--write-channels',
      '#random',
      '--upload-dir',
      uploads,
    ])
    const sent = await call(connection, 'upload_file', {
      channel: '#random',
      path: 'sub/report.txt',
      comment: 'hi <!channel>',
    })
    expect(sent.data).toEqual({ file: 'F0UP1', channel: 'C0RANDOM' })
    const upload = slack.features.uploads.get('F0UP1')
    expect(upload?.bytes?.toString()).toBe('numbers\n')
    expect(upload?.completed).toMatchObject({
      channel: 'C0RANDOM',
      comment: 'hi &lt;!channel&gt;',
      title: 'report.txt',
    })
    for (const [where, message] of [
      ['link.txt', /symbolic link/],
      ['up/secret.txt', /symbolic link/],
      ['../secret.txt', /inside the upload directory/],
      [path.join(base, 'secret.txt'), /relative/],
    ] as const) {
      expect((await call(connection, 'upload_file', { channel: '#random', path: where })).text).toMatch(
        message,
      )
    }
    expect(
      (await call(connection, 'upload_file', { channel: '#general', path: 'sub/report.txt' })).text,
    ).toMatch(/--write-channels/)
    expect(slack.features.uploads.size).toBe(1)
    const without = await connect(slack, ['--allow-writes'])
    expect((await without.client.listTools()).tools.map((tool) => tool.name)).not.toContain('upload_file')
  })
})

describe('scheduled messages', () => {
  it('schedules into write-allowed channels with broadcasts escaped, lists and cancels', async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--allow-writes', '--write-channels', '#random'])
    const later = new Date(Date.now() + 86_400_000).toISOString()
    const made = await call(connection, 'schedule_message', {
      channel: '#random',
      text: '<!here> soon',
      post_at: later,
    })
    expect(made.data.id).toBe('Q0SCHED1')
    expect(slack.features.scheduled[0]?.text).toBe('&lt;!here&gt; soon')
    expect(
      (await call(connection, 'schedule_message', { channel: '#general', text: 'x', post_at: later })).text,
    ).toMatch(/^permission_denied: /)
    expect(
      (
        await call(connection, 'schedule_message', {
          channel: '#random',
          text: 'x',
          post_at: '2001-01-01T00:00:00Z',
        })
      ).text,
    ).toMatch(/^invalid_argument: post_at must be in the future/)
    const listed = await call(connection, 'list_scheduled_messages')
    expect(listed.data.messages).toMatchObject([{ id: 'Q0SCHED1', channel: 'C0RANDOM' }])
    await call(connection, 'delete_scheduled_message', { channel: '#random', id: 'Q0SCHED1' })
    expect(slack.features.scheduled).toEqual([])
  })
})

describe('canvases', () => {
  it('reads a canvas as text, edits it, and creates one only where writes are allowed', async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--allow-writes', '--write-channels', '#random'])
    const read = await call(connection, 'get_canvas', { canvas: 'F0CANVAS' })
    expect(read.data.text).toBe('Roadmap\nShip it & celebrate\n- one\n- two')
    expect((await call(connection, 'get_canvas', { canvas: 'F0NOTES' })).text).toMatch(/not a canvas/)
    // The roadmap is shared in #general only: not a write-allowed channel.
    expect((await call(connection, 'edit_canvas', { canvas: 'F0CANVAS', markdown: 'x' })).text).toMatch(
      /^permission_denied: /,
    )
    expect((await call(connection, 'create_canvas', { title: 'T', markdown: '# T' })).text).toMatch(
      /Give a channel/,
    )
    const made = await call(connection, 'create_canvas', { title: 'T', markdown: '# T', channel: '#random' })
    expect(slack.features.canvases.get(made.data.canvas)).toMatchObject({
      channel: 'C0RANDOM',
      markdown: '# T',
    })
    const open = await connect(slack, ['--allow-writes'])
    await call(open, 'edit_canvas', { canvas: 'F0CANVAS', markdown: '- three', operation: 'insert_at_end' })
    expect(slack.features.canvases.get('F0CANVAS')?.edits).toEqual([
      { operation: 'insert_at_end', document_content: { type: 'markdown', markdown: '- three' } },
    ])
  })
})

describe('search filters', () => {
  it('turns the filter arguments into Slack modifiers, checking the channel first', async () => {
    const slack = await fake()
    const connection = await connect(slack, [], user)
    await call(connection, 'search_messages', {
      query: 'deploy',
      in: '#general',
      from: 'U00000002',
      after: '2024-01-01',
      before: '2024-02-01',
      has: 'link',
    })
    const sent = slack.calls.find((entry) => entry.method === 'search.messages')
    expect(sent?.args.query).toBe(
      'deploy in:#general from:<@U00000002> after:2024-01-01 before:2024-02-01 has:link',
    )
    const refused = await call(connection, 'search_messages', { query: 'plan', in: 'G0SECRET' })
    expect(refused.text).toMatch(/^permission_denied: /)
    expect(slack.calls.filter((entry) => entry.method === 'search.messages')).toHaveLength(1)
  })
})
