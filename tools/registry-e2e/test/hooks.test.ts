import { rm } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { defaultCall, preferredCall } from '../src/hooks.mjs'

const tool = (name: string, readOnlyHint: boolean, required: string[] = [], openWorldHint = false) => ({
  name,
  annotations: { readOnlyHint, openWorldHint },
  inputSchema: { type: 'object', properties: {}, required },
})

describe('defaultCall', () => {
  it('picks the first read-only, closed-world tool that needs no arguments', () => {
    const tools = [
      tool('add_note', false),
      tool('fetch_page', true, [], true),
      tool('get_note', true, ['id']),
      tool('search_notes', true),
    ]
    expect(defaultCall(tools)).toEqual({ name: 'search_notes', arguments: {} })
  })

  it('asks for a hook when no tool is harmless to call blind', () => {
    expect(() => defaultCall([tool('post_message', false)])).toThrow(
      'no read-only, closed-world tool without required arguments among post_message: add a hook',
    )
  })
})

describe('preferredCall', () => {
  it('takes the first preferred tool the server has and fills its required arguments', () => {
    const pick = preferredCall(['list_schemas', 'query'], { sql: 'SELECT 1' })
    expect(pick([tool('query', true, ['sql'])])).toEqual({ name: 'query', arguments: { sql: 'SELECT 1' } })
  })

  it('falls back to the default when none of the preferred tools exists', () => {
    expect(preferredCall(['list_schemas'])([tool('list_tables', true)])).toEqual({
      name: 'list_tables',
      arguments: {},
    })
  })

  it('refuses a required argument it has no value for', () => {
    expect(() => preferredCall(['query'])([tool('query', true, ['sql'])])).toThrow('query needs "sql"')
  })
})

describe('the github hook', () => {
  it('serves the fake GitHub the server is pointed at, and stops it', async () => {
    const { hooks } = await import('../src/hooks.mjs')
    const repo = new URL('../../..', import.meta.url).pathname
    const prepared = await hooks.github({ repo })
    try {
      const response = await fetch(`${prepared.env.GITHUB_API_URL}/user`)
      const user = await response.json()
      expect(prepared.pickCall([{ name: 'get_me', inputSchema: { required: [] } }])).toEqual({
        name: 'get_me',
        arguments: {},
      })
      expect(prepared.check({ content: [{ type: 'text', text: JSON.stringify(user) }] })).toBeUndefined()
    } finally {
      await prepared.cleanup()
      // The hook bundles the fake next to its source; in a real run that is the workspace copy.
      await rm(new URL('../../../servers/github/test/.registry-e2e-harness.mjs', import.meta.url), {
        force: true,
      })
    }
  })
})

describe('the slack hook', () => {
  it('serves the fake Slack the server is pointed at, and stops it', async () => {
    const { hooks } = await import('../src/hooks.mjs')
    const repo = new URL('../../..', import.meta.url).pathname
    const prepared = await hooks.slack({ repo })
    try {
      const response = await fetch(`${prepared.env.SLACK_API_URL}conversations.list`, {
        method: 'POST',
        headers: { authorization: `Bearer ${prepared.env.SLACK_BOT_TOKEN}` },
      })
      const listed = await response.json()
      expect(prepared.pickCall([{ name: 'list_channels', inputSchema: { required: [] } }])).toEqual({
        name: 'list_channels',
        arguments: {},
      })
      expect(prepared.check({ content: [{ type: 'text', text: JSON.stringify(listed) }] })).toBeUndefined()
    } finally {
      await prepared.cleanup()
      await rm(new URL('../../../servers/slack/test/.registry-e2e-harness.mjs', import.meta.url), {
        force: true,
      })
    }
  })
})

describe('the browser hook', () => {
  it('serves the fixture pages the server is allowed to reach, and stops them', async () => {
    const { hooks } = await import('../src/hooks.mjs')
    const repo = new URL('../../..', import.meta.url).pathname
    const prepared = await hooks.browser({ repo })
    try {
      const origin = prepared.args[1]
      expect(prepared.args).toEqual(['--allowed-origins', origin])
      const home = await (await fetch(`${origin}/`)).text()
      expect(home).toContain('Fixture home')
      expect(prepared.pickCall([{ name: 'navigate', inputSchema: { required: ['url'] } }])).toEqual({
        name: 'navigate',
        arguments: { url: `${origin}/` },
      })
      expect(prepared.check({ content: [{ type: 'text', text: home }] })).toBeUndefined()
    } finally {
      await prepared.cleanup()
      await rm(new URL('../../../servers/browser/test/.registry-e2e-harness.mjs', import.meta.url), {
        force: true,
      })
    }
  })
})
