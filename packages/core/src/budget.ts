import { z } from 'zod'
import { ToolError } from './errors.js'
import { nodeCrypto } from './lazy-crypto.js'
import { DEFAULT_MAX_ANSWER_TOKENS } from './observe-config.js'

export { DEFAULT_MAX_ANSWER_TOKENS }

// Caller-visible answer budgets (docs/observability.md, "Budgets"). A tool that can return a lot
// takes `max_tokens`, bounded by the operator's `--max-answer-tokens`; when its answer does not
// fit, it cuts, says so in the text and in `structuredContent.budget`, and hands out a cursor that
// continues exactly where it stopped.

let operatorCap = DEFAULT_MAX_ANSWER_TOKENS

/** Sets the process-wide cap (core does this from `--max-answer-tokens` when it selects the tools). */
export function useAnswerCap(tokens: number | undefined): void {
  operatorCap = tokens ?? DEFAULT_MAX_ANSWER_TOKENS
}

/** The operator's cap on one answer, in estimated tokens. */
export function answerCap(): number {
  return operatorCap
}

/**
 * The caller's budget in effect: `requested` bounded by the operator's cap, or the cap itself.
 * Throws `invalid_argument` below 1.
 */
export function boundTokens(requested: number | undefined): number {
  if (requested !== undefined && !(requested >= 1))
    throw new ToolError('invalid_argument', `max_tokens must be at least 1, got ${requested}`)
  return Math.min(requested ?? operatorCap, operatorCap)
}

/**
 * `max_tokens`: the caller's budget for one answer. Parses to the budget in effect (a number,
 * never undefined): the value asked for, bounded by the operator's cap; the cap when absent.
 * Listed as `{"type":"integer"}` — its name says the rest, and every listed word costs tokens.
 */
export const maxTokensArgument = z
  .number()
  .int()
  .optional()
  .transform((value, context) => {
    if (value !== undefined && value < 1) {
      context.addIssue({ code: 'custom', message: 'must be at least 1' })
      return z.NEVER
    }
    return Math.min(value ?? operatorCap, operatorCap)
  })
  .describe('Max tokens')

/**
 * `max_bytes` for tools that always measured their answer in bytes: the value asked for (or
 * `fallback`), bounded by the operator's cap in bytes ({@link bytesFor}).
 */
export function boundBytes(requested: number | undefined, fallback: number): number {
  return Math.min(requested ?? fallback, bytesFor(operatorCap))
}

/**
 * Estimated tokens of `text`: one per 4 ASCII characters, one per other character (code point).
 * Cheap (one pass, no tokenizer), consistent across servers, and close for what tools return:
 * English, code, JSON and SQL run at about 4 characters a token in current tokenizers; accented
 * and CJK text at about one a character, which a plain bytes ÷ 4 would undercount by a quarter.
 */
export function estimateTokens(text: string): number {
  let ascii = 0
  let other = 0
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (code < 0x80) ascii++
    // A surrogate pair is one code point: count its first half only.
    else if (code < 0xdc00 || code > 0xdfff) other++
  }
  return Math.ceil(ascii / 4) + other
}

/** The characters of ASCII text that fit `tokens` (for tools that measure in characters). */
export function charsFor(tokens: number): number {
  return tokens * 4
}

/** The bytes of ASCII text that fit `tokens`. */
export function bytesFor(tokens: number): number {
  return tokens * 4
}

/** What a cut answer reports in `structuredContent.budget`. Absent when nothing was cut. */
export interface BudgetCut {
  cut: true
  /** Pass it back as `cursor` (with the same other arguments) to continue exactly here. */
  cursor: string
  /** Items (or characters, for a text) shown in this answer. */
  shown: number
  /** Items (or characters) the answer would have held without the budget. */
  total?: number
}

/** The schema of {@link BudgetCut}. Core lists it as `{"type":"object"}` (see `budgetOutput`). */
export const budgetShape = z.object({
  cut: z.literal(true),
  cursor: z.string(),
  shown: z.number().int(),
  total: z.number().int().optional(),
})

/**
 * The output schema fragment of a tool that cuts: spread it into the tool's `output`
 * (`output: { rows: …, ...budgetOutput }`) and return `budget` when the answer was cut.
 */
export const budgetOutput = { budget: budgetShape.optional() }

/** Where an answer starts: the tool's own (upstream) cursor, and how many items of that page to skip. */
export interface BudgetStart {
  /** The tool's own cursor (an API's next-page cursor), or undefined for the first page. */
  upstream: string | undefined
  /** Items (or characters of a text) of that page already shown. */
  offset: number
}

const PREFIX = '~'

// A cursor is `~<payload>.<check>`: the payload (base64url JSON of the offset and the upstream
// cursor) and 12 characters of SHA-256 over the tool, the call's other arguments and the payload.
// The check catches a cursor edited by hand or passed to another tool or other arguments; it is
// not a secret, nor needs one: a cursor only positions inside what those arguments already allow.
function checkOf(tool: string, scope: string, payload: string): string {
  return nodeCrypto()
    .createHash('sha256')
    .update(`${tool}\0${scope}\0${payload}`)
    .digest('base64url')
    .slice(0, 12)
}

/** The arguments a cursor belongs to: all but the cursor and the budget, in a stable order. */
function scopeOf(args: Record<string, unknown>, cursorKey: string): string {
  const stable = (value: unknown): unknown =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((key) => [key, stable((value as Record<string, unknown>)[key])]),
        )
      : Array.isArray(value)
        ? value.map(stable)
        : value
  const rest: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(args))
    if (key !== cursorKey && key !== 'max_tokens' && key !== 'max_bytes' && value !== undefined)
      rest[key] = value
  return JSON.stringify(stable(rest))
}

/** True when `cursor` has the form of a budget cursor (not necessarily a valid one). */
export function isBudgetCursor(cursor: string | undefined): boolean {
  return cursor?.startsWith(PREFIX) === true
}

/** Options of {@link openBudget}. */
export interface OpenBudgetOptions {
  /** The argument that carries the cursor. Default `cursor`. */
  cursorKey?: string
  /**
   * The tool has cursors of its own (an API's pages): a cursor that is not a budget cursor is
   * passed through as `start.upstream`. Otherwise only budget cursors are accepted.
   */
  upstream?: boolean
}

/** The budget of one call: see {@link openBudget}. */
export class Budget {
  /** Where this answer starts. */
  readonly start: BudgetStart

  constructor(
    readonly tool: string,
    /** The budget in effect (already bounded by the operator's cap). */
    readonly tokens: number,
    scope: string | (() => string),
    cursor: string | undefined,
    private readonly upstream: boolean,
  ) {
    this.#scope = scope
    this.start = this.decode(cursor)
  }

  /** The call's other arguments as text: computed when a cursor is checked or made, not before. */
  #scope: string | (() => string)

  private get scope(): string {
    if (typeof this.#scope !== 'string') this.#scope = this.#scope()
    return this.#scope
  }

  /** A cursor that continues at `position` (for a cut the helpers below do not make). */
  cursorAt(position: BudgetStart): string {
    const payload = Buffer.from(
      JSON.stringify(
        position.upstream === undefined
          ? { o: position.offset }
          : { o: position.offset, u: position.upstream },
      ),
    ).toString('base64url')
    return `${PREFIX}${payload}.${checkOf(this.tool, this.scope, payload)}`
  }

  private decode(cursor: string | undefined): BudgetStart {
    if (cursor === undefined || cursor === '') return { upstream: undefined, offset: 0 }
    if (!cursor.startsWith(PREFIX)) {
      if (this.upstream) return { upstream: cursor, offset: 0 }
      throw this.refuse('is not a cursor of this tool')
    }
    const [payload = '', check = '', ...extra] = cursor.slice(PREFIX.length).split('.')
    if (extra.length || check !== checkOf(this.tool, this.scope, payload))
      throw this.refuse('was altered, or belongs to another tool or other arguments')
    let position: { o?: unknown; u?: unknown }
    try {
      position = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as typeof position
    } catch {
      throw this.refuse('is malformed')
    }
    if (
      !Number.isSafeInteger(position.o) ||
      (position.o as number) < 0 ||
      (position.u !== undefined && typeof position.u !== 'string')
    )
      throw this.refuse('is malformed')
    return { upstream: position.u as string | undefined, offset: position.o as number }
  }

  private refuse(why: string): ToolError {
    return new ToolError('invalid_argument', `The cursor ${why}`, {
      hint: `Pass the cursor a cut ${this.tool} answer gave, unchanged, with the same other arguments.`,
    })
  }

  /**
   * Cuts a page of items at the budget. `items` is the whole page the call read for
   * `start.upstream`; the answer starts at `start.offset` and shows as many as fit (at least one,
   * so an answer always moves on). `render` turns an item into its line of the text; `reserve`
   * is the tokens the rest of the answer (headers, notices) takes; `noun` names the items in
   * the marker line (`entries`, `rows`).
   */
  items<T>(
    items: readonly T[],
    render: (item: T, index: number) => string,
    options: { reserve?: number; noun?: string } = {},
  ): ItemsCut<T> {
    const from = Math.min(this.start.offset, items.length)
    const room = this.tokens - (options.reserve ?? 0)
    const lines: string[] = []
    const costs: number[] = []
    let used = 0
    for (let index = from; index < items.length; index++) {
      const line = render(items[index] as T, index)
      // One token for the line break.
      const cost = estimateTokens(line) + 1
      if (lines.length && used + cost > room) break
      lines.push(line)
      costs.push(cost)
      used += cost
    }
    if (from + lines.length >= items.length)
      return { shown: items.slice(from), lines, text: lines.join('\n'), marker: '' }
    const noun = options.noun ?? 'items'
    const total = items.length - from
    // The marker line is part of the answer: make room for it (keeping at least one item).
    const markerCost = markerTokens(this.cutAfter({ shown: lines.length, total, noun }).marker)
    while (lines.length > 1 && used + markerCost > room) {
      lines.pop()
      used -= costs.pop() as number
    }
    return {
      shown: items.slice(from, from + lines.length),
      lines,
      text: lines.join('\n'),
      ...this.cutAfter({ shown: lines.length, total, noun }),
    }
  }

  /**
   * The report of a cut a tool made itself (rows it rendered, a page it sized): `shown` of `total`
   * items from `start.offset`; the cursor continues at `start.offset + shown`, with `upstream`
   * (default: this answer's) as the tool's own position to carry.
   */
  cutAfter(options: { shown: number; total: number; noun: string; upstream?: string }): {
    cut: BudgetCut
    marker: string
  } {
    const upstream = 'upstream' in options ? options.upstream : this.start.upstream
    const cursor = this.cursorAt({ upstream, offset: this.start.offset + options.shown })
    return {
      cut: { cut: true, cursor, shown: options.shown, total: options.total },
      marker: `[cut at ${this.tokens} tokens: ${options.shown} of ${options.total} ${options.noun} shown; continue with cursor "${cursor}"]`,
    }
  }

  /**
   * Cuts a text at the budget, from `start.offset` (characters). Cuts at a line break in the last
   * half of what fits when there is one, never inside a character; shows at least one character.
   */
  text(text: string, options: { reserve?: number } = {}): TextCut {
    const from = Math.min(this.start.offset, text.length)
    const room = Math.max(1, this.tokens - (options.reserve ?? 0))
    let end = fitText(text, from, room)
    if (end >= text.length) return { text: text.slice(from), marker: '' }
    // The marker line is part of the answer: make room for it.
    const total = text.length - from
    const markerCost = markerTokens(this.cutAfter({ shown: end - from, total, noun: 'characters' }).marker)
    end = fitText(text, from, Math.max(1, room - markerCost))
    const lastBreak = text.lastIndexOf('\n', end - 1)
    if (lastBreak >= from && lastBreak + 1 > from + (end - from) / 2) end = lastBreak + 1
    return {
      text: text.slice(from, end),
      ...this.cutAfter({ shown: end - from, total, noun: 'characters' }),
    }
  }
}

/** Where a text from `from` stops within `room` tokens: never inside a character, at least one. */
function fitText(text: string, from: number, room: number): number {
  let ascii = 0
  let other = 0
  let end = from
  while (end < text.length) {
    const code = text.charCodeAt(end)
    const pair = code >= 0xd800 && code < 0xdc00 && end + 1 < text.length
    const nextAscii = code < 0x80 ? ascii + 1 : ascii
    const nextOther = code < 0x80 ? other : other + 1
    if (end > from && Math.ceil(nextAscii / 4) + nextOther > room) break
    ascii = nextAscii
    other = nextOther
    end += pair ? 2 : 1
  }
  return end
}

/**
 * What a marker line costs: its estimate, its line break, and one token of slack for the digits
 * of a final count that may differ from the first one measured.
 */
function markerTokens(marker: string): number {
  return estimateTokens(marker) + 2
}

/** What {@link Budget.items} gives. */
export interface ItemsCut<T> {
  /** The items shown. */
  shown: T[]
  /** Their rendered lines. */
  lines: string[]
  /** The lines joined with line breaks. */
  text: string
  /** Set when the page was cut: put it in `structuredContent.budget`. */
  cut?: BudgetCut
  /** The line that says so (empty when nothing was cut): append it to the text. */
  marker: string
}

/** What {@link Budget.text} gives. */
export interface TextCut {
  text: string
  cut?: BudgetCut
  marker: string
}

/**
 * The budget of one call of `tool`, from its parsed arguments: `max_tokens` (see
 * {@link maxTokensArgument}; the cap when the tool takes none) and the cursor. A budget cursor
 * must come from this tool and the same other arguments; a tampered or foreign one is refused
 * with an `invalid_argument` tool error.
 */
export function openBudget(
  tool: string,
  args: Record<string, unknown>,
  options: OpenBudgetOptions = {},
): Budget {
  const cursorKey = options.cursorKey ?? 'cursor'
  const cursor = args[cursorKey]
  const requested = args.max_tokens
  // Most calls make no cursor and check none: their arguments are not serialized. Tools do not
  // change their arguments, so the text is the same whenever it is made.
  return new Budget(
    tool,
    boundTokens(typeof requested === 'number' ? requested : undefined),
    () => scopeOf(args, cursorKey),
    typeof cursor === 'string' ? cursor : undefined,
    options.upstream === true,
  )
}

/**
 * The text with the cut's marker appended after one line break (nothing when it was not cut). The
 * break is always added, so the text shown is exactly what precedes the final `\n[cut at …]`.
 */
export function withMarker(text: string, marker: string): string {
  return marker ? `${text}\n${marker}` : text
}
