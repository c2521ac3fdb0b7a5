import { describe, expect, it } from 'vitest'
import { shownUrl } from './url.js'

describe('shownUrl', () => {
  it.each([
    ['http://user:s3cret@127.0.0.1:8080/private?q=1#top', 'http://127.0.0.1:8080/private?q=1#top'],
    ['https://:onlypass@example.com/', 'https://example.com/'],
    ['https://onlyuser@example.com/a', 'https://example.com/a'],
    ['http://u:p%40ss@example.com/', 'http://example.com/'],
  ])('drops the userinfo of %s', (url, shown) => {
    expect(shownUrl(url)).toBe(shown)
  })

  it('leaves URLs without userinfo, and text that is not a URL, as they are', () => {
    expect(shownUrl('https://example.com/a@b')).toBe('https://example.com/a@b')
    expect(shownUrl('about:blank')).toBe('about:blank')
    expect(shownUrl('not a url @ all')).toBe('not a url @ all')
  })
})
