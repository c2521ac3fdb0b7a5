import { describe, expect, it } from 'vitest'
import { type CallResult, call, connect, ok, useConnections } from './helpers.js'
import { makeTree, type Tree, useTempDirectories } from './temp-tree.js'

const tempDirectory = useTempDirectories()
useConnections()

// 300 files with long names: a listing of ≈ 3,000 tokens, cut at 200 a call.
const files: Tree = Object.fromEntries(
  Array.from({ length: 300 }, (_, index) => [
    `file-${String(index).padStart(3, '0')}-${'n'.repeat(30)}.txt`,
    `needle ${index}\n${'hay\n'.repeat(index % 3)}`,
  ]),
)

type Connected = Awaited<ReturnType<typeof connect>>

/** Calls `tool` with a budget, following the budget cursors to the end; every answer within the budget. */
async function follow(
  connection: Connected,
  tool: string,
  args: Record<string, unknown>,
  maxTokens: number,
): Promise<CallResult[]> {
  const answers: CallResult[] = []
  let cursor: string | undefined
  do {
    const result = await ok(connection, tool, {
      ...args,
      max_tokens: maxTokens,
      ...(cursor ? { cursor } : {}),
    })
    answers.push(result)
    cursor = result.structured.budget?.cursor
    if (cursor) {
      expect(result.structured.budget).toMatchObject({ cut: true })
      expect(result.text).toContain(`[cut at ${maxTokens} tokens:`)
      expect(result.text).toContain(`continue with cursor "${cursor}"`)
    }
  } while (cursor && answers.length < 200)
  return answers
}

describe('fs budgets (max_tokens)', () => {
  it('list_directory cuts at the budget and the cursors give exactly the rest of the page', async () => {
    const root = await tempDirectory()
    await makeTree(root, files)
    const connection = await connect([root])
    const whole = await ok(connection, 'list_directory', { path: '.', limit: 1000 })
    const answers = await follow(connection, 'list_directory', { path: '.', limit: 1000 }, 200)
    expect(answers.length).toBeGreaterThan(5)
    expect(answers.flatMap((answer) => answer.structured.entries)).toEqual(whole.structured.entries)
    expect(answers.at(0)?.structured.budget.shown).toBe(answers.at(0)?.structured.entries.length)
  })

  it('list_directory continues past a cut into the next page of its own cursor', async () => {
    const root = await tempDirectory()
    await makeTree(root, files)
    const connection = await connect([root])
    const page = await follow(connection, 'list_directory', { path: '.', limit: 100 }, 300)
    const last = page.at(-1) as CallResult
    expect(last.structured.nextCursor).toBeDefined()
    const next = await ok(connection, 'list_directory', {
      path: '.',
      limit: 100,
      cursor: last.structured.nextCursor,
    })
    const shown = [...page.flatMap((answer) => answer.structured.entries), ...next.structured.entries]
    expect(shown.map((entry: { name: string }) => entry.name)).toEqual(
      Object.keys(files).sort().slice(0, 200),
    )
  })

  it('search_content cuts between matches and the cursors give exactly the rest', async () => {
    const root = await tempDirectory()
    await makeTree(root, files)
    const connection = await connect([root])
    const args = { pattern: 'needle', context: 1, max_matches: 500 }
    const whole = await ok(connection, 'search_content', args)
    const answers = await follow(connection, 'search_content', args, 250)
    expect(answers.length).toBeGreaterThan(3)
    expect(answers.flatMap((answer) => answer.structured.matches)).toEqual(whole.structured.matches)
  })

  it('search_files and directory_tree cut and continue to the same whole', async () => {
    const root = await tempDirectory()
    await makeTree(root, { a: files, b: files })
    const connection = await connect([root])
    const paths = (await ok(connection, 'search_files', { pattern: '*.txt', limit: 500 })).structured.paths
    const cutPaths = await follow(connection, 'search_files', { pattern: '*.txt', limit: 500 }, 400)
    expect(cutPaths.flatMap((answer) => answer.structured.paths)).toEqual(paths)
    const tree = (await ok(connection, 'directory_tree', { max_entries: 1000 })).text
    const parts = await follow(connection, 'directory_tree', { max_entries: 1000 }, 500)
    expect(parts.length).toBeGreaterThan(3)
    const marker = /\n\[cut at 500 tokens:[^\n]*\]$/
    expect(parts.map((part) => part.text.replace(marker, '')).join('')).toBe(tree)
  })

  it('read_text_file cuts a text at a line break and the cursors give exactly the rest', async () => {
    const root = await tempDirectory()
    const content = Array.from(
      { length: 2000 },
      (_, index) => `line ${index}: ${'é'.repeat(index % 13)}`,
    ).join('\n')
    await makeTree(root, { 'big.txt': content })
    const connection = await connect([root])
    const parts = await follow(connection, 'read_text_file', { path: 'big.txt' }, 1000)
    expect(parts.length).toBeGreaterThan(10)
    const marker = /\n\[cut at 1000 tokens:[^\n]*\]$/
    expect(parts.map((part) => part.text.replace(marker, '')).join('')).toBe(content)
  })

  it('refuses a cursor of other arguments, and bounds max_tokens by --max-answer-tokens', async () => {
    const root = await tempDirectory()
    await makeTree(root, files)
    const connection = await connect([root])
    const first = await ok(connection, 'list_directory', { path: '.', max_tokens: 100 })
    const refused = await call(connection, 'list_directory', {
      path: '.',
      sort: 'size',
      cursor: first.structured.budget.cursor,
    })
    expect(refused.isError).toBe(true)
    expect(refused.text).toContain(
      'invalid_argument: The cursor was altered, or belongs to another tool or other arguments',
    )
    const capped = await connect([root, '--max-answer-tokens', '300'])
    const bounded = await ok(capped, 'list_directory', { path: '.', max_tokens: 100_000 })
    expect(bounded.text).toContain('[cut at 300 tokens:')
  })
})
