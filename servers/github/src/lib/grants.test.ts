import { describe, expect, it } from 'vitest'
import { lackedPermissions, MAX_TOKENS, TokenGrants } from './grants.js'

const tools = [
  { name: 'get_issue', toolset: 'issues', readOnly: true },
  { name: 'create_issue', toolset: 'issues', readOnly: false },
  { name: 'create_label', toolset: 'labels', readOnly: false },
  { name: 'search_issues', toolset: 'issues', readOnly: true },
]

describe('lackedPermissions', () => {
  it.each([
    ['issues=write', ['issues=write']],
    [
      'repository_projects=write; organization_projects=admin',
      ['repository_projects=write', 'organization_projects=admin'],
    ],
    // A set of several: any one of them may be the missing one.
    ['contents=read,metadata=read', []],
    ['Issues=Read; nonsense; =write', ['issues=read']],
    ['', []],
  ])('%j → %j', (header, lacked) => {
    expect(lackedPermissions(header)).toEqual(lacked)
  })
})

describe('TokenGrants', () => {
  it('keeps one hidden map per token, the same object until something new is learned', () => {
    const grants = new TokenGrants(() => tools)
    expect(grants.observeDenied('a', 'issues=write')).toBe(true)
    const first = grants.hidden('a')
    expect([...(first?.keys() ?? [])]).toEqual(['create_issue'])
    expect(grants.observeDenied('a', 'issues=write')).toBe(false)
    expect(grants.hidden('a')).toBe(first)
    expect(grants.hidden('b')).toBeUndefined()
    // Lacking read means lacking write too.
    grants.observeDenied('a', 'issues=read')
    expect([...(grants.hidden('a')?.keys() ?? [])].sort()).toEqual(['create_issue', 'get_issue'])
  })

  it('forgets the least recently used token past the bound', () => {
    const grants = new TokenGrants(() => tools)
    for (let index = 0; index <= MAX_TOKENS; index++) grants.observeDenied(`t${index}`, 'issues=write')
    expect(grants.size).toBe(MAX_TOKENS)
    expect(grants.hidden('t0')).toBeUndefined()
    expect(grants.hidden(`t${MAX_TOKENS}`)?.has('create_issue')).toBe(true)
  })
})
