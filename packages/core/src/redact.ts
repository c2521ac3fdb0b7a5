/**
 * Secret redaction shared by the logger and the error mapper.
 *
 * Two layers: patterns that look like credentials wherever they appear (URL userinfo,
 * `Authorization` values, `password=` pairs, well-known token shapes), and the values the server
 * registered as secret at start-up (tokens from env or argv, passwords, connection strings):
 * each of those is redacted whole, and so is every run of {@link FRAGMENT} or more of its
 * characters (a token quoted in part by an upstream error).
 */
import { FRAGMENT, FragmentIndex } from './redact-fragments.js'

const REDACTED = '[redacted]'

// A secret-named key stands alone: at the start, after whitespace, a flag's dashes or a separator
// of fields (`?&;,{([` and quotes), never inside a path or a word (`/etc/passwd: …`, `max_tokens`).
// Prefixes are part of the key (`PGPASSWORD`, `db_password`, `x-api-key`).
const KEY_START = String.raw`(?<![^\s?&;,{(\["'])`
const KEY =
  '[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)'

const PATTERNS: Array<[RegExp, string]> = [
  // scheme://user:password@host → scheme://user:[redacted]@host (also with an empty user). The
  // scheme starts where no scheme character precedes it: without that lookbehind every position
  // of a long letter run restarts the scheme match, quadratic in the length (a 1 MiB path in a
  // tool error took hours).
  [/(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*:\/\/)([^/\s:@]*):([^@\s/]+)@/gi, `$1$2:${REDACTED}@`],
  // Authorization: Bearer xyz / Basic xyz
  [/\b(authorization\s*[:=]\s*"?)(bearer|basic|token)\s+[^\s",]+/gi, `$1$2 ${REDACTED}`],
  [/\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`],
  // key=value: an assignment is a real shape, whatever the value.
  [new RegExp(String.raw`${KEY_START}(-{0,2}${KEY})(\s*=\s*"?)([^\s"&,;]+)`, 'gi'), `$1$2${REDACTED}`],
  // key: value. A colon also ends ordinary phrases ("the token: expired"), so an unquoted value
  // counts only when it looks like a credential: a digit among 6+ characters, or 20+ characters.
  [
    new RegExp(
      String.raw`${KEY_START}(-{0,2}${KEY})(:\s*)(?:(["'])([^"'\n]+)\3|(?=[^\s"&,;]*\d)[^\s"&,;]{6,}|[^\s"&,;]{20,})`,
      'gi',
    ),
    `$1$2$3${REDACTED}$3`,
  ],
  [
    /("(?:password|passwd|secret|token|apiKey|api_key|accessToken|access_token|authToken|auth_token|clientSecret|client_secret|authorization)"\s*:\s*")([^"]*)(")/gi,
    `$1${REDACTED}$3`,
  ],
  // Well-known token formats (GitHub, Slack, OpenAI/Anthropic-style keys, AWS access keys)
  [/\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b/g, REDACTED],
  [/\bxox[abposr]-[A-Za-z0-9-]{10,}\b/g, REDACTED],
  [/\bsk-[A-Za-z0-9_-]{20,}\b/g, REDACTED],
  [/\bAKIA[0-9A-Z]{16}\b/g, REDACTED],
]

const URL_WITH_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i

/** How deep {@link Redactor.redactValue} walks a value; what is deeper is redacted as JSON text. */
const MAX_VALUE_DEPTH = 6

/** `value` as JSON text, or a mark where it has none (a cycle, a BigInt). */
function jsonText(value: object): string {
  try {
    return JSON.stringify(value) ?? ''
  } catch {
    return '[unserializable]'
  }
}

/** Keys whose values {@link Redactor.redactValue} redacts whole, whatever they hold. */
const SECRET_KEY = /^(password|passwd|secret|token|authorization|api[_-]?key|cookie)$/i

/** Redacts credentials from text; holds the secret values registered at runtime. */
export class Redactor {
  /** Values redacted only whole: short ones (fragments would match ordinary words) and URLs. */
  readonly #whole = new Set<string>()
  readonly #fragments = new FragmentIndex()
  #version = 0

  /** Changes whenever a secret is registered: what was redacted before may redact differently now. */
  get version(): number {
    return this.#version
  }

  /**
   * Registers a value (a token, a password) that must never appear in output, whole or as a run
   * of {@link FRAGMENT}+ of its characters. A URL is redacted whole and its password as a secret
   * of its own: a run of the URL's host or path is not secret.
   */
  addSecret(value: string | undefined | null): void {
    // Very short values would redact ordinary words; such secrets are still caught by the patterns.
    if (!value || value.length < 6) return
    this.#version += 1
    if (URL_WITH_SCHEME.test(value)) {
      this.#whole.add(value)
      const password = /^[a-z][a-z0-9+.-]*:\/\/[^/@\s:]*:([^@\s/]+)@/i.exec(value)?.[1]
      if (password) {
        this.addSecret(password)
        try {
          this.addSecret(decodeURIComponent(password))
        } catch {
          // not percent-encoded: registered as it is
        }
      }
      return
    }
    this.#register(value)
    try {
      const encoded = encodeURIComponent(value)
      if (encoded !== value) this.#register(encoded)
    } catch {
      // lone surrogates cannot be encoded; the raw value is registered already
    }
  }

  #register(value: string): void {
    if (value.length >= FRAGMENT) this.#fragments.add(value)
    else this.#whole.add(value)
  }

  /** Returns `text` with every registered secret (and its long fragments) and credential-looking pattern replaced. */
  redact(text: string): string {
    let out = text
    for (const secret of this.#whole) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED)
    }
    const spans = this.#fragments.find(out)
    if (spans.length) {
      let joined = ''
      let last = 0
      for (const [start, end] of spans) {
        joined += out.slice(last, start) + REDACTED
        last = end
      }
      out = joined + out.slice(last)
    }
    for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement)
    return out
  }

  /**
   * Deeply redacts strings inside a JSON-like value (for structured log fields). `text` redacts
   * each string (default {@link redact}): a caller may give one that remembers its answers.
   */
  redactValue(value: unknown, depth = 0, text: (text: string) => string = this.#redactText): unknown {
    if (typeof value === 'string') return text(value)
    if (value === null || typeof value !== 'object') return value
    // Past the depth walked, the rest is redacted as its JSON text, never passed on as it is.
    if (depth > MAX_VALUE_DEPTH) return text(jsonText(value))
    if (Array.isArray(value)) return value.map((item) => this.redactValue(item, depth + 1, text))
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value))
      out[key] = SECRET_KEY.test(key) ? REDACTED : this.redactValue(item, depth + 1, text)
    return out
  }

  readonly #redactText = (text: string): string => this.redact(text)
}

/** The process-wide redactor: the logger and error mapper both use it. */
export const redactor = new Redactor()
