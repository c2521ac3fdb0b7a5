import { describe, expect, it } from 'vitest'
import { sanitize } from './sanitize.js'

describe('sanitize', () => {
  it.each([
    ['tag characters', `a${String.fromCodePoint(0xe0041, 0xe0042)}b`, 'ab'],
    ['bidi overrides and isolates', 'a\u202Eb\u2066c\u2069d\u200Fe', 'abcde'],
    ['zero-width characters and BOM', 'a\u200Bb\u200Cc\u200Dd\u2060e\uFEFFf', 'abcdef'],
    ['soft hyphen', 'in\u00ADvisible', 'invisible'],
    ['HTML comments', 'a<!-- hidden -->b', 'ab'],
    ['an unclosed comment to the end', 'a<!-- hidden', 'a'],
    ['script and style', 'a<script>x()</script><style>p{}</style>b', 'ab'],
    ['display:none elements', 'a<span style="display: none">x</span>b', 'ab'],
    ['hidden attribute', 'a<div hidden>x</div>b', 'ab'],
    ['zero font size', 'a<p style="font-size:0">x</p>b', 'ab'],
    ['markdown comments', 'a\n[//]: # (hidden)\nb', 'a\n\nb'],
    ['comments split by a hidden character', 'a<!\u200B-- x -->b', 'ab'],
  ])('removes %s', (_name, input, expected) => {
    expect(sanitize(input)).toBe(expected)
  })

  it.each([
    ['visible HTML', '<details><summary>s</summary>t</details>'],
    ['emoji', 'ship it 🚀'],
    ['links', '[docs](https://example.com)'],
    ['a visible font size', '<p style="font-size:10px">x</p>'],
    ['non-Latin text', 'Grüße, 日本語, עברית'],
  ])('keeps %s', (_name, input) => {
    expect(sanitize(input)).toBe(input)
  })
})
