import { describe, expect, it } from 'vitest'
import { globToRegExp, type Route, routeFor } from './routes.js'

const route = (pattern: string, action: Route['action'] = 'block'): Route => ({
  pattern,
  matcher: globToRegExp(pattern),
  action,
  status: 200,
  contentType: 'text/plain',
  body: '',
})

describe('routes', () => {
  it('matches a glob against the whole URL, with * spanning slashes and the rest literal', () => {
    expect(globToRegExp('*/api/*').test('https://a.test/v1/api/items?x=1')).toBe(true)
    expect(globToRegExp('*/api/*').test('https://a.test/apix')).toBe(false)
    expect(globToRegExp('https://a.test/*.png').test('https://a.test/img/x.png')).toBe(true)
    expect(globToRegExp('https://a.test/*.png').test('https://a.test/x.png?y')).toBe(false)
    expect(globToRegExp('https://a.test/a+b(c)').test('https://a.test/a+b(c)')).toBe(true)
    expect(globToRegExp('https://a.test/a+b(c)').test('https://a.test/aab(c)')).toBe(false)
  })

  it('applies the first rule that matches', () => {
    const routes = [route('*/api/*', 'fulfill'), route('*')]
    expect(routeFor(routes, 'https://a.test/api/x')?.action).toBe('fulfill')
    expect(routeFor(routes, 'https://a.test/other')?.action).toBe('block')
    expect(routeFor([], 'https://a.test/')).toBeUndefined()
  })
})
