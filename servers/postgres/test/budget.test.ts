import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedPostgres } from './harness/index.js'
import { closeAll, connect, errorKind, textOf } from './helpers.js'

const shared = sharedPostgres()
afterAll(closeAll)

let connection: Awaited<ReturnType<typeof connect>>
beforeAll(async () => {
  connection = await connect(shared.url)
})

type Result = { structuredContent: Record<string, any>; isError?: boolean; content: unknown[] }

async function call(name: string, args: Record<string, unknown>): Promise<Result> {
  return (await connection.client.callTool({ name, arguments: args })) as unknown as Result
}

/** Calls `tool` with a budget and follows the budget cursors to the end. */
async function follow(name: string, args: Record<string, unknown>, maxTokens: number): Promise<Result[]> {
  const answers: Result[] = []
  let cursor: string | undefined
  do {
    const result = await call(name, { ...args, max_tokens: maxTokens, ...(cursor ? { cursor } : {}) })
    expect(result.isError).not.toBe(true)
    answers.push(result)
    cursor = result.structuredContent.budget?.cursor
    if (cursor) expect(textOf(result)).toContain(`[cut at ${maxTokens} tokens:`)
  } while (cursor && answers.length < 100)
  return answers
}

const ordered = 'SELECT id, md5(id::text) AS hash FROM generate_series(1, 500) AS id ORDER BY id'

describe('postgres budgets (max_tokens)', () => {
  it('query cuts rows at the budget, in the text and the structured rows, and the cursors give exactly the rest', async () => {
    const whole = await call('query', { sql: ordered, max_rows: 1000 })
    expect(whole.structuredContent.rowCount).toBe(500)
    const answers = await follow('query', { sql: ordered, max_rows: 1000 }, 800)
    expect(answers.length).toBeGreaterThan(5)
    for (const answer of answers.slice(0, -1)) {
      const { budget, rows } = answer.structuredContent
      expect(budget).toMatchObject({ cut: true, shown: rows.length })
      // The text holds exactly the rows of the structured result.
      expect(textOf(answer)).toContain(`| ${rows.at(-1)[1]}`)
      expect(textOf(answer)).toContain(`continue with cursor "${budget.cursor}"`)
    }
    expect(answers.flatMap((answer) => answer.structuredContent.rows)).toEqual(whole.structuredContent.rows)
  })

  it('query refuses a cursor of other parameters, and one whose rows before it came back different', async () => {
    const sql = 'SELECT id FROM generate_series(1, 300) AS id ORDER BY id * $1'
    const first = await call('query', { sql, params: [1], max_tokens: 100 })
    const cursor = first.structuredContent.budget.cursor
    // A cursor belongs to its statement and parameters.
    const tampered = await call('query', { sql, params: [-1], max_tokens: 100, cursor })
    expect(errorKind(tampered)).toBe('invalid_argument')
    const volatile = 'SELECT id FROM generate_series(1, 300) AS id ORDER BY random()'
    const cut = await call('query', { sql: volatile, max_tokens: 100 })
    const again = await call('query', {
      sql: volatile,
      max_tokens: 100,
      cursor: cut.structuredContent.budget.cursor,
    })
    expect(errorKind(again)).toBe('conflict')
    expect(textOf(again)).toContain('ORDER BY')
  })

  it('list_tables cuts its page at the budget and continues past it into its own next page', async () => {
    const whole = await call('list_tables', { limit: 1000 })
    const answers = await follow('list_tables', { limit: 1000 }, 20)
    expect(answers.length).toBeGreaterThan(2)
    expect(answers.flatMap((answer) => answer.structuredContent.tables)).toEqual(
      whole.structuredContent.tables,
    )
  })

  it('keeps the 64 KiB text cap as it was when the budget is larger', async () => {
    const result = await call('query', { sql: ordered, max_rows: 1000 })
    expect(result.structuredContent.budget).toBeUndefined()
    expect(result.structuredContent.truncated).toBe(false)
  })
})

/** A plan of 1 + 120 nodes: one scan of shop.customers under its own alias per branch. */
const branches = Array.from(
  { length: 120 },
  (_, index) => `SELECT id FROM shop.customers c${index} WHERE id = ${index}`,
).join(' UNION ALL ')

describe('explain_query within the budget', () => {
  it('answers whole when it fits, and names at most 20 scans in its summary', async () => {
    const whole = await call('explain_query', { sql: branches })
    expect(whole.isError).not.toBe(true)
    const { summary, plan, budget } = whole.structuredContent
    expect(budget).toBeUndefined()
    expect((plan.Plan.Plans as unknown[]).length).toBe(120)
    expect(summary).toContain('; and 100 more (see the tree).')
    expect(summary.match(/ on (shop\.)?customers c\d+ /g)).toHaveLength(20)
  })

  it('leaves the JSON plan out, then cuts the tree at a line; the cursors give exactly the rest', async () => {
    const whole = textOf(await call('explain_query', { sql: branches }))
    const tree = whole
      .slice(whole.indexOf('\n\n') + 2)
      .trimEnd()
      .split('\n')
    expect(tree.length).toBeGreaterThan(120)
    const answers = await follow('explain_query', { sql: branches }, 600)
    expect(answers.length).toBeGreaterThan(3)
    const shown: string[] = []
    for (const [index, answer] of answers.entries()) {
      const data = answer.structuredContent
      expect(data.plan).toBeUndefined()
      expect(data.summary).toContain('Append')
      const text = textOf(answer)
      expect(text).toContain('The JSON plan is left out')
      const body = text.slice(text.indexOf('\n\n') + 2).split('\n')
      if (index < answers.length - 1) {
        expect(data.budget).toMatchObject({ cut: true, shown: body.length - 1 })
        body.pop()
      } else expect(data.budget).toBeUndefined()
      shown.push(...body)
    }
    expect(shown).toEqual(tree)
  })

  it('keeps to --max-answer-tokens when the call gives no budget', async () => {
    const capped = await connect(shared.url, { argv: ['--max-answer-tokens', '1000'] })
    const result = (await capped.client.callTool({
      name: 'explain_query',
      arguments: { sql: branches },
    })) as unknown as Result
    expect(result.structuredContent.plan).toBeUndefined()
    expect(result.structuredContent.budget).toMatchObject({ cut: true })
    expect(textOf(result)).toContain('[cut at 1000 tokens:')
  })
})
