import { describe, expect, it } from 'vitest'
import { isBinary, sliceFile } from './file-content.js'

const bytes = (text: string) => new TextEncoder().encode(text)

describe('sliceFile', () => {
  it('never splits a UTF-8 character at either end', () => {
    const data = bytes('ab€cd') // € is 3 bytes at offsets 2..4
    const first = sliceFile(data, 'x.txt', 0, 3)
    expect(first).toMatchObject({ content: 'ab', nextOffset: 2 })
    const second = sliceFile(data, 'x.txt', 3, 10)
    expect(second).toMatchObject({ content: '€cd', offset: 2, nextOffset: undefined })
  })

  it('says binary for NUL bytes and invalid UTF-8', () => {
    expect(isBinary(new Uint8Array([104, 0, 105]))).toBe(true)
    expect(isBinary(new Uint8Array([0xff, 0xfe, 0x41]))).toBe(true)
    expect(isBinary(bytes('plain text'))).toBe(false)
  })

  it('strips invisible markup only from Markdown', () => {
    expect(sliceFile(bytes('<!-- c -->x'), 'a.md', 0, 100).content).toBe('x')
    expect(sliceFile(bytes('<!-- c -->x'), 'a.html', 0, 100).content).toBe('<!-- c -->x')
  })
})
