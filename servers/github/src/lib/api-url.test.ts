import { describe, expect, it } from 'vitest'
import { baseUrlOf, normaliseApiUrl } from './api-url.js'

describe('normaliseApiUrl', () => {
  it.each([
    ['https://api.github.com', 'https://api.github.com'],
    ['https://github.com', 'https://api.github.com'],
    ['https://ghes.example.com', 'https://ghes.example.com/api/v3'],
    ['https://ghes.example.com/api/v3/', 'https://ghes.example.com/api/v3'],
    ['https://acme.ghe.com', 'https://api.acme.ghe.com'],
    ['https://api.acme.ghe.com', 'https://api.acme.ghe.com'],
    ['http://127.0.0.1:8080', 'http://127.0.0.1:8080'],
    ['http://localhost:9000/api/v3', 'http://localhost:9000/api/v3'],
    ['http://[::1]:9000', 'http://[::1]:9000'],
  ])('%s → %s', (input, expected) => {
    expect(baseUrlOf(normaliseApiUrl(input))).toBe(expected)
  })

  it.each([
    ['http://ghes.example.com/api/v3', /https/],
    ['http://10.0.0.5/api/v3', /https/],
    ['https://user:pass@ghes.example.com', /credentials/],
    ['https://ghes.example.com/api/v3?x=1', /query/],
    ['not a url', /absolute URL/],
    ['ftp://ghes.example.com', /https/],
  ])('refuses %s', (input, message) => {
    expect(() => normaliseApiUrl(input)).toThrow(message)
  })
})
