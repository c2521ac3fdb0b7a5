import { afterEach, describe, expect, it } from 'vitest'
import { issue } from './fixtures.js'
import { closeAll, errorKind, json, type Setup, setup, textOf } from './helpers.js'

afterEach(closeAll)

const REPO = '/repos/octo/big'
const issues = Array.from({ length: 60 }, (_, index) =>
  issue(index + 1, {
    title: `Issue number ${index + 1} with a title long enough to cost tokens`,
    repo: 'octo/big',
  }),
)

async function big(argv: string[] = []): Promise<Setup> {
  const github = await setup({ argv })
  github.fake.on('GET', `${REPO}/issues`, json(issues))
  github.fake.on(
    'GET',
    `${REPO}/contents/big.txt`,
    json({
      type: 'file',
      path: 'big.txt',
      sha: 'b1',
      size: 50_000,
      encoding: 'base64',
      content: Buffer.from('x'.repeat(50_000)).toString('base64'),
    }),
  )
  return github
}

describe('github budgets (max_tokens)', () => {
  it('list_issues cuts the page at the budget and the cursors give exactly the rest of the page', async () => {
    const { call } = await big()
    const whole = (await call('list_issues', { repo: 'octo/big', per_page: 100 })).structuredContent
    expect(whole.issues).toHaveLength(60)
    const shown: unknown[] = []
    let cursor: string | undefined
    let answers = 0
    do {
      const result = await call('list_issues', {
        repo: 'octo/big',
        per_page: 100,
        max_tokens: 600,
        ...(cursor ? { cursor } : {}),
      })
      const data = result.structuredContent
      shown.push(...data.issues)
      cursor = data.budget?.cursor
      if (cursor) {
        expect(data.budget).toMatchObject({ cut: true, shown: data.issues.length })
        expect(textOf(result)).toContain(`[cut at 600 tokens:`)
        expect(textOf(result)).toContain(`continue with cursor "${cursor}"`)
        expect(textOf(result)).not.toContain('call again with page')
      }
      answers++
    } while (cursor && answers < 60)
    expect(answers).toBeGreaterThan(3)
    expect(shown).toEqual(whole.issues)
  })

  it('refuses a cursor of another page, and a tampered one', async () => {
    const { call } = await big()
    const first = await call('list_issues', { repo: 'octo/big', per_page: 100, max_tokens: 600 })
    const cursor = first.structuredContent.budget.cursor as string
    expect(errorKind(await call('list_issues', { repo: 'octo/big', per_page: 100, page: 2, cursor }))).toBe(
      'invalid_argument',
    )
    const tampered = `${cursor.slice(0, -1)}${cursor.endsWith('A') ? 'B' : 'A'}`
    const refused = await call('list_issues', { repo: 'octo/big', per_page: 100, cursor: tampered })
    expect(textOf(refused)).toMatch(/^invalid_argument: The cursor was altered/)
  })

  it('bounds max_bytes of get_file_contents by --max-answer-tokens', async () => {
    const { call } = await big(['--max-answer-tokens', '1000'])
    const result = await call('get_file_contents', { repo: 'octo/big', path: 'big.txt', max_bytes: 40_000 })
    expect(result.structuredContent.content).toHaveLength(4000)
    expect(result.structuredContent.nextOffset).toBe(4000)
  })
})
