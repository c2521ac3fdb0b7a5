/**
 * Text written by GitHub users reaches the model. Hidden characters and invisible HTML are a
 * known prompt-injection channel: a reviewer sees nothing, the model reads an instruction. What
 * the rendered page does not show is removed before the model sees it.
 */

// Unicode tag characters (U+E0000–U+E007F), bidi embeddings/overrides/isolates and marks,
// zero-width characters, word joiner and invisible operators, BOM, Mongolian vowel separator,
// soft hyphen.
const HIDDEN_CHARACTERS =
  /[\u{E0000}-\u{E007F}\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C\u200B-\u200D\u2060-\u2064\uFEFF\u180E\u00AD]/gu

const HTML_COMMENT = /<!--[\s\S]*?(?:-->|$)/g
const INVISIBLE_ELEMENTS = /<(script|style|template|noscript)\b[^<>]*>[\s\S]*?(?:<\/\1\s*>|$)/gi
// An element that hides itself: `hidden`, `display:none`, `visibility:hidden`, zero size or opacity.
// Tag bodies are `[^<>]*`, not `[^>]*`: a text full of unclosed `<a` must not make each match scan
// to the end (quadratic time on a 64 KiB issue body).
const HIDDEN_ELEMENT =
  /<([a-z][a-z0-9]*)\b(?=[^<>]*(?:\shidden\b|display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d]*[1-9])|opacity\s*:\s*0(?![.\d]*[1-9])))[^<>]*>[\s\S]*?(?:<\/\1\s*>|$)/gi
// Markdown "comments": link reference definitions nobody links to render as nothing.
const MARKDOWN_COMMENT =
  /^[ \t]{0,3}\[[^\]\n]*\]:[ \t]*(?:#|<>)[ \t]*(?:\([^\n]*\)|"[^\n]*"|'[^\n]*')?[ \t]*$/gm

/** Removes hidden Unicode characters and content that renders invisibly on GitHub. */
export function sanitize(text: string): string {
  let out = text.normalize('NFC').replace(HIDDEN_CHARACTERS, '')
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

/** `sanitize` for optional fields. */
export function clean(text: string | null | undefined): string {
  return text ? sanitize(text) : ''
}
