/**
 * Where a credential can hide in output: as given, URL-encoded, JSON-escaped, base64 (standard
 * and URL-safe, at each of the three byte alignments it can have inside a longer encoded value,
 * e.g. `Basic base64(user:token)`), and any 12-character run of it (a partial echo).
 */

/** The forms of one secret to look for; `windows` only for secrets that are not URLs. */
export function secretForms(secret: string): string[] {
  const forms = new Set<string>([secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)])
  for (let pad = 0; pad < 3; pad++) {
    const encoded = Buffer.from(`${'\0'.repeat(pad)}${secret}`).toString('base64')
    // Drop the characters that depend on the neighbouring bytes: the first group when padded, the
    // last group always.
    const stable = encoded.slice(pad === 0 ? 0 : 4, -4)
    if (stable.length >= 8) {
      forms.add(stable)
      forms.add(stable.replaceAll('+', '-').replaceAll('/', '_'))
    }
  }
  if (!secret.includes('://')) {
    for (let start = 0; start + 12 <= secret.length; start++) forms.add(secret.slice(start, start + 12))
  }
  return [...forms]
}

/** Every (secret, form) found in `text`, described without repeating the secret itself. */
export function findLeaks(text: string, secrets: readonly string[]): string[] {
  const found: string[] = []
  secrets.forEach((secret, index) => {
    for (const form of secretForms(secret)) {
      const at = text.indexOf(form)
      if (at === -1) continue
      const context = text.slice(Math.max(0, at - 80), at).replace(/\s+/g, ' ')
      found.push(`secret #${index} (${secret.slice(0, 4)}…, form of ${form.length} chars) after: …${context}`)
      break
    }
  })
  return found
}
