import { describe, expect, it } from 'vitest'
import {
  csvField,
  formatCsv,
  formatTable,
  pointAt,
  type RenderableResult,
  type ResultField,
  rowsToObjects,
  toJsonValue,
  uniqueNames,
} from './format.js'

const field = (name: string, type = 'text', dataTypeID = 25): ResultField => ({ name, type, dataTypeID })

describe('toJsonValue', () => {
  it.each<[string, unknown, unknown]>([
    ['null', null, null],
    ['undefined', undefined, null],
    ['boolean', true, true],
    ['number', 1.5, 1.5],
    ['NaN', Number.NaN, 'NaN'],
    ['Infinity', Number.POSITIVE_INFINITY, 'Infinity'],
    ['bigint', 2n ** 70n, '1180591620717411303424'],
    ['numeric string stays exact', '12345678901234567890.123456789', '12345678901234567890.123456789'],
    ['Date', new Date('2024-01-02T03:04:05.678Z'), '2024-01-02T03:04:05.678Z'],
    ['invalid Date', new Date(Number.NaN), null],
    ['Buffer', Buffer.from([0xde, 0xad, 0xbe, 0xef]), '\\xdeadbeef'],
    ['Uint8Array', new Uint8Array([1, 2]), '\\x0102'],
    ['array', [1, null, 'a'], [1, null, 'a']],
    ['json object', { a: { b: [1n] } }, { a: { b: ['1'] } }],
  ])('converts %s', (_label, input, expected) => {
    expect(toJsonValue(input)).toEqual(expected)
  })

  it('cuts long strings and says how much was cut', () => {
    expect(toJsonValue('x'.repeat(30), { maxStringLength: 10 })).toBe(
      `${'x'.repeat(10)}… [20 more characters]`,
    )
  })

  it('cuts long byte strings', () => {
    const value = toJsonValue(Buffer.alloc(100), { maxStringLength: 12 })
    expect(value).toBe('\\x0000000000… [95 more bytes]')
  })

  it('produces values that survive JSON.stringify', () => {
    const value = toJsonValue({ big: 1n, date: new Date(0), bytes: Buffer.from('a') })
    expect(JSON.parse(JSON.stringify(value))).toEqual({
      big: '1',
      date: '1970-01-01T00:00:00.000Z',
      bytes: '\\x61',
    })
  })
})

describe('rowsToObjects', () => {
  it('keys rows by column name and keeps duplicate names apart', () => {
    const fields = [field('a'), field('a'), field('?column?'), field('?column?')]
    expect(rowsToObjects(fields, [[1, 2, 3, 4]])).toEqual([{ a: 1, a_2: 2, '?column?': 3, '?column?_2': 4 }])
  })

  it('makes names unique even when a suffixed name already exists', () => {
    expect(uniqueNames(['a', 'a_2', 'a'])).toEqual(['a', 'a_2', 'a_3'])
  })
})

const sample: RenderableResult = {
  fields: [field('id', 'integer', 23), field('name'), field('note')],
  rows: [
    [1, 'Ada', null],
    [2, 'Zoë "Quotes", Comma', 'line one\nline two'],
  ],
}

describe('formatTable', () => {
  it('renders an aligned table with a row count', () => {
    const { text, shownRows, truncated } = formatTable(sample)
    expect(text).toBe(
      [
        'id | name                | note',
        '---+---------------------+-------------------',
        '1  | Ada                 | NULL',
        '2  | Zoë "Quotes", Comma | line one\\nline two',
        '(2 rows)',
        '',
      ].join('\n'),
    )
    expect(shownRows).toBe(2)
    expect(truncated).toBe(false)
  })

  it('cuts wide cells', () => {
    const { text } = formatTable({ fields: [field('v')], rows: [['x'.repeat(100)]] }, { maxCellWidth: 10 })
    expect(text).toContain(`${'x'.repeat(9)}…`)
    expect(text).not.toContain('x'.repeat(10))
  })

  it('stays under the byte cap and says what it left out', () => {
    const rows = Array.from({ length: 1_000 }, (_, index) => [index, `name ${index}`, 'ü'.repeat(20)])
    const { text, shownRows, omittedRows, truncated } = formatTable(
      { fields: sample.fields, rows },
      { maxBytes: 2_000 },
    )
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(2_000)
    expect(shownRows).toBeGreaterThan(0)
    expect(shownRows + omittedRows).toBe(1_000)
    expect(truncated).toBe(true)
    expect(text).toContain(
      `[truncated: showing ${shownRows} row(s); ${omittedRows} more fetched row(s) omitted`,
    )
  })

  it('mentions the row cap when the query had more rows than were fetched', () => {
    const { text, truncated } = formatTable({ ...sample, truncated: true })
    expect(truncated).toBe(true)
    expect(text).toContain('the query returned more rows than the row limit')
  })

  it('renders an empty result', () => {
    expect(formatTable({ fields: [field('id')], rows: [] }).text).toBe('id\n--\n(0 rows)\n')
  })
})

describe('csvField', () => {
  it.each<[string | undefined, string]>([
    [undefined, ''],
    ['', '""'],
    ['plain', 'plain'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    ['cr\r', '"cr\r"'],
    [' padded ', '" padded "'],
  ])('quotes %j as %j', (input, expected) => {
    expect(csvField(input)).toBe(expected)
  })
})

describe('formatCsv', () => {
  it('renders RFC 4180 CSV with NULL as an empty field', () => {
    const { text } = formatCsv(sample)
    expect(text).toBe('id,name,note\n1,Ada,\n2,"Zoë ""Quotes"", Comma","line one\nline two"\n')
  })

  it('renders json values as JSON text and bytes as hex', () => {
    const { text } = formatCsv({ fields: [field('j'), field('b')], rows: [[{ a: 1 }, Buffer.from([255])]] })
    expect(text).toBe('j,b\n"{""a"":1}",\\xff\n')
  })

  it('stays under the byte cap with a # truncated line', () => {
    const rows = Array.from({ length: 500 }, (_, index) => [index, 'x'.repeat(50), null])
    const { text, truncated, shownRows } = formatCsv(
      { fields: sample.fields, rows, truncated: true },
      { maxBytes: 1_000 },
    )
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(1_000)
    expect(truncated).toBe(true)
    expect(
      text
        .split('\n')
        .filter((line) => line !== '')
        .at(-1),
    ).toMatch(/^# \[truncated: showing \d+ row/)
    expect(text.split('\n').length - 3).toBe(shownRows)
  })
})

describe('rendering without a footer', () => {
  const result: RenderableResult = {
    fields: [field('n', 'integer', 23)],
    rows: [[1], [2], [3]],
    truncated: true,
  }

  it('leaves out the row count and the notice, and still reports what it showed', () => {
    expect(formatTable(result, { footer: false })).toEqual({
      text: 'n\n-\n1\n2\n3\n',
      shownRows: 3,
      omittedRows: 0,
      truncated: true,
    })
    expect(formatCsv(result, { footer: false }).text).toBe('n\n1\n2\n3\n')
  })
})

describe('rendering a large result', () => {
  // Only rows that can fit are rendered: a 100,000-row result costs what its first page costs.
  const rows = Array.from({ length: 100_000 }, (_, index) => [index, `value ${index}`])
  const large: RenderableResult = { fields: [field('id', 'integer', 23), field('value')], rows }

  it.each([
    ['table', formatTable],
    ['csv', formatCsv],
  ] as const)('%s stays under the cap and counts every row left out', (_format, render) => {
    const rendered = render(large, { maxBytes: 4096 })
    expect(Buffer.byteLength(rendered.text)).toBeLessThanOrEqual(4096)
    expect(rendered.shownRows).toBeGreaterThan(100)
    expect(rendered.shownRows + rendered.omittedRows).toBe(100_000)
    expect(rendered.text).toContain(`${rendered.omittedRows} more fetched row(s) omitted`)
  })
})

describe('pointAt', () => {
  it.each<[string, string, number, string | undefined]>([
    ['the first line', 'SELECT * FORM t', 10, 'LINE 1: SELECT * FORM t\n                 ^'],
    ['a later line', 'SELECT a,\n  b\nFROM = t', 20, `LINE 3: FROM = t\n${' '.repeat(13)}^`],
    ['CRLF line ends', 'SELECT 1\r\nFORM t', 11, 'LINE 2: FORM t\n        ^'],
    ['the end of the text', 'SELECT (', 9, `LINE 1: SELECT (\n${' '.repeat(16)}^`],
    ['a position past the end', 'SELECT', 8, undefined],
    [
      'characters, not UTF-16 units',
      "SELECT '😀' FORM t",
      12,
      `LINE 1: SELECT '😀' FORM t\n${' '.repeat(19)}^`,
    ],
  ])('points into %s', (_label, sql, position, expected) => {
    expect(pointAt(sql, position)).toBe(expected)
  })

  it('cuts a long line to a window around the position', () => {
    const sql = `SELECT ${'x, '.repeat(100)}FORM t`
    const excerpt = pointAt(sql, sql.indexOf('FORM') + 1) ?? ''
    const [line, caret] = excerpt.split('\n')
    expect(line).toMatch(/^LINE 1: …x, x, .*FORM t$/)
    expect(line?.[caret?.indexOf('^') ?? -1]).toBe('F')
    expect(line?.length).toBeLessThan(120)
  })
})
