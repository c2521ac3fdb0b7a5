import { describe, expect, it } from 'vitest'
import { mayCarryToken } from './files.js'

describe('mayCarryToken', () => {
  it.each([
    ['https://files.slack.com/files-pri/T1-F1/a.txt', 'https://slack.com/api/', true],
    ['https://slack.com/files-pri/T1-F1/a.txt', 'https://slack.com/api/', true],
    ['https://files.slack-gov.com/files-pri/T1-F1/a.txt', 'https://slack-gov.com/api/', true],
    ['http://127.0.0.1:4000/files-pri/F1/a.txt', 'http://127.0.0.1:4000/api/', true],
    // Another port is another origin; plain http is never a Slack file host; look-alikes are not Slack.
    ['http://127.0.0.1:4001/files-pri/F1/a.txt', 'http://127.0.0.1:4000/api/', false],
    ['http://files.slack.com/files-pri/T1-F1/a.txt', 'https://slack.com/api/', false],
    ['https://files.slack.com.evil.example/a.txt', 'https://slack.com/api/', false],
    ['https://evilfiles.slack.com/a.txt', 'https://slack.com/api/', false],
    ['https://files.slack-gov.com/a.txt', 'https://slack.com/api/', false],
    ['not a url', 'https://slack.com/api/', false],
  ])('%s with the API at %s: %s', (url, api, expected) => {
    expect(mayCarryToken(url, api)).toBe(expected)
  })
})
