import v8 from 'node:v8'
import { FsError } from './errors.js'

/**
 * Globs compiled for V8's linear-time regular expression engine: matching takes time linear in the
 * name whatever the pattern, so `*a*a*a*a*a*a*a*a*a*a*a*a*b` against a long name cannot block the
 * event loop (a backtracking glob matcher takes exponential time on it). The dialect is the common
 * one: `*` and `?` within a segment, `**` across segments, `[abc]`/`[!a-z]` classes, `{a,b}`
 * alternatives, the extglobs `@(a|b)`, `?(…)`, `+(…)`, `*(…)`, and `\` escapes. Dotfiles match like
 * other names. `!(…)` needs a lookahead, which no linear engine has: it is refused with a clear
 * message.
 */

let linearEngineEnabled = false
/** A variable, not a literal: a `/…/l` literal is a syntax error where the engine flag is off. */
const linearFlag = 'l'

/** Turns on V8's linear-time engine (the `l` flag). Process-wide and idempotent. */
export function enableLinearRegexEngine(): boolean {
  if (!linearEngineEnabled) {
    linearEngineEnabled = true
    try {
      v8.setFlagsFromString('--enable-experimental-regexp-engine')
    } catch {
      // An unknown flag on a future V8: linearRegex reports the engine as missing.
    }
  }
  try {
    new RegExp('a', linearFlag)
    return true
  } catch {
    return false
  }
}

/** Compiles `source` for the linear engine; undefined when the pattern needs backtracking (lookarounds, backreferences). */
export function linearRegex(source: string, flags = ''): RegExp | undefined {
  enableLinearRegexEngine()
  try {
    return new RegExp(source, `${flags}${linearFlag}`)
  } catch {
    return undefined
  }
}

const special = /[.+^${}()|[\]\\/]/

function escapeChar(char: string): string {
  return special.test(char) || char === '*' || char === '?' ? `\\${char}` : char
}

/** Index of the `)`/`}` closing the group opened at `open`, honouring nesting and escapes; -1 if none. */
function closing(glob: string, open: number, opener: string, closer: string): number {
  let depth = 0
  for (let index = open; index < glob.length; index++) {
    const char = glob[index]
    if (char === '\\') {
      index++
      continue
    }
    if (char === opener) depth++
    else if (char === closer && --depth === 0) return index
  }
  return -1
}

/** Splits at top-level `separator`s (not inside brackets, braces or parentheses). */
function splitTop(text: string, separator: string): string[] {
  const parts: string[] = []
  let depth = 0
  let start = 0
  for (let index = 0; index < text.length; index++) {
    const char = text[index]
    if (char === '\\') {
      index++
      continue
    }
    if (char === '{' || char === '(' || char === '[') depth++
    else if (char === '}' || char === ')' || char === ']') depth--
    else if (char === separator && depth === 0) {
      parts.push(text.slice(start, index))
      start = index + 1
    }
  }
  parts.push(text.slice(start))
  return parts
}

function translate(glob: string, depth: number): string {
  if (depth > 20) throw new FsError('invalid_argument', 'Glob pattern nests too deeply.')
  let out = ''
  for (let index = 0; index < glob.length; index++) {
    const char = glob[index] as string
    const atSegmentStart = index === 0 || glob[index - 1] === '/'
    if (char === '\\') {
      const next = glob[index + 1]
      if (next !== undefined) out += escapeChar(next)
      index++
      continue
    }
    if ('@?+*!'.includes(char) && glob[index + 1] === '(') {
      const end = closing(glob, index + 1, '(', ')')
      if (end !== -1) {
        if (char === '!') {
          throw new FsError('invalid_argument', `Negated extglobs like !(…) are not supported: ${glob}`, {
            hint: 'Use exclude for names to leave out.',
          })
        }
        const inner = splitTop(glob.slice(index + 2, end), '|')
          .map((part) => translate(part, depth + 1))
          .join('|')
        out += `(?:${inner})${char === '@' ? '' : char}`
        index = end
        continue
      }
    }
    if (char === '*') {
      if (glob[index + 1] === '*') {
        let end = index + 2
        while (glob[end] === '*') end++
        const atSegmentEnd = end === glob.length || glob[end] === '/'
        if (atSegmentStart && atSegmentEnd) {
          if (end === glob.length) {
            // `a/**`: a itself and everything below; a whole-pattern `**`: everything.
            out = index === 0 ? `${out}.*` : `${out.replace(/\\\/$/, '')}(?:/.*)?`
          } else {
            // `**/`: zero or more whole segments.
            out += '(?:[^/]*/)*'
            end++
          }
          index = end - 1
          continue
        }
        index = end - 1
      }
      out += '[^/]*'
      continue
    }
    if (char === '?') {
      out += '[^/]'
      continue
    }
    if (char === '[') {
      const end = glob.indexOf(']', index + 2)
      if (end !== -1) {
        let body = glob.slice(index + 1, end)
        const negated = body.startsWith('!') || body.startsWith('^')
        if (negated) body = body.slice(1)
        body = body.replace(/\\/g, '\\\\').replace(/\]/g, '\\]').replace(/\[/g, '\\[')
        out += negated ? `[^/${body}]` : `[${body}]`
        index = end
        continue
      }
    }
    if (char === '{') {
      const end = closing(glob, index, '{', '}')
      const options = end === -1 ? [] : splitTop(glob.slice(index + 1, end), ',')
      if (end !== -1 && options.length > 1) {
        out += `(?:${options.map((part) => translate(part, depth + 1)).join('|')})`
        index = end
        continue
      }
    }
    out += escapeChar(char)
  }
  return out
}

/** A compiled glob: a full-match test of a path (or a name) in linear time. */
export function compileGlob(
  glob: string,
  options: { caseSensitive?: boolean } = {},
): (candidate: string) => boolean {
  const nocase = options.caseSensitive === false
  const source = translate(nocase ? glob.toLowerCase() : glob, 0)
  const expression = linearRegex(`^(?:${source})$`)
  if (!expression) {
    throw new FsError('invalid_argument', `This glob cannot be matched in linear time: ${glob}`)
  }
  return nocase
    ? (candidate) => expression.test(candidate.toLowerCase())
    : (candidate) => expression.test(candidate)
}

/** Several globs; matches when any does. */
export function compileGlobs(
  globs: readonly string[],
  options: { caseSensitive?: boolean } = {},
): (candidate: string) => boolean {
  const matchers = globs.map((glob) => compileGlob(glob, options))
  return (candidate) => matchers.some((matcher) => matcher(candidate))
}

function bothCases(char: string): string {
  const lower = char.toLowerCase()
  const upper = char.toUpperCase()
  if (lower === upper || lower.length !== 1 || upper.length !== 1) return ''
  return lower === char ? upper : lower
}

/**
 * Rewrites a regular expression so it matches case-insensitively without the `i` flag, which V8's
 * linear engine cannot run: every letter outside escapes becomes a class of both cases (letter
 * ranges in classes gain their other-case range). Escapes (`\S`, `\w`, `\u00e9`, `\p{L}`), group
 * names and quantifier braces are left as they are.
 */
export function foldCase(source: string): string {
  let out = ''
  let inClass = false
  for (let index = 0; index < source.length; index++) {
    const char = source[index] as string
    if (char === '\\') {
      let end = index + 2
      const next = source[index + 1]
      if ((next === 'u' || next === 'p' || next === 'P') && source[index + 2] === '{') {
        end = source.indexOf('}', index) + 1 || source.length
      } else if (next === 'u') end = index + 6
      else if (next === 'x') end = index + 4
      else if (next === 'c') end = index + 3
      else if (next === 'k' && source[index + 2] === '<')
        end = source.indexOf('>', index) + 1 || source.length
      out += source.slice(index, end)
      index = end - 1
      continue
    }
    if (
      !inClass &&
      char === '(' &&
      source.startsWith('(?<', index) &&
      /[A-Za-z_$]/.test(source[index + 3] ?? '')
    ) {
      const end = source.indexOf('>', index) + 1 || source.length
      out += source.slice(index, end)
      index = end - 1
      continue
    }
    if (!inClass && char === '{' && /^\{\d+(,\d*)?\}/.test(source.slice(index))) {
      const end = source.indexOf('}', index) + 1
      out += source.slice(index, end)
      index = end - 1
      continue
    }
    if (char === '[' && !inClass) {
      inClass = true
      out += char
      continue
    }
    if (char === ']' && inClass) {
      inClass = false
      out += char
      continue
    }
    const other = bothCases(char)
    if (inClass) {
      if (
        other &&
        source[index + 1] === '-' &&
        source[index + 2] !== undefined &&
        source[index + 2] !== ']'
      ) {
        const end = source[index + 2] as string
        const otherEnd = bothCases(end)
        out += `${char}-${end}`
        if (otherEnd) out += `${other}-${otherEnd}`
        index += 2
        continue
      }
      out += other ? `${char}${other}` : char
      continue
    }
    out += other ? `[${char}${other}]` : char
  }
  return out
}
