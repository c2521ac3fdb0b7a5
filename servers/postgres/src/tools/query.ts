import {
  budgetOutput,
  bytesFor,
  estimateTokens,
  maxTokensArgument,
  nodeCrypto,
  openBudget,
  ToolError,
  withMarker,
  z,
} from '@keel-mcp/core'
import { HARD_MAX_ROWS } from '../config.js'
import { toToolError } from '../errors.js'
import { formatCsv, formatTable, type JsonValue, type QueryResult, toJsonValue } from '../lib/index.js'
import {
  databaseShape,
  defineTool,
  items,
  paramsShape,
  readOnly,
  rowCount,
  sqlShape,
  untrusted,
} from './shared.js'

/** Longer strings are cut (with a notice of how much) in the structured rows too. */
const MAX_STRING_LENGTH = 10_000
/** The text the model reads is capped; the structured rows carry the rest. */
export const QUERY_TEXT_MAX_BYTES = 64 * 1024
/**
 * Structured rows stop at this JSON size, well below the 10 MiB message limit of the official
 * clients: a result they cannot receive helps nobody.
 */
export const QUERY_STRUCTURED_MAX_BYTES = 8 * 1024 * 1024

/** Characters of a JSON number: exact for integers, an upper bound (18) for the rest. */
function numberLength(value: number): number {
  if (!Number.isInteger(value) || Math.abs(value) >= 1e15) return 18
  let length = value < 0 ? 2 : 1
  for (let rest = Math.abs(value); rest >= 10; rest /= 10) length++
  return length
}

/**
 * Makes rows JSON-safe in place (pg's row arrays are ours to change) and stops once their JSON
 * would pass `budget` bytes. Most cells are strings, finite numbers, booleans or null and are
 * left alone; the size is counted per cell (UTF-8 bytes of strings, digits of numbers), not by
 * serialising each row, which at 100,000 rows would cost as much as the query.
 */
function jsonRows(rows: unknown[][], budget: number): { rows: JsonValue[][]; complete: boolean } {
  let used = 2
  for (let index = 0; index < rows.length; index++) {
    const row = rows[index] as unknown[]
    used += row.length + 2
    for (let cell = 0; cell < row.length; cell++) {
      const value = row[cell]
      if (typeof value === 'string') {
        if (value.length > MAX_STRING_LENGTH) row[cell] = toJsonValue(value)
        used += Buffer.byteLength(row[cell] as string) + 2
      } else if (typeof value === 'number' && Number.isFinite(value)) {
        used += numberLength(value)
      } else if (value === null || typeof value === 'boolean') {
        used += 5
      } else {
        const converted = toJsonValue(value)
        row[cell] = converted
        used +=
          typeof converted === 'string' ? Buffer.byteLength(converted) + 2 : JSON.stringify(converted).length
      }
    }
    if (used > budget) return { rows: rows.slice(0, index) as JsonValue[][], complete: false }
  }
  return { rows: rows as JsonValue[][], complete: true }
}

/** What a budget cursor carries of the rows shown before it: a cut continues only on the same rows. */
function fingerprint(rows: readonly JsonValue[][]): string {
  return nodeCrypto().createHash('sha256').update(JSON.stringify(rows)).digest('base64url').slice(0, 12)
}

type Render = typeof formatTable

/**
 * The rows from the start of `rows` whose text fits `tokens`: rendered within the bytes the budget
 * allows, then narrowed while the estimate is over (text with many non-ASCII characters). At least one.
 */
function rowsWithin(
  render: Render,
  fields: Parameters<Render>[0]['fields'],
  rows: JsonValue[][],
  tokens: number,
) {
  let maxBytes = Math.min(QUERY_TEXT_MAX_BYTES, bytesFor(tokens))
  for (;;) {
    const rendered = render({ fields, rows }, { maxBytes, footer: false })
    const estimate = estimateTokens(rendered.text)
    if (rendered.shownRows === 0) return 1
    if (estimate <= tokens) return rendered.shownRows
    maxBytes = Math.floor((maxBytes * tokens) / estimate) - 1
  }
}

export const query = defineTool({
  name: 'query',
  title: 'Run a read-only SQL query',
  description:
    'Rows of one read-only SQL statement, capped at max_rows: aggregate or filter, not page. Plans: explain_query.',
  input: {
    sql: sqlShape.describe('SQL'),
    params: paramsShape,
    // Its default (--max-rows) is in the server's instructions.
    max_rows: rowCount(HARD_MAX_ROWS).optional().describe('Max rows'),
    format: z.enum(['table', 'csv']).default('table').describe('Format'),
    database: databaseShape,
    cursor: z.string().optional().describe('Cursor'),
    max_tokens: maxTokensArgument,
  },
  output: {
    columns: items(),
    // Advertised as an array of arrays; only the outer array is checked at run time (checking
    // every row again cost as much as fetching it, at 100,000 rows).
    rows: z.array(z.unknown().meta({ type: 'array' })),
    rowCount: z.number().int(),
    truncated: z.boolean(),
    truncatedBy: z.enum(['max_rows', 'size']).optional(),
    ...budgetOutput,
  },
  annotations: readOnly,
  // A slow query or a search of a large tree can run as an MCP task: the client polls for it.
  taskSupport: 'optional',
  async run(args, { deps, signal }) {
    const { sql, params, max_rows, format, database } = args
    // A budget smaller than the text cap cuts the rows (text and structured); the cursor runs the
    // statement again and continues after the rows shown, if they are still the first ones.
    const budget = openBudget('query', args)
    const maxRows = max_rows ?? deps.maxRows
    // withSql's mapping, written out: no closure and no second async frame per call.
    let result: QueryResult
    try {
      result = await deps.target(database).db.query(sql, params ?? [], { maxRows, signal })
    } catch (error) {
      throw toToolError(error, sql) ?? error
    }
    const structured = jsonRows(result.rows as unknown[][], QUERY_STRUCTURED_MAX_BYTES)
    const truncatedBy: 'size' | 'max_rows' | undefined = !structured.complete
      ? 'size'
      : result.truncated
        ? 'max_rows'
        : undefined
    let rows = structured.rows
    const from = budget.start.offset
    if (from > 0) {
      if (from > rows.length || fingerprint(rows.slice(0, from)) !== budget.start.upstream)
        throw new ToolError(
          'conflict',
          'The rows before the cursor are not the ones this run returns first',
          {
            hint: 'Give the statement an ORDER BY that decides the order, and run it again without cursor.',
          },
        )
      rows = rows.slice(from)
    }
    const render = format === 'csv' ? formatCsv : formatTable
    let cut: ReturnType<typeof budget.cutAfter> | undefined
    if (bytesFor(budget.tokens) < QUERY_TEXT_MAX_BYTES) {
      // What the rows may take: the budget less the untrusted-data frame and the marker line.
      const fit = rowsWithin(render, result.fields, rows, Math.max(1, budget.tokens - 60))
      if (fit < rows.length) {
        cut = budget.cutAfter({
          shown: fit,
          total: rows.length,
          noun: 'rows',
          upstream: fingerprint(structured.rows.slice(0, from + fit)),
        })
        rows = rows.slice(0, fit)
      }
    }
    const rendered = render(
      { fields: result.fields, rows },
      { maxBytes: QUERY_TEXT_MAX_BYTES, footer: false },
    )
    if (cut) {
      return {
        data: {
          columns: result.fields.map((field) => ({ name: field.name, type: field.type })),
          rows,
          rowCount: rows.length,
          truncated: true,
          budget: cut.cut,
        },
        text: withMarker(untrusted(rendered.text).trimEnd(), cut.marker),
      }
    }
    const status: string[] = [`${rows.length} row${rows.length === 1 ? '' : 's'}.`]
    if (truncatedBy === 'max_rows') {
      status.push(
        `Truncated: the query has more rows than max_rows=${maxRows}. Aggregate or add WHERE/LIMIT; raise max_rows (≤ ${HARD_MAX_ROWS}) only if you need the rows themselves.`,
      )
    } else if (truncatedBy === 'size') {
      status.push(
        `Truncated: the result reached the ${QUERY_STRUCTURED_MAX_BYTES / 1024 / 1024} MiB size limit after ${rows.length} rows. Select fewer or narrower columns.`,
      )
    }
    if (rendered.omittedRows > 0) {
      status.push(
        `This text shows the first ${rendered.shownRows} (${QUERY_TEXT_MAX_BYTES / 1024} KiB limit); the structured result has all ${rows.length}.`,
      )
    }
    return {
      data: {
        columns: result.fields.map((field) => ({ name: field.name, type: field.type })),
        rows,
        rowCount: rows.length,
        truncated: truncatedBy !== undefined,
        ...(truncatedBy === undefined ? {} : { truncatedBy }),
      },
      text: `${untrusted(rendered.text)}${status.join(' ')}`,
    }
  },
})
