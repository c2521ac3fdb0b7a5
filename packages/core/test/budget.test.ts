import { afterEach, describe, expect, it } from 'vitest'
import { useAnswerCap } from '../src/budget.js'
import {
  answerCap,
  boundBytes,
  boundTokens,
  budgetOutput,
  defineServer,
  defineTool,
  estimateTokens,
  maxTokensArgument,
  openBudget,
  ToolError,
  withMarker,
  z,
} from '../src/index.js'
import { type Connection, connectInMemory } from '../src/testing/index.js'

afterEach(() => useAnswerCap(undefined))

const words = Array.from({ length: 200 }, (_, index) => `word-${String(index).padStart(3, '0')}`)

describe('estimateTokens', () => {
  it.each([
    ['', 0],
    ['abcd', 1],
    ['abcde', 2],
    ['héllo', 1 + 1],
    ['日本語', 3],
    ['😀', 1],
    ['ab😀cd', 1 + 1],
  ])('estimates %j as %i tokens', (text, tokens) => {
    expect(estimateTokens(text)).toBe(tokens)
  })
})

describe('the operator cap', () => {
  it('bounds max_tokens and is the budget of a call that gives none', () => {
    useAnswerCap(1000)
    expect(answerCap()).toBe(1000)
    expect(boundTokens(50)).toBe(50)
    expect(boundTokens(5000)).toBe(1000)
    expect(boundTokens(undefined)).toBe(1000)
    expect(maxTokensArgument.parse(5000)).toBe(1000)
    expect(maxTokensArgument.parse(undefined)).toBe(1000)
    expect(boundBytes(undefined, 64)).toBe(64)
    expect(boundBytes(100, 64)).toBe(100)
    expect(boundBytes(1_000_000, 1_000_000)).toBe(4000)
  })

  it('refuses a budget below one token', () => {
    expect(() => boundTokens(0)).toThrow(ToolError)
    expect(maxTokensArgument.safeParse(0).success).toBe(false)
    expect(maxTokensArgument.safeParse(1.5).success).toBe(false)
  })
})

describe('Budget.items', () => {
  it('cuts a list at the budget and continues with the cursor exactly where it stopped', () => {
    const seen: string[] = []
    let cursor: string | undefined
    let answers = 0
    do {
      const budget = openBudget('list_words', { prefix: 'w', max_tokens: 40, cursor })
      const cut = budget.items(words, (word) => word, { noun: 'words' })
      seen.push(...cut.shown)
      // The whole answer, marker line included, keeps to the budget.
      expect(estimateTokens(withMarker(cut.text, cut.marker))).toBeLessThanOrEqual(40)
      cursor = cut.cut?.cursor
      if (cut.cut) {
        expect(cut.cut).toMatchObject({
          cut: true,
          shown: cut.shown.length,
          total: 200 - seen.length + cut.shown.length,
        })
        expect(cut.marker).toContain(`continue with cursor "${cursor}"`)
        expect(cut.marker).toContain(
          `[cut at 40 tokens: ${cut.shown.length} of ${200 - seen.length + cut.shown.length} words shown;`,
        )
      } else expect(cut.marker).toBe('')
      answers++
    } while (cursor)
    expect(seen).toEqual(words)
    expect(answers).toBeGreaterThan(5)
  })

  it('shows at least one item, however small the budget', () => {
    const cut = openBudget('list_words', { max_tokens: 1 }).items(['a very long line indeed'], (line) => line)
    expect(cut.shown).toEqual(['a very long line indeed'])
    expect(cut.cut).toBeUndefined()
  })

  it('keeps the tool own cursor inside its cursor, with the offset into that page', () => {
    const first = openBudget('list_pages', { max_tokens: 10 }, { upstream: true })
    expect(first.start).toEqual({ upstream: undefined, offset: 0 })
    const onPage = openBudget('list_pages', { max_tokens: 10, cursor: 'page-7' }, { upstream: true })
    expect(onPage.start).toEqual({ upstream: 'page-7', offset: 0 })
    const cut = onPage.items(words, (word) => word)
    const next = openBudget('list_pages', { max_tokens: 10, cursor: cut.cut?.cursor }, { upstream: true })
    expect(next.start).toEqual({ upstream: 'page-7', offset: cut.shown.length })
  })

  it('refuses a tampered cursor, one of another tool, or of other arguments', () => {
    const { cut } = openBudget('list_words', { prefix: 'w', max_tokens: 10 }).items(words, (word) => word)
    const cursor = cut?.cursor as string
    const [payload, check] = cursor.slice(1).split('.') as [string, string]
    const forged = `~${Buffer.from(JSON.stringify({ o: 150 })).toString('base64url')}.${check}`
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['list_words', { prefix: 'w', cursor: forged }, 'was altered'],
      ['list_words', { prefix: 'w', cursor: `~${payload}.${check.replace(/^./, 'x')}` }, 'was altered'],
      ['list_words', { prefix: 'v', cursor }, 'other arguments'],
      ['list_other', { prefix: 'w', cursor }, 'another tool'],
      ['list_words', { prefix: 'w', cursor: 'page-2' }, 'is not a cursor of this tool'],
    ]
    for (const [tool, args, message] of cases) {
      const error = (() => {
        try {
          openBudget(tool, args)
        } catch (caught) {
          return caught
        }
      })()
      expect(error).toBeInstanceOf(ToolError)
      expect((error as ToolError).kind).toBe('invalid_argument')
      expect((error as ToolError).message).toContain(message)
    }
    // A new budget is no reason to refuse the cursor.
    expect(openBudget('list_words', { prefix: 'w', max_tokens: 500, cursor }).start.offset).toBe(cut?.shown)
  })
})

describe('Budget.text', () => {
  const text = Array.from({ length: 300 }, (_, index) => `line ${index}: ${'x'.repeat(index % 40)}`).join(
    '\n',
  )

  it('cuts a text at a line break and continues to the exact remainder', () => {
    let cursor: string | undefined
    let joined = ''
    do {
      const cut = openBudget('read_text', { path: 'a', max_tokens: 100, cursor }).text(text)
      expect(estimateTokens(withMarker(cut.text, cut.marker))).toBeLessThanOrEqual(100)
      if (cut.cut) expect(cut.text.endsWith('\n')).toBe(true)
      joined += cut.text
      cursor = cut.cut?.cursor
    } while (cursor)
    expect(joined).toBe(text)
  })

  it('never splits a character, and counts non-ASCII text by the character', () => {
    const wide = '日本語のテキスト😀'.repeat(40)
    let cursor: string | undefined
    let joined = ''
    do {
      const cut = openBudget('read_text', { max_tokens: 7, cursor }).text(wide)
      expect(estimateTokens(cut.text)).toBeLessThanOrEqual(7)
      expect(cut.text).not.toMatch(/^[\udc00-\udfff]|[\ud800-\udbff]$/)
      joined += cut.text
      cursor = cut.cut?.cursor
    } while (cursor)
    expect(joined).toBe(wide)
  })

  it('appends the marker on a line of its own', () => {
    expect(withMarker('abc', '[cut]')).toBe('abc\n[cut]')
    expect(withMarker('abc\n', '[cut]')).toBe('abc\n\n[cut]')
    expect(withMarker('abc', '')).toBe('abc')
  })
})

// Through a real client: the argument, the cut in the text and in structuredContent, the listing.
const listWords = defineTool({
  name: 'list_words',
  title: 'List words',
  description: 'Words.',
  input: {
    prefix: z.string().default('word').describe('Prefix'),
    cursor: z.string().optional().describe('Cursor'),
    max_tokens: maxTokensArgument,
  },
  output: { words: z.array(z.string()), ...budgetOutput },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run(args) {
    const cut = openBudget('list_words', args).items(
      words.filter((word) => word.startsWith(args.prefix)),
      (word) => word,
      { noun: 'words' },
    )
    return {
      data: { words: cut.shown, ...(cut.cut ? { budget: cut.cut } : {}) },
      text: withMarker(cut.text, cut.marker),
    }
  },
})

const budgetServer = defineServer({
  name: 'budget-fixture',
  version: '0.0.0',
  description: 'Budget fixture',
  tools: [listWords],
  createDeps: () => ({}),
})

describe('a tool with a budget, through a real client', () => {
  const open: Connection[] = []
  afterEach(async () => {
    await Promise.all(open.splice(0).map((connection) => connection.close()))
  })
  const connect = async (argv: string[] = [], era?: 'modern') => {
    const connection = await connectInMemory(budgetServer, { argv, ...(era ? { era } : {}) })
    open.push(connection)
    return connection
  }

  it('lists max_tokens as an integer, and not budget (admitted, not spelled out)', async () => {
    const { tools } = await (await connect()).client.listTools()
    const tool = tools[0] as unknown as {
      inputSchema: { properties: Record<string, unknown> }
      outputSchema: { properties: Record<string, unknown> }
    }
    expect(tool.inputSchema.properties.max_tokens).toEqual({ type: 'integer' })
    expect(tool.outputSchema.properties).not.toHaveProperty('budget')
    // The clients check structuredContent against this schema: it must admit the unlisted member.
    expect(tool.outputSchema).not.toHaveProperty('additionalProperties')
  })

  it.each([undefined, 'modern' as const])(
    'cuts, says so twice, and continues to the exact rest (%s)',
    async (era) => {
      const { client } = await connect([], era)
      const seen: string[] = []
      let cursor: string | undefined
      do {
        const result = (await client.callTool({
          name: 'list_words',
          arguments: { max_tokens: 300, ...(cursor ? { cursor } : {}) },
        })) as { content: Array<{ text: string }>; structuredContent: Record<string, any> }
        const structured = result.structuredContent
        seen.push(...structured.words)
        cursor = structured.budget?.cursor
        if (cursor) {
          expect(structured.budget).toMatchObject({
            cut: true,
            shown: structured.words.length,
            total: 200 - seen.length + structured.words.length,
          })
          expect(result.content[0]?.text).toContain(`continue with cursor "${cursor}"`)
        }
      } while (cursor)
      expect(seen).toEqual(words)
    },
  )

  it('bounds the budget by --max-answer-tokens', async () => {
    const { client } = await connect(['--max-answer-tokens', '100'])
    const result = (await client.callTool({ name: 'list_words', arguments: { max_tokens: 100_000 } })) as {
      content: Array<{ text: string }>
    }
    expect(result.content[0]?.text).toContain('[cut at 100 tokens:')
  })

  it('answers a tampered cursor with a tool error', async () => {
    const { client } = await connect()
    const result = (await client.callTool({
      name: 'list_words',
      arguments: { cursor: '~eyJvIjo1fQ.AAAAAAAAAAAA' },
    })) as { isError: boolean; content: Array<{ text: string }> }
    expect(result.isError).toBe(true)
    expect(result.content[0]?.text).toMatch(/^invalid_argument: The cursor was altered/)
  })

  it('refuses a zero budget as a bad argument', async () => {
    const { client } = await connect()
    const result = (await client.callTool({ name: 'list_words', arguments: { max_tokens: 0 } })) as {
      isError: boolean
      content: Array<{ text: string }>
    }
    expect(result.isError).toBe(true)
    expect(result.content[0]?.text).toContain('max_tokens: must be at least 1')
  })

  it('refuses a cap below 100 at start', async () => {
    await expect(connect(['--max-answer-tokens', '5'])).rejects.toThrow(/--max-answer-tokens/)
  })
})
