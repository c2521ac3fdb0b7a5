import { estimateTokens } from '@keel-mcp/core'
import { describe, expect, it } from 'vitest'
import { USER_TOKEN } from './fake-slack.js'
import { connect, fake, useCleanup } from './helpers.js'

useCleanup()

type Connected = Awaited<ReturnType<typeof connect>>

/** A call's text and its structured result. */
async function call(connection: Connected, name: string, args: Record<string, unknown> = {}) {
  const result = await connection.client.callTool({ name, arguments: args })
  const text = ((result.content ?? []) as Array<{ text?: string }>)
    .map((block) => block.text ?? '')
    .join('\n')
  return { isError: result.isError === true, text, data: result.structuredContent as Record<string, any> }
}

/** Calls `tool` with a budget and follows the budget cursors to the end of the page. */
async function follow(connection: Connected, tool: string, args: Record<string, unknown>, maxTokens: number) {
  const answers: Array<Awaited<ReturnType<typeof call>>> = []
  let cursor = args.cursor as string | undefined
  do {
    const result = await call(connection, tool, {
      ...args,
      max_tokens: maxTokens,
      ...(cursor ? { cursor } : {}),
    })
    answers.push(result)
    cursor = result.data.budget?.cursor
    if (cursor) {
      expect(result.data.budget).toMatchObject({ cut: true })
      expect(result.text).toContain(`[cut at ${maxTokens} tokens:`)
      expect(result.text).toContain(`continue with cursor "${cursor}"`)
      expect(result.text).not.toContain('More available')
    }
  } while (cursor && answers.length < 50)
  return answers
}

describe('slack budgets (max_tokens)', () => {
  it('get_channel_history cuts a page at the budget, continues to exactly its rest, then to the next page', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    const whole = await call(connection, 'get_channel_history', { channel: '#general', limit: 20 })
    const answers = await follow(connection, 'get_channel_history', { channel: '#general', limit: 20 }, 250)
    expect(answers.length).toBeGreaterThan(2)
    expect(answers.flatMap((answer) => answer.data.messages)).toEqual(whole.data.messages)
    // The page's own cursor comes with its last part.
    expect(answers.at(-1)?.data.next_cursor).toBe(whole.data.next_cursor)
    expect(answers.slice(0, -1).every((answer) => answer.data.next_cursor === null)).toBe(true)
  })

  it('answers a page whole at every budget from the smallest that holds it, and cuts it below that', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    const args = { channel: 'C0GENERAL', limit: 5 }
    const whole = await call(connection, 'get_channel_history', args)
    const size = estimateTokens(whole.text)
    let smallestWhole: number | undefined
    for (let budget = size - 20; budget <= size + 30; budget++) {
      const answer = await call(connection, 'get_channel_history', { ...args, max_tokens: budget })
      if (answer.data.budget === undefined) {
        expect(answer.text).toBe(whole.text)
        smallestWhole ??= budget
      } else {
        expect(smallestWhole).toBeUndefined()
        expect(answer.data.messages.length).toBeLessThan(5)
      }
    }
    // Whole from exactly the budget the answer's parts count up to: the untrusted marker, the JSON
    // without its messages, and each message's JSON with its line break (the next-page line is free).
    const [marker = ''] = whole.text.split('\n')
    const counted =
      estimateTokens(marker) +
      estimateTokens(JSON.stringify({ ...whole.data, messages: [] })) +
      whole.data.messages.reduce(
        (sum: number, message: unknown) => sum + estimateTokens(JSON.stringify(message)) + 1,
        0,
      )
    expect(counted).toBeGreaterThan(size - 20)
    expect(smallestWhole).toBe(counted)
  })

  it('list_channels and search_messages cut and continue to the same whole', async () => {
    const slack = await fake({ channels: 40 })
    const connection = await connect(slack, [], { SLACK_USER_TOKEN: USER_TOKEN })
    const channels = (await call(connection, 'list_channels', { limit: 50 })).data.channels
    const cutChannels = await follow(connection, 'list_channels', { limit: 50 }, 200)
    expect(cutChannels.length).toBeGreaterThan(2)
    expect(cutChannels.flatMap((answer) => answer.data.channels)).toEqual(channels)
    const found = (await call(connection, 'search_messages', { query: 'general', count: 20 })).data.messages
    const cutFound = await follow(connection, 'search_messages', { query: 'general', count: 20 }, 250)
    expect(cutFound.length).toBeGreaterThan(1)
    expect(cutFound.flatMap((answer) => answer.data.messages)).toEqual(found)
  })

  it('refuses a cursor of another channel', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    const first = await call(connection, 'get_channel_history', { channel: '#general', max_tokens: 250 })
    const refused = await call(connection, 'get_channel_history', {
      channel: '#random',
      cursor: first.data.budget.cursor,
    })
    expect(refused.isError).toBe(true)
    expect(refused.text).toMatch(/^invalid_argument: The cursor was altered/)
  })
})
