import { afterEach, describe, expect, it } from 'vitest'
import { comment, commit, issue, pull, user } from './fixtures.js'
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

/** Forty items of each kind, each carrying a few hundred characters of text written by users. */
const text = (index: number) => `Item ${index}: ${'a sentence people wrote about it. '.repeat(12)}`
const forty = <T>(make: (index: number) => T) => Array.from({ length: 40 }, (_, index) => make(index + 1))
const PAGES: Array<[tool: string, args: Record<string, unknown>, key: string, path: string, body: unknown]> =
  [
    [
      'get_pull_request_comments',
      { repo: 'octo/big', pull_number: 5 },
      'comments',
      `${REPO}/pulls/5/comments`,
      forty((index) => ({ ...comment(index, 'mona', text(index)), path: 'a.ts', line: index })),
    ],
    [
      'get_pull_request_reviews',
      { repo: 'octo/big', pull_number: 5 },
      'reviews',
      `${REPO}/pulls/5/reviews`,
      forty((index) => ({
        id: index,
        user: user('mona'),
        state: 'COMMENTED',
        body: text(index),
        submitted_at: '2026-01-04T00:00:00Z',
      })),
    ],
    [
      'list_pull_request_commits',
      { repo: 'octo/big', pull_number: 5 },
      'commits',
      `${REPO}/pulls/5/commits`,
      forty((index) => commit(String(index).padStart(40, '0'), text(index))),
    ],
    [
      'search_pull_requests',
      { query: 'repo:octo/big crash' },
      'pullRequests',
      '/search/issues',
      {
        total_count: 40,
        incomplete_results: false,
        items: forty((index) => ({
          ...pull(index, { title: text(index).slice(0, 120) }),
          repository_url: 'https://api.github.com/repos/octo/big',
          pull_request: {},
        })),
      },
    ],
    [
      'list_releases',
      { repo: 'octo/big' },
      'releases',
      `${REPO}/releases`,
      forty((index) => ({
        tag_name: `v${index}.0.0`,
        name: `Release ${index}`,
        draft: false,
        prerelease: false,
        published_at: '2026-01-01T00:00:00Z',
        body: text(index),
        html_url: `https://github.com/octo/big/releases/v${index}.0.0`,
      })),
    ],
    [
      'search_commits',
      { query: 'crash repo:octo/big' },
      'commits',
      '/search/commits',
      {
        total_count: 40,
        incomplete_results: false,
        items: forty((index) => ({
          ...commit(String(index).padStart(40, '0'), text(index)),
          repository: { full_name: 'octo/big' },
        })),
      },
    ],
  ]

describe('github budgets on lists of text people wrote', () => {
  it.each(PAGES)(
    '%s cuts its page at max_tokens, and its cursors give exactly the rest',
    async (tool, args, key, path, body) => {
      const github = await setup()
      github.fake.on('GET', path, json(body))
      const whole = (await github.call(tool, { ...args, per_page: 100 })).structuredContent
      expect(whole[key]).toHaveLength(40)
      expect(whole.budget).toBeUndefined()
      const shown: unknown[] = []
      let cursor: string | undefined
      let answers = 0
      do {
        const result = await github.call(tool, {
          ...args,
          per_page: 100,
          max_tokens: 800,
          ...(cursor ? { cursor } : {}),
        })
        expect(result.isError ?? false, textOf(result)).toBe(false)
        const data = result.structuredContent
        shown.push(...data[key])
        cursor = data.budget?.cursor
        if (cursor) expect(textOf(result)).toContain(`continue with cursor "${cursor}"`)
        answers++
      } while (cursor && answers < 40)
      expect(answers).toBeGreaterThan(2)
      expect(shown).toEqual(whole[key])
    },
  )

  it.each(PAGES)(
    '%s keeps to --max-answer-tokens when the call gives no budget',
    async (tool, args, key, path, body) => {
      const github = await setup({ argv: ['--max-answer-tokens', '1000'] })
      github.fake.on('GET', path, json(body))
      const result = await github.call(tool, { ...args, per_page: 100 })
      const data = result.structuredContent
      expect(data.budget).toMatchObject({ cut: true, total: 40 })
      expect(data[key].length).toBeLessThan(40)
      expect(textOf(result)).toContain('[cut at 1000 tokens:')
    },
  )
})

/** Thirty threads or discussion comments on a GraphQL page that has a next one. */
function graphqlPages(request: { body: unknown }) {
  const { query } = request.body as { query: string }
  const pageInfo = { hasNextPage: true, endCursor: 'Y3Vyc29yOjMw' }
  const nodes = Array.from({ length: 30 }, (_, index) => index + 1)
  const data = query.includes('reviewThreads')
    ? {
        repository: {
          pullRequest: {
            reviewThreads: {
              nodes: nodes.map((index) => ({
                id: `PRRT_${index}`,
                isResolved: false,
                isOutdated: false,
                path: 'a.ts',
                line: index,
                comments: {
                  totalCount: 1,
                  nodes: [
                    {
                      databaseId: index,
                      author: { login: 'mona' },
                      body: text(index),
                      createdAt: '2026-01-04T00:00:00Z',
                    },
                  ],
                },
              })),
              pageInfo,
            },
          },
        },
      }
    : {
        repository: {
          discussion: {
            comments: {
              nodes: nodes.map((index) => ({
                id: `DC_${index}`,
                author: { login: 'mona' },
                body: text(index),
                createdAt: '2026-01-03T00:00:00Z',
                isAnswer: false,
                url: `https://github.com/octo/big/discussions/7#discussioncomment-${index}`,
                replies: { totalCount: 0 },
              })),
              pageInfo,
            },
          },
        },
      }
  return { status: 200, body: { data } }
}

describe('github budgets on GraphQL pages', () => {
  it.each([
    ['get_pull_request_review_threads', { repo: 'octo/big', pull_number: 5 }, 'threads'],
    ['get_discussion_comments', { repo: 'octo/big', discussion_number: 7 }, 'comments'],
  ] as const)('%s cuts its page, keeping nextCursor for the part that ends it', async (tool, args, key) => {
    const github = await setup()
    github.fake.on('POST', '/graphql', graphqlPages)
    const whole = (await github.call(tool, { ...args, first: 100 })).structuredContent
    expect(whole[key]).toHaveLength(30)
    expect(whole.nextCursor).toBe('Y3Vyc29yOjMw')
    const shown: unknown[] = []
    let cursor: string | undefined
    let answers = 0
    let last: Record<string, any> = {}
    do {
      const result = await github.call(tool, {
        ...args,
        first: 100,
        max_tokens: 800,
        ...(cursor ? { cursor } : {}),
      })
      last = result.structuredContent
      shown.push(...last[key])
      cursor = last.budget?.cursor
      // A part that does not end the page does not offer the next one: its rest comes first.
      if (cursor) {
        expect(last.nextCursor).toBeUndefined()
        expect(textOf(result)).not.toContain('after = nextCursor')
      }
      answers++
    } while (cursor && answers < 30)
    expect(answers).toBeGreaterThan(2)
    expect(shown).toEqual(whole[key])
    expect(last.nextCursor).toBe('Y3Vyc29yOjMw')
  })
})
