import { ToolError, z } from '@keel-mcp/core'
import { clean, cleanRendered } from '../lib/index.js'
import { cursorPage } from './discussions.js'
import {
  cap,
  defineTool,
  entry,
  github,
  graphql,
  list,
  number,
  read,
  remove,
  repo,
  result,
  signalOf,
  userText,
  write,
  written,
} from './shared.js'

// Projects (v2) exist only in GraphQL. A project belongs to an organisation or a user.

const toolset = 'projects'
const owner = z.string().min(1).describe('Org or user login')
const ownerType = z.enum(['org', 'user']).default('org').describe('Owner kind')
const projectNumber = number.describe('Project number')
const first = z.number().int().min(1).max(100).default(30).describe('Per page')
const after = z.string().optional().describe('From nextCursor')
const PAGE_INFO = 'pageInfo{hasNextPage endCursor}'

const root = (type: 'org' | 'user') => (type === 'org' ? 'organization' : 'user')

/** A GraphQL object, read field by field as the query text shapes it. */
// biome-ignore lint/suspicious/noExplicitAny: the query text, not a type, defines these answers
type Node = Record<string, any>

interface PageInfo {
  hasNextPage: boolean
  endCursor: string | null
}

export const listProjects = defineTool({
  name: 'list_projects',
  title: 'List projects',
  description: 'Projects (v2) of an org or user.',
  toolset,
  input: { owner, owner_type: ownerType, query: z.string().optional().describe('Filter'), first, after },
  output: { projects: list(), nextCursor: z.string().optional() },
  annotations: read,
  async run({ owner, owner_type, query, first, after }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const data = await graphql<Record<string, { projectsV2: { nodes: Array<Node>; pageInfo: PageInfo } }>>(
      octokit,
      `query($login:String!,$first:Int!,$after:String,$filter:String){${root(owner_type)}(login:$login){
projectsV2(first:$first,after:$after,query:$filter){nodes{id number title shortDescription closed url} ${PAGE_INFO}}}}`,
      { login: owner, first, after, filter: query },
      signal,
    )
    const connection = data[root(owner_type)]?.projectsV2
    if (!connection) throw new ToolError('not_found', `No ${owner_type} ${owner}`)
    return cursorPage(
      {
        projects: connection.nodes.map((node) => ({
          id: node.id,
          number: node.number,
          title: cap(clean(node.title), 300),
          description: cap(clean(node.shortDescription), 300),
          closed: node.closed,
          url: node.url,
        })),
      },
      connection.pageInfo,
    )
  },
})

const FIELDS = `fields(first:50){nodes{... on ProjectV2FieldCommon{id name dataType}
... on ProjectV2SingleSelectField{options{id name}}
... on ProjectV2IterationField{configuration{iterations{id title startDate}}}}}`

export const getProject = defineTool({
  name: 'get_project',
  title: 'Get project',
  description: 'One project with its fields and options (ids for update_project_item).',
  toolset,
  input: { owner, owner_type: ownerType, project_number: projectNumber },
  output: { project: entry() },
  annotations: read,
  async run({ owner, owner_type, project_number }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const data = await graphql<Record<string, { projectV2: Node | null }>>(
      octokit,
      `query($login:String!,$number:Int!){${root(owner_type)}(login:$login){projectV2(number:$number){
id number title shortDescription readme closed url items{totalCount} ${FIELDS}}}}`,
      { login: owner, number: project_number },
      signal,
    )
    const project = data[root(owner_type)]?.projectV2
    if (!project) throw new ToolError('not_found', `No project ${project_number} of ${owner}`)
    return result(
      {
        project: {
          id: project.id,
          number: project.number,
          title: cap(clean(project.title), 300),
          description: cap(clean(project.shortDescription), 500),
          readme: cap(cleanRendered(project.readme), 5000),
          closed: project.closed,
          items: project.items?.totalCount ?? 0,
          fields: (project.fields?.nodes ?? []).flatMap((field: Node) =>
            field.id
              ? [
                  {
                    id: field.id,
                    name: clean(field.name),
                    type: field.dataType,
                    ...(field.options
                      ? {
                          options: field.options.map((option: Node) => ({
                            id: option.id,
                            name: clean(option.name),
                          })),
                        }
                      : {}),
                    ...(field.configuration
                      ? {
                          iterations: field.configuration.iterations.map((iteration: Node) => ({
                            id: iteration.id,
                            title: clean(iteration.title),
                            start: iteration.startDate,
                          })),
                        }
                      : {}),
                  },
                ]
              : [],
          ),
          url: project.url,
        },
      },
      { untrusted: true },
    )
  },
})

const FIELD_NAME = 'field{... on ProjectV2FieldCommon{name}}'
const ITEMS = `items(first:$first,after:$after){nodes{id type
content{... on Issue{number title author{login} repository{nameWithOwner} url}
... on PullRequest{number title author{login} repository{nameWithOwner} url}
... on DraftIssue{title}}
fieldValues(first:20){nodes{
... on ProjectV2ItemFieldTextValue{text ${FIELD_NAME}}
... on ProjectV2ItemFieldNumberValue{number ${FIELD_NAME}}
... on ProjectV2ItemFieldDateValue{date ${FIELD_NAME}}
... on ProjectV2ItemFieldSingleSelectValue{name ${FIELD_NAME}}
... on ProjectV2ItemFieldIterationValue{title ${FIELD_NAME}}}}} ${PAGE_INFO}}`

export const listProjectItems = defineTool({
  name: 'list_project_items',
  title: 'Project items',
  description: 'Items of a project with their field values.',
  toolset,
  input: { owner, owner_type: ownerType, project_number: projectNumber, first, after },
  output: { items: list(), nextCursor: z.string().optional() },
  annotations: read,
  async run({ owner, owner_type, project_number, first, after }, { deps, auth, signal }) {
    const client = await github(deps, auth)
    const data = await graphql<
      Record<string, { projectV2: { items: { nodes: Array<Node>; pageInfo: PageInfo } } | null }>
    >(
      client.octokit,
      `query($login:String!,$number:Int!,$first:Int!,$after:String){${root(owner_type)}(login:$login){projectV2(number:$number){${ITEMS}}}}`,
      { login: owner, number: project_number, first, after },
      signal,
    )
    const items = data[root(owner_type)]?.projectV2?.items
    if (!items) throw new ToolError('not_found', `No project ${project_number} of ${owner}`)
    const rows = await Promise.all(
      items.nodes.map(async (node) => {
        const content = (node.content ?? {}) as Node
        const [repoOwner, repoName] = String(content.repository?.nameWithOwner ?? '/').split('/')
        const title =
          content.repository && repoOwner && repoName
            ? await userText(
                deps,
                client,
                { owner: repoOwner, repo: repoName },
                content.author?.login ?? null,
                content.title,
                signal,
              )
            : clean(content.title)
        const fields: Record<string, unknown> = {}
        for (const value of (node.fieldValues?.nodes ?? []) as Array<Node>) {
          const name = value.field?.name
          if (!name) continue
          fields[clean(name)] =
            value.text !== undefined
              ? cap(clean(value.text), 500)
              : (value.number ??
                value.date ??
                (value.name ? clean(value.name) : value.title ? clean(value.title) : null))
        }
        return {
          id: node.id,
          type: node.type,
          ...(content.number
            ? { number: content.number, repository: content.repository?.nameWithOwner }
            : {}),
          title: cap(title, 500),
          fields,
          ...(content.url ? { url: content.url } : {}),
        }
      }),
    )
    return cursorPage({ items: rows }, items.pageInfo)
  },
})

const projectId = z.string().min(1).describe('Project id (get_project)')
const itemId = z.string().min(1).describe('Item id')

export const addProjectItem = defineTool({
  name: 'add_project_item',
  title: 'Add to project',
  description: 'Add an issue or PR to a project.',
  toolset,
  input: { project_id: projectId, repo, number: number.describe('Issue or PR number') },
  output: { itemId: z.string() },
  annotations: { ...write, idempotentHint: true },
  async run({ project_id, repo: { owner, repo }, number }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data: issue } = await octokit.rest.issues.get({
      owner,
      repo,
      issue_number: number,
      ...signalOf(signal),
    })
    const data = await graphql<{ addProjectV2ItemById: { item: { id: string } } }>(
      octokit,
      'mutation($project:ID!,$content:ID!){addProjectV2ItemById(input:{projectId:$project,contentId:$content}){item{id}}}',
      { project: project_id, content: issue.node_id },
      signal,
    )
    return written({ itemId: data.addProjectV2ItemById.item.id })
  },
})

export const updateProjectItem = defineTool({
  name: 'update_project_item',
  title: 'Set project field',
  description: 'Set (or clear, with no value) one field of a project item.',
  toolset,
  input: {
    project_id: projectId,
    item_id: itemId,
    field_id: z.string().min(1).describe('Field id (get_project)'),
    text: z.string().optional().describe('Text value'),
    number: z.number().optional().describe('Number value'),
    date: z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}$/)
      .optional()
      .describe('YYYY-MM-DD'),
    option_id: z.string().optional().describe('Single-select option id'),
    iteration_id: z.string().optional().describe('Iteration id'),
  },
  output: { itemId: z.string(), cleared: z.boolean() },
  annotations: { ...write, destructiveHint: true, idempotentHint: true },
  async run(
    { project_id, item_id, field_id, text, number, date, option_id, iteration_id },
    { deps, auth, signal },
  ) {
    const values = Object.entries({
      text,
      number,
      date,
      singleSelectOptionId: option_id,
      iterationId: iteration_id,
    }).filter(([, value]) => value !== undefined)
    if (values.length > 1) throw new ToolError('invalid_argument', 'Give at most one value')
    const { octokit } = await github(deps, auth)
    const ids = { project: project_id, item: item_id, field: field_id }
    if (!values.length) {
      await graphql(
        octokit,
        'mutation($project:ID!,$item:ID!,$field:ID!){clearProjectV2ItemFieldValue(input:{projectId:$project,itemId:$item,fieldId:$field}){projectV2Item{id}}}',
        ids,
        signal,
      )
      return written({ itemId: item_id, cleared: true })
    }
    await graphql(
      octokit,
      'mutation($project:ID!,$item:ID!,$field:ID!,$value:ProjectV2FieldValue!){updateProjectV2ItemFieldValue(input:{projectId:$project,itemId:$item,fieldId:$field,value:$value}){projectV2Item{id}}}',
      { ...ids, value: Object.fromEntries(values) },
      signal,
    )
    return written({ itemId: item_id, cleared: false })
  },
})

export const deleteProjectItem = defineTool({
  name: 'delete_project_item',
  title: 'Remove from project',
  description: 'Remove an item from a project (the issue stays).',
  toolset,
  input: { project_id: projectId, item_id: itemId },
  output: { deletedItemId: z.string() },
  annotations: remove,
  async run({ project_id, item_id }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const data = await graphql<{ deleteProjectV2Item: { deletedItemId: string } }>(
      octokit,
      'mutation($project:ID!,$item:ID!){deleteProjectV2Item(input:{projectId:$project,itemId:$item}){deletedItemId}}',
      { project: project_id, item: item_id },
      signal,
    )
    return written({ deletedItemId: data.deleteProjectV2Item.deletedItemId })
  },
})
