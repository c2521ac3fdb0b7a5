/**
 * Secret redaction shared by the logger and the error mapper.
 *
 * Two layers: patterns that look like credentials wherever they appear (URL userinfo,
 * `Authorization` values, `password=` pairs, well-known token shapes), and exact values the
 * server registered as secret at start-up (tokens from env or argv, connection strings).
 */

const REDACTED = '[redacted]'

const PATTERNS: Array<[RegExp, string]> = [
  // scheme://user:password@host → scheme://user:[redacted]@host (also with an empty user). The
  // scheme starts where no scheme character precedes it: without that lookbehind every position
  // of a long letter run restarts the scheme match, quadratic in the length (a 1 MiB path in a
  // tool error took hours).
  [/(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*:\/\/)([^/\s:@]*):([^@\s/]+)@/gi, `$1$2:${REDACTED}@`],
  // Authorization: Bearer xyz / Basic xyz
  [/\b(authorization\s*[:=]\s*"?)(bearer|basic|token)\s+[^\s",]+/gi, `$1$2 ${REDACTED}`],
  [/\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`],
  // key=value and "key": "value" forms for secret-looking keys
  [
    /\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)(\s*[=:]\s*"?)([^\s"&,;]+)/gi,
    `$1$2${REDACTED}`,
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

/** Redacts credentials from text; holds exact secret values registered at runtime. */
export class Redactor {
  readonly #secrets = new Set<string>()

  /** Registers an exact value (a token, a password) that must never appear in output. */
  addSecret(value: string | undefined | null): void {
    // Very short values would redact ordinary words; such secrets are still caught by the patterns.
    if (value && value.length >= 6) {
      this.#secrets.add(value)
      try {
        const encoded = encodeURIComponent(value)
        if (encoded !== value) this.#secrets.add(encoded)
      } catch {
        // lone surrogates cannot be encoded; the raw value is registered already
      }
    }
  }

  /** Returns `text` with every registered secret and credential-looking pattern replaced. */
  redact(text: string): string {
    let out = text
    for (const secret of this.#secrets) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED)
    }
    for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement)
    return out
  }

  /** Deeply redacts strings inside a JSON-like value (for structured log fields). */
  redactValue(value: unknown, depth = 0): unknown {
    if (typeof value === 'string') return this.redact(value)
    if (depth > 6 || value === null || typeof value !== 'object') return value
    if (Array.isArray(value)) return value.map((item) => this.redactValue(item, depth + 1))
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) {
      out[key] = /^(password|passwd|secret|token|authorization|api[_-]?key|cookie)$/i.test(key)
        ? REDACTED
        : this.redactValue(item, depth + 1)
    }
    return out
  }
}

/** The process-wide redactor: the logger and error mapper both use it. */
export const redactor = new Redactor()
