import { describe, expect, it } from 'vitest'
import { hiddenByScopes, parseScopes } from './scopes.js'

const tools = [
  { name: 'get_issue', toolset: 'issues', readOnly: true },
  { name: 'create_issue', toolset: 'issues', readOnly: false },
  { name: 'list_notifications', toolset: 'notifications', readOnly: true },
  { name: 'list_projects', toolset: 'projects', readOnly: true },
  { name: 'add_project_item', toolset: 'projects', readOnly: false },
  { name: 'get_gist', toolset: 'gists', readOnly: true },
  { name: 'create_gist', toolset: 'gists', readOnly: false },
  { name: 'list_dependabot_alerts', toolset: 'dependabot', readOnly: true },
  { name: 'find_tools', toolset: 'dynamic', readOnly: true },
]
const hidden = (header: string) => [...hiddenByScopes(tools, parseScopes(header))].sort()

describe('hiddenByScopes', () => {
  it.each([
    [
      '',
      [
        'add_project_item',
        'create_gist',
        'create_issue',
        'list_dependabot_alerts',
        'list_notifications',
        'list_projects',
      ],
    ],
    ['repo', ['add_project_item', 'create_gist', 'list_projects']],
    ['repo, gist, notifications, project', []],
    ['public_repo, read:project', ['add_project_item', 'create_gist', 'list_notifications']],
    [
      'gist',
      ['add_project_item', 'create_issue', 'list_dependabot_alerts', 'list_notifications', 'list_projects'],
    ],
  ])('scopes "%s" hide %j', (header, expected) => {
    expect(hidden(header)).toEqual(expected)
  })

  it('keeps reading tools for public repositories whatever the scopes', () => {
    expect(hidden('')).not.toContain('get_issue')
    expect(hidden('')).not.toContain('get_gist')
  })
})
