/**
 * Text written by GitHub users reaches the model. Hidden characters and invisible markup are a
 * known prompt-injection channel: a reviewer sees nothing, the model reads an instruction. What
 * the rendered page does not show is removed (or, for collapsed sections and images, replaced by
 * a marker) before the model sees it. Each rule names a class, not an input (the last three apply
 * to rendered text only, {@link sanitizeRendered}):
 *
 * - characters that render as nothing: every format character (Unicode category Cf: bidi
 *   controls, zero-width characters, soft hyphen, tag characters, …) and every default-ignorable
 *   code point (variation selectors 1–256, Hangul fillers, combining grapheme joiner, …), except
 *   the joiner and presentation selector inside an emoji sequence;
 * - elements that are never rendered (comments, scripts, styles, templates, frames) or hide
 *   themselves (`hidden`, `display:none`, zero size or opacity);
 * - the body of a collapsed `<details>` (only its summary shows until a reader opens it);
 * - attribute text (`alt`, `title`, `data-*`, `value`, …) and link and image titles: tooltips and
 *   fallbacks nobody reads on the page;
 * - images that would load from outside GitHub (markdown and HTML): a tracking-pixel channel for
 *   anyone who renders the result.
 */
import { rewriteMarkup } from './markup.js'

const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu
// The joiner and emoji presentation selector inside an emoji sequence (👨‍👩‍👧, ❤️) are kept: they
// render as part of the emoji and carry no text.
const EMOJI_PART =
  /(?<=\p{Extended_Pictographic}\p{Emoji_Modifier}?)\uFE0F|(?<=\p{Extended_Pictographic}(?:\p{Emoji_Modifier}|\uFE0F)?)\u200D(?=\p{Extended_Pictographic})/uy

/** Removes every character that renders as nothing (see the module comment). */
export function stripInvisible(text: string): string {
  return text.replace(INVISIBLE, (char: string, offset: number, whole: string) => {
    if (char !== '\uFE0F' && char !== '\u200D') return ''
    EMOJI_PART.lastIndex = offset
    return EMOJI_PART.test(whole) ? char : ''
  })
}

const HTML_COMMENT = /<!--[\s\S]*?(?:-->|$)/g
const INVISIBLE_ELEMENTS =
  /<(script|style|template|noscript|iframe|object|embed|title|head)\b[^<>]*>[\s\S]*?(?:<\/\1\s*>|$)/gi
// An element that hides itself: `hidden`, `display:none`, `visibility:hidden`, zero size or opacity.
// Tag bodies are `[^<>]*`, not `[^>]*`: a text full of unclosed `<a` must not make each match scan
// to the end (quadratic time on a 64 KiB issue body).
const HIDDEN_ELEMENT =
  /<([a-z][a-z0-9]*)\b(?=[^<>]*(?:\shidden\b|display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d]*[1-9])|opacity\s*:\s*0(?![.\d]*[1-9])))[^<>]*>[\s\S]*?(?:<\/\1\s*>|$)/gi
// Markdown "comments": link reference definitions nobody links to render as nothing.
const MARKDOWN_COMMENT =
  /^[ \t]{0,3}\[[^\]\n]*\]:[ \t]*(?:#|<>)[ \t]*(?:\([^\n]*\)|"[^\n]*"|'[^\n]*')?[ \t]*$/gm

/**
 * Removes hidden characters and elements that never render. For any text: source files, patches
 * and logs too, where markup is content and is otherwise kept as written.
 */
export function sanitize(text: string): string {
  let out = stripInvisible(text.normalize('NFC'))
  // Repeat: removing one construct can join the pieces of another.
  for (let round = 0; round < 3; round++) {
    const next = out
      .replace(HTML_COMMENT, '')
      .replace(INVISIBLE_ELEMENTS, '')
      .replace(HIDDEN_ELEMENT, '')
      .replace(MARKDOWN_COMMENT, '')
    if (next === out) break
    out = next
  }
  return out
}

/**
 * {@link sanitize}, then what GitHub's Markdown rendering hides or loads (collapsed `<details>`
 * bodies, attribute text, titles, images from outside GitHub): for text GitHub renders, such as
 * issue, PR, comment, review and release bodies. Not for source, patches or logs, where it would
 * change the code the model reads and may write back.
 */
export function sanitizeRendered(text: string): string {
  return rewriteMarkup(sanitize(text))
}

/** `sanitize` for optional fields. */
export function clean(text: string | null | undefined): string {
  return text ? sanitize(text) : ''
}

/** `sanitizeRendered` for optional fields. */
export function cleanRendered(text: string | null | undefined): string {
  return text ? sanitizeRendered(text) : ''
}
