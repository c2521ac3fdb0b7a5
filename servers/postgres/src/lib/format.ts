/**
 * Turning query results into what a model reads: JSON-safe values, a compact text table, CSV.
 * Every renderer has a byte cap and says so when it cut the output.
 */

/** The shape of a column, as returned by Database#readQuery. */
export interface ResultField {
  readonly name: string
  readonly dataTypeID: number
  readonly type: string
}

export interface RenderableResult {
  readonly fields: readonly ResultField[]
  readonly rows: readonly (readonly unknown[])[]
  /** The query had more rows than were fetched (row cap). */
  readonly truncated?: boolean
}

export interface JsonValueOptions {
  /** Strings (and hex-encoded bytes) longer than this many characters are cut. Default 10,000. */
  readonly maxStringLength?: number
}

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

const defaultMaxStringLength = 10_000

function truncateString(value: string, max: number): string {
  if (value.length <= max) return value
  return `${value.slice(0, max)}… [${value.length - max} more characters]`
}

/**
 * Converts a value produced by node-postgres into plain JSON: bigint and non-finite numbers as
 * strings (numeric and int8 already arrive as strings and stay exact), Dates as ISO 8601, bytes as
 * PostgreSQL's `\x…` hex form, long strings cut with a notice. Arrays and objects (json/jsonb,
 * points, …) are converted recursively.
 */
export function toJsonValue(value: unknown, options: JsonValueOptions = {}): JsonValue {
  const max = options.maxStringLength ?? defaultMaxStringLength
  const convert = (item: unknown, depth: number): JsonValue => {
    if (item === null || item === undefined) return null
    switch (typeof item) {
      case 'string':
        return truncateString(item, max)
      case 'boolean':
        return item
      case 'number':
        return Number.isFinite(item) ? item : String(item)
      case 'bigint':
        return item.toString()
      case 'function':
      case 'symbol':
        return null
    }
    if (item instanceof Date) return Number.isNaN(item.getTime()) ? null : item.toISOString()
    if (item instanceof Uint8Array) {
      const bytes = Buffer.from(item.buffer, item.byteOffset, item.byteLength)
      const maxBytes = Math.max(0, Math.floor((max - 2) / 2))
      const hex = `\\x${bytes.subarray(0, maxBytes).toString('hex')}`
      return bytes.length > maxBytes ? `${hex}… [${bytes.length - maxBytes} more bytes]` : hex
    }
    if (depth > 64) return '[nested too deeply]'
    if (Array.isArray(item)) return item.map((element) => convert(element, depth + 1))
    const result: { [key: string]: JsonValue } = {}
    for (const [key, element] of Object.entries(item as Record<string, unknown>)) {
      if (typeof element !== 'function') result[key] = convert(element, depth + 1)
    }
    return result
  }
  return convert(value, 0)
}

/**
 * Rows as objects keyed by column name. Duplicate names (`SELECT 1 AS a, 2 AS a`, or `?column?`
 * twice) get a suffix (`a`, `a_2`) instead of silently overwriting each other.
 */
export function rowsToObjects(
  fields: readonly ResultField[],
  rows: readonly (readonly unknown[])[],
  options: JsonValueOptions = {},
): Array<Record<string, JsonValue>> {
  const names = uniqueNames(fields.map((field) => field.name))
  return rows.map((row) => {
    const object: Record<string, JsonValue> = {}
    names.forEach((name, index) => {
      object[name] = toJsonValue(row[index], options)
    })
    return object
  })
}

/** Column names made unique in order of appearance: `a, a, b` → `a, a_2, b`. */
export function uniqueNames(names: readonly string[]): string[] {
  const seen = new Set<string>()
  return names.map((name) => {
    let candidate = name
    for (let suffix = 2; seen.has(candidate); suffix++) candidate = `${name}_${suffix}`
    seen.add(candidate)
    return candidate
  })
}

export interface RenderOptions {
  /** Cap on the UTF-8 size of the whole output, notice included. Default 64 KiB. */
  readonly maxBytes?: number
  /** Table format only: cells wider than this many characters are cut. Default 80. */
  readonly maxCellWidth?: number
  /** CSV only: values longer than this are cut. Default 10,000. */
  readonly maxStringLength?: number
  /**
   * Append the row count (table) and the truncation notice (both formats). Default true; callers
   * that write their own status line pass false and read `shownRows` / `omittedRows`.
   */
  readonly footer?: boolean
}

export interface RenderedResult {
  readonly text: string
  /** Rows included in `text`. */
  readonly shownRows: number
  /** Rows left out by the byte cap (the row cap is reported by the query result itself). */
  readonly omittedRows: number
  /** Whether `text` is incomplete for either reason, byte cap or row cap. */
  readonly truncated: boolean
}

const defaultMaxBytes = 64 * 1024
const byteLength = (text: string) => Buffer.byteLength(text, 'utf8')

/** Text of one value for the table and CSV renderers; `undefined` means SQL NULL. */
function cellText(value: unknown, maxStringLength: number): string | undefined {
  // The common cells first, without building a converter.
  if (value === null || value === undefined) return undefined
  if (typeof value === 'string' && value.length <= maxStringLength) return value
  if (typeof value === 'number' && Number.isFinite(value)) return String(value)
  if (typeof value === 'boolean') return String(value)
  const json = toJsonValue(value, { maxStringLength })
  if (json === null) return undefined
  return typeof json === 'string' ? json : JSON.stringify(json)
}

function truncationNotice(shown: number, omitted: number, rowCapped: boolean, maxBytes: number): string {
  const notes: string[] = []
  if (omitted > 0) notes.push(`${omitted} more fetched row(s) omitted to stay under ${maxBytes} bytes`)
  if (rowCapped) notes.push('the query returned more rows than the row limit')
  return notes.length === 0
    ? ''
    : `[truncated: showing ${shown} row(s); ${notes.join('; ')}. Add filters, aggregate, or use LIMIT/OFFSET.]\n`
}

/**
 * Greedy fill: keeps whole lines while they fit, so that header + rows + notice stay under the cap.
 * Returns how many rows fit.
 */
function fitRows(
  fixed: string[],
  lines: string[],
  maxBytes: number,
  noticeFor: (shown: number) => string,
): number {
  let used = fixed.reduce((total, line) => total + byteLength(line), 0)
  let shown = 0
  for (const line of lines) {
    const next = used + byteLength(line)
    // Reserve room for the notice that would follow if we stopped after this row.
    if (next + byteLength(noticeFor(shown + 1)) > maxBytes) break
    used = next
    shown++
  }
  return shown
}

/**
 * A compact aligned text table, like psql's: a header, a separator, one line per row, NULL shown as
 * `NULL`, line breaks in values shown as `\n`, wide cells cut. Ends with a row count and, when
 * anything was left out, a truncation notice.
 */
export function formatTable(result: RenderableResult, options: RenderOptions = {}): RenderedResult {
  const maxBytes = options.maxBytes ?? defaultMaxBytes
  const maxCellWidth = Math.max(4, options.maxCellWidth ?? 80)
  const withFooter = options.footer !== false
  const cut = (text: string) => (text.length > maxCellWidth ? `${text.slice(0, maxCellWidth - 1)}…` : text)
  const clean = (text: string) =>
    cut(/[\r\n\t]/.test(text) ? text.replace(/\r\n|\r|\n/g, '\\n').replace(/\t/g, '\\t') : text)
  const header = result.fields.map((field) => clean(field.name))
  const separators = 3 * Math.max(0, header.length - 1)
  // Only rows that could fit are rendered: a line is at least its cells and separators long (padding
  // only adds), so once that lower bound passes the cap, no later row can be shown.
  let lowerBound = header.reduce((total, name) => total + byteLength(name), 0) * 2 + separators
  const columns = result.fields.length
  const cells: string[][] = []
  for (const row of result.rows) {
    const rendered: string[] = new Array(columns)
    lowerBound += separators
    for (let index = 0; index < columns; index++) {
      const text = cellText(row[index], maxCellWidth * 4)
      const cell = text === undefined ? 'NULL' : clean(text)
      rendered[index] = cell
      lowerBound += byteLength(index === columns - 1 ? cell.trimEnd() : cell)
    }
    if (lowerBound > maxBytes) break
    cells.push(rendered)
  }
  const widths = header.map((name) => name.length)
  for (const row of cells)
    for (let index = 0; index < columns; index++)
      widths[index] = Math.max(widths[index] as number, (row[index] as string).length)
  // A line is built by appending: no array of padded cells to join, per row.
  const line = (values: readonly string[]) => {
    let text = ''
    for (let index = 0; index < values.length; index++) {
      const value = values[index] as string
      if (index > 0) text += ' | '
      text += index === values.length - 1 ? value : value.padEnd(widths[index] ?? 0)
    }
    return `${text.trimEnd()}\n`
  }
  const fixed = [line(header), `${widths.map((width) => '-'.repeat(width)).join('-+-')}\n`]
  const rowLines = cells.map(line)
  const total = result.rows.length
  const rowCapped = result.truncated === true
  const footer = (shown: number) =>
    withFooter
      ? `(${shown} row${shown === 1 ? '' : 's'})\n${truncationNotice(shown, total - shown, rowCapped, maxBytes)}`
      : ''
  const shown = fitRows(fixed, rowLines, maxBytes, footer)
  const text = fixed.join('') + rowLines.slice(0, shown).join('') + footer(shown)
  return {
    text,
    shownRows: shown,
    omittedRows: total - shown,
    truncated: rowCapped || shown < total,
  }
}

/** One CSV field per RFC 4180: quoted when it holds a comma, quote, CR, LF or edge spaces. */
export function csvField(value: string | undefined): string {
  // NULL is an empty unquoted field; an empty string is "" (the same convention as psql --csv).
  if (value === undefined) return ''
  if (value === '') return '""'
  return /[",\r\n]|^\s|\s$/.test(value) ? `"${value.replace(/"/g, '""')}"` : value
}

/**
 * CSV with a header line (CRLF-free: lines end in `\n`; embedded line breaks are quoted). When
 * anything was left out, a last line starting with `# truncated` says so.
 */
export function formatCsv(result: RenderableResult, options: RenderOptions = {}): RenderedResult {
  const maxBytes = options.maxBytes ?? defaultMaxBytes
  const maxStringLength = options.maxStringLength ?? defaultMaxStringLength
  const withFooter = options.footer !== false
  const header = `${result.fields.map((field) => csvField(field.name)).join(',')}\n`
  // Lines are exact here: stop rendering once they alone pass the cap.
  const rowLines: string[] = []
  let used = byteLength(header)
  for (const row of result.rows) {
    const line = `${result.fields.map((_, index) => csvField(cellText(row[index], maxStringLength))).join(',')}\n`
    used += byteLength(line)
    if (used > maxBytes) break
    rowLines.push(line)
  }
  const total = result.rows.length
  const rowCapped = result.truncated === true
  const notice = (shown: number) => {
    if (!withFooter) return ''
    const text = truncationNotice(shown, total - shown, rowCapped, maxBytes)
    return text === '' ? '' : `# ${text}`
  }
  const shown = fitRows([header], rowLines, maxBytes, notice)
  return {
    text: header + rowLines.slice(0, shown).join('') + notice(shown),
    shownRows: shown,
    omittedRows: total - shown,
    truncated: rowCapped || shown < total,
  }
}

/**
 * A psql-style excerpt of the SQL line PostgreSQL pointed at: `LINE 2: SELECT * FORM t` and a caret
 * under the character at `position` (1-based, in characters). Long lines are cut to a window.
 */
export function pointAt(sql: string, position: number): string | undefined {
  const characters = Array.from(sql)
  if (position < 1 || position > characters.length + 1) return undefined
  const before = characters.slice(0, position - 1).join('')
  const lineNumber = before.split('\n').length
  const lineStart = before.lastIndexOf('\n') + 1
  const rest = sql.slice(lineStart)
  const lineText = Array.from((rest.split('\n')[0] ?? '').replace(/\r$/, ''))
  const column = Array.from(before.slice(lineStart)).length
  // Long lines: a window around the position, so the excerpt stays short.
  const from = Math.max(0, column - 60)
  const to = Math.min(lineText.length, column + 40)
  const prefix = `${from > 0 ? '…' : ''}`
  const excerpt = `${prefix}${lineText.slice(from, to).join('')}${to < lineText.length ? '…' : ''}`
  const label = `LINE ${lineNumber}: `
  return `${label}${excerpt.replace(/\t/g, ' ')}\n${' '.repeat(label.length + prefix.length + column - from)}^`
}
