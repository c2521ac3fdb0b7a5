import { type Budget, budgetOutput, estimateTokens, openBudget, withMarker, z } from '@keel-mcp/core'
import { clean, cleanRendered, WITHHELD } from '../lib/index.js'
import {
  budgetInput,
  cap,
  defineTool,
  entry,
  github,
  graphql,
  list,
  number,
  read,
  repo,
  result,
  userText,
} from './shared.js'

const toolset = 'discussions'
const first = z.number().int().min(1).max(100).default(30).describe('Per page')
const after = z.string().optional().describe('From nextCursor')
const MORE = 'More available: call again with after = nextCursor.'

interface PageInfo {
  hasNextPage: boolean
  endCursor: string | null
}
interface Author {
  login: string
}

/** `nextCursor` and its notice, from a GraphQL connection's pageInfo. */
export function cursorPage<T extends Record<string, unknown>>(data: T, pageInfo: PageInfo, untrusted = true) {
  const nextCursor = pageInfo.hasNextPage && pageInfo.endCursor ? pageInfo.endCursor : undefined
  return result(
    { ...data, ...(nextCursor ? { nextCursor } : {}) },
    { untrusted, ...(nextCursor ? { notice: MORE } : {}) },
  )
}

/**
 * {@link cursorPage}, with the items under `key` cut at the call's budget. A cut part says so and
 * leaves the connection's `nextCursor` out: its budget cursor (same `after` and other arguments)
 * shows the rest of this page first, and the part that ends the page carries `nextCursor`.
 */
export function cursorPageWithin<T extends Record<string, unknown>>(
  budget: Budget,
  key: keyof T & string,
  data: T,
  pageInfo: PageInfo,
) {
  const ending = cursorPage({ ...data, [key]: [] }, pageInfo)
  // What the part's text holds besides the items: the untrusted-data line, the frame, the notice.
  const reserve = estimateTokens(ending.text)
  const cut = budget.items(data[key] as unknown[], (item) => JSON.stringify(item), { noun: key, reserve })
  if (!cut.cut) return cursorPage({ ...data, [key]: cut.shown }, pageInfo)
  const out = result({ ...data, [key]: cut.shown }, { untrusted: true })
  return { data: { ...data, [key]: cut.shown, budget: cut.cut }, text: withMarker(out.text, cut.marker) }
}

const LIST_DISCUSSIONS = `query($owner:String!,$name:String!,$first:Int!,$after:String,$category:ID){
repository(owner:$owner,name:$name){discussions(first:$first,after:$after,categoryId:$category,orderBy:{field:UPDATED_AT,direction:DESC}){
nodes{number title author{login} category{name} closed isAnswered updatedAt url}
pageInfo{hasNextPage endCursor}}}}`

interface DiscussionLine {
  number: number
  title: string
  author: Author | null
  category: { name: string } | null
  closed: boolean
  isAnswered: boolean | null
  updatedAt: string
  url: string
}

export const listDiscussions = defineTool({
  name: 'list_discussions',
  title: 'List discussions',
  description: 'Discussions of a repo, recently updated first.',
  toolset,
  input: {
    repo,
    category_id: z.string().optional().describe('From list_discussion_categories'),
    first,
    after,
  },
  output: { discussions: list(), nextCursor: z.string().optional() },
  annotations: read,
  async run({ repo: { owner, repo }, category_id, first, after }, { deps, auth, signal }) {
    const client = await github(deps, auth)
    const data = await graphql<{
      repository: { discussions: { nodes: DiscussionLine[]; pageInfo: PageInfo } }
    }>(client.octokit, LIST_DISCUSSIONS, { owner, name: repo, first, after, category: category_id }, signal)
    const { nodes, pageInfo } = data.repository.discussions
    const discussions = await Promise.all(
      nodes.map(async (node) => ({
        number: node.number,
        title: cap(
          await userText(deps, client, { owner, repo }, node.author?.login ?? null, node.title, signal),
          500,
        ),
        author: node.author?.login ?? null,
        category: node.category ? clean(node.category.name) : null,
        closed: node.closed,
        answered: node.isAnswered ?? false,
        updatedAt: node.updatedAt,
        url: node.url,
      })),
    )
    return cursorPage({ discussions }, pageInfo)
  },
})

const GET_DISCUSSION = `query($owner:String!,$name:String!,$number:Int!){repository(owner:$owner,name:$name){
discussion(number:$number){number title body author{login} category{name} closed isAnswered createdAt url comments{totalCount}}}}`

export const getDiscussion = defineTool({
  name: 'get_discussion',
  title: 'Get discussion',
  description: 'One discussion with its body. Comments: get_discussion_comments.',
  toolset,
  input: { repo, discussion_number: number.describe('Discussion number') },
  output: { discussion: entry() },
  annotations: read,
  async run({ repo: { owner, repo }, discussion_number }, { deps, auth, signal }) {
    const client = await github(deps, auth)
    const data = await graphql<{
      repository: {
        discussion: DiscussionLine & { body: string; createdAt: string; comments: { totalCount: number } }
      }
    }>(client.octokit, GET_DISCUSSION, { owner, name: repo, number: discussion_number }, signal)
    const node = data.repository.discussion
    const author = node.author?.login ?? null
    const title = await userText(deps, client, { owner, repo }, author, node.title, signal)
    return result(
      {
        discussion: {
          number: node.number,
          title: cap(title, 500),
          author,
          category: node.category ? clean(node.category.name) : null,
          closed: node.closed,
          answered: node.isAnswered ?? false,
          comments: node.comments.totalCount,
          createdAt: node.createdAt,
          url: node.url,
          body: title === WITHHELD ? WITHHELD : cap(cleanRendered(node.body), 20_000),
        },
      },
      { untrusted: true },
    )
  },
})

const DISCUSSION_COMMENTS = `query($owner:String!,$name:String!,$number:Int!,$first:Int!,$after:String){repository(owner:$owner,name:$name){
discussion(number:$number){comments(first:$first,after:$after){nodes{id author{login} body createdAt isAnswer url replies{totalCount}}
pageInfo{hasNextPage endCursor}}}}}`

export const getDiscussionComments = defineTool({
  name: 'get_discussion_comments',
  title: 'Discussion comments',
  description: 'Top-level comments of a discussion, oldest first.',
  toolset,
  input: { repo, discussion_number: number.describe('Discussion number'), first, after, ...budgetInput },
  output: { comments: list(), nextCursor: z.string().optional(), ...budgetOutput },
  annotations: read,
  async run(args, { deps, auth, signal }) {
    const {
      repo: { owner, repo },
      discussion_number,
      first,
      after,
    } = args
    const budget = openBudget('get_discussion_comments', args)
    const client = await github(deps, auth)
    const data = await graphql<{
      repository: {
        discussion: {
          comments: {
            nodes: Array<{
              id: string
              author: Author | null
              body: string
              createdAt: string
              isAnswer: boolean
              url: string
              replies: { totalCount: number }
            }>
            pageInfo: PageInfo
          }
        }
      }
    }>(
      client.octokit,
      DISCUSSION_COMMENTS,
      { owner, name: repo, number: discussion_number, first, after },
      signal,
    )
    const { nodes, pageInfo } = data.repository.discussion.comments
    const comments = await Promise.all(
      nodes.map(async (node) => ({
        id: node.id,
        author: node.author?.login ?? null,
        answer: node.isAnswer,
        replies: node.replies.totalCount,
        createdAt: node.createdAt,
        body: cap(
          await userText(deps, client, { owner, repo }, node.author?.login ?? null, node.body, signal),
          10_000,
        ),
      })),
    )
    return cursorPageWithin(budget, 'comments', { comments }, pageInfo)
  },
})

const CATEGORIES = `query($owner:String!,$name:String!){repository(owner:$owner,name:$name){
discussionCategories(first:100){nodes{id name description isAnswerable}}}}`

export const listDiscussionCategories = defineTool({
  name: 'list_discussion_categories',
  title: 'Discussion categories',
  description: 'Discussion categories of a repo (ids for list_discussions).',
  toolset,
  input: { repo },
  output: { categories: list() },
  annotations: read,
  async run({ repo: { owner, repo } }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const data = await graphql<{
      repository: {
        discussionCategories: {
          nodes: Array<{ id: string; name: string; description: string | null; isAnswerable: boolean }>
        }
      }
    }>(octokit, CATEGORIES, { owner, name: repo }, signal)
    return result({
      categories: data.repository.discussionCategories.nodes.map((node) => ({
        id: node.id,
        name: clean(node.name),
        description: cap(clean(node.description), 300),
        answerable: node.isAnswerable,
      })),
    })
  },
})
