import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { connectInMemory, connectStdio } from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { BoundedCache, PAGES_PER_LOOKUP } from '../src/lib/directory.js'
import { BOT_TOKEN, type FakeSlack, startFakeSlack } from './fake-slack.js'
import { testServer } from './helpers.js'

// Start-up and the first call by name must not depend on the workspace's size: the server never
// loads a whole directory. Asserted as a mechanism (which Web API pages were fetched), not a
// timing; tools/bench's slack suite measures the time against a 10-user workspace.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close()
})

/** Directory pages a run fetched: every list method a name lookup may page through. */
const listCalls = (fake: FakeSlack) =>
  fake.calls.filter((entry) =>
    ['users.list', 'conversations.list', 'users.conversations'].includes(entry.method),
  )

async function historyByName(
  fake: FakeSlack,
  channel: string,
  env: Record<string, string> = {},
  args: string[] = [],
) {
  const connection = await connectStdio({
    command: process.execPath,
    args: [BIN, ...args],
    env: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_API_URL: fake.url, ...env },
  })
  try {
    const listed = await connection.client.listTools()
    expect(listed.tools.length).toBeGreaterThan(0)
    const callsAtStart = fake.calls.length
    const result = await connection.client.callTool({
      name: 'get_channel_history',
      arguments: { channel, limit: 5 },
    })
    return { callsAtStart, result }
  } finally {
    await connection.close()
  }
}

describe('a workspace of 250,000 users and 50,000 channels', () => {
  it('starts and reads the first history by #name with the same Web API calls as a 10-user workspace', async () => {
    const small = await startFakeSlack({ users: 10, channels: 5 })
    const large = await startFakeSlack({ users: 250_000, channels: 50_000, memberOf: ['C00049999'] })
    open.push(small, large)
    const onSmall = await historyByName(small, '#general')
    const onLarge = await historyByName(large, '#channel-49999')
    expect(onSmall.result.isError).toBeFalsy()
    expect(onLarge.result.isError).toBeFalsy()
    expect(JSON.stringify(onLarge.result.content)).toContain('hello in channel-49999')
    // Nothing at start, one page of the bot's own conversations to resolve the name, no page of
    // the workspace's 50,000 channels or 250,000 users.
    expect(onLarge.callsAtStart).toBe(0)
    expect(listCalls(large).map((entry) => entry.method)).toEqual(['users.conversations'])
    expect(listCalls(large).length).toBe(listCalls(small).length)
    // Names next to ids cost one users.info per author shown, whatever the workspace's size.
    expect(large.calls.filter((entry) => entry.method === 'users.info').length).toBeLessThanOrEqual(5)
  })

  it('bounds the pages a lookup of a channel the bot is not in may fetch, and says not found past them', async () => {
    const large = await startFakeSlack({ users: 250_000, channels: 50_000 })
    open.push(large)
    const near = await historyByName(large, '#channel-20')
    expect(near.result.isError).toBeFalsy()
    expect(listCalls(large).map((entry) => entry.method)).toEqual([
      'users.conversations',
      'conversations.list',
    ])
    large.calls.length = 0
    const missing = await historyByName(large, '#no-such-channel')
    // At most PAGES_PER_LOOKUP pages of 1,000 a lookup, then a clear not_found.
    expect(listCalls(large).length).toBeLessThanOrEqual(1 + PAGES_PER_LOOKUP)
    expect(missing.result.isError).toBe(true)
    expect(JSON.stringify(missing.result.content)).toContain('not_found: No channel #no-such-channel')
  })

  it('keeps learnt names under the cache directory with --name-cache: the next start resolves without a page', async () => {
    const cache = await mkdtemp(path.join(tmpdir(), 'keel-slack-cache-'))
    open.push({ close: () => rm(cache, { recursive: true, force: true }) })
    const large = await startFakeSlack({ users: 250_000, channels: 50_000, memberOf: ['C00049999'] })
    open.push(large)
    const env = { XDG_CACHE_HOME: cache }
    await historyByName(large, '#channel-49999', env, ['--name-cache'])
    expect(listCalls(large)).toHaveLength(1)
    const [file] = await readdir(path.join(cache, 'keel-mcp-slack'))
    expect(file).toMatch(/^names-[0-9a-f]{20}\.json$/)
    expect((await stat(path.join(cache, 'keel-mcp-slack', file as string))).mode & 0o777).toBe(0o600)
    large.calls.length = 0
    const again = await historyByName(large, '#channel-49999', env, ['--name-cache'])
    expect(again.result.isError).toBeFalsy()
    expect(listCalls(large)).toEqual([])
  })
})

describe('a lookup past the pages of one call', () => {
  it('says not found yet and to call again, and the next call resumes where the last one stopped', async () => {
    const slack = await startFakeSlack({ users: 60_000 })
    open.push(slack)
    const connection = await connectInMemory(testServer, {
      env: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_API_URL: slack.url },
    })
    open.push(connection)
    const first = await connection.client.callTool({ name: 'find_user', arguments: { name: 'user55000' } })
    expect(first.isError).toBe(true)
    expect(JSON.stringify(first.content)).toContain('call again to look further')
    const pages = slack.calls.filter((entry) => entry.method === 'users.list').length
    expect(pages).toBe(PAGES_PER_LOOKUP)
    const second = await connection.client.callTool({ name: 'find_user', arguments: { name: 'user55000' } })
    expect(second.isError).toBeFalsy()
    expect(slack.calls.filter((entry) => entry.method === 'users.list').length).toBe(pages + 5)
  })
})

describe('BoundedCache', () => {
  it('forgets entries past their age and the least recently used past its size', () => {
    let now = 0
    const cache = new BoundedCache<string>(2, 1000, () => now)
    cache.set('a', 'A')
    cache.set('b', 'B')
    expect(cache.get('a')).toBe('A')
    cache.set('c', 'C')
    // b was used least recently: it went.
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual(['A', undefined, 'C'])
    now = 1001
    expect(cache.get('a')).toBeUndefined()
    expect(cache.size).toBe(1)
  })
})
