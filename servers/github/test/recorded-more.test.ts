import { afterEach, describe, expect, it } from 'vitest'
import { recorded } from './fake-github.js'
import { closeAll, dataOf, setup } from './helpers.js'

afterEach(closeAll)

// Real GitHub answers recorded by @octokit/fixtures, replayed once each, for the recorded token only.
const ORG = 'octokit-fixture-org'

describe('recorded GitHub answers for the newer tools', () => {
  it('labels: list, create, get, update and delete replay the recorded scenario in order', async () => {
    const { fake, call } = await setup()
    fake.replay(recorded('labels'))
    const repo = `${ORG}/labels`
    const listed = dataOf(await call('list_labels', { repo }))
    expect(listed.labels[0]).toEqual({ name: 'bug', color: 'd73a4a', description: "Something isn't working" })
    expect(dataOf(await call('create_label', { repo, name: 'test-label', color: '663399' })).label).toEqual({
      name: 'test-label',
      color: '663399',
      description: '',
    })
    expect(dataOf(await call('get_label', { repo, name: 'test-label' })).label.name).toBe('test-label')
    const updated = await call('update_label', {
      repo,
      name: 'test-label',
      new_name: 'test-label-updated',
      color: 'BADA55',
    })
    expect(dataOf(updated).label).toMatchObject({ name: 'test-label-updated', color: 'BADA55' })
    expect(dataOf(await call('delete_label', { repo, name: 'test-label-updated' })).deleted).toBe(
      'test-label-updated',
    )
    expect(fake.unmatched).toEqual([])
  })

  it('releases: a release by tag, with its assets', async () => {
    const { fake, call } = await setup()
    fake.replay(recorded('release-assets').slice(0, 1))
    const release = dataOf(
      await call('get_release_by_tag', { repo: `${ORG}/release-assets`, tag: 'v1.0.0' }),
    ).release
    expect(release).toMatchObject({
      tag: 'v1.0.0',
      url: 'https://github.com/octokit-fixture-org/release-assets/releases/tag/v1.0.0',
    })
    expect(fake.unmatched).toEqual([])
  })

  it('issues: create an issue, then add labels to it', async () => {
    const { fake, call } = await setup()
    fake.replay(recorded('add-labels-to-issue'))
    const repo = `${ORG}/add-labels-to-issue`
    const created = dataOf(await call('create_issue', { repo, title: 'Issue without a label' }))
    expect(created.number).toBe(1)
    const result = dataOf(
      await call('add_issue_labels', { repo, issue_number: 1, labels: ['Foo', 'bAr', 'baZ'] }),
    )
    expect(result.labels).toEqual(['Foo', 'bAr', 'baZ'])
    expect(fake.calls('POST', `/repos/${repo}/issues/1/labels`)[0]?.body).toEqual({
      labels: ['Foo', 'bAr', 'baZ'],
    })
    expect(fake.unmatched).toEqual([])
  })
})
