/**
 * Finds long fragments of registered secrets in text: an API error quoting 30 of a token's 41
 * characters must not reach a log line. Every run of {@link FRAGMENT} or more consecutive
 * characters of a secret is found, in time linear in the text, whatever the number of secrets.
 *
 * How: every {@link GRAM}-character substring of each secret is indexed. Any run of
 * `GRAM + STRIDE - 1` characters holds a whole gram starting at a multiple of {@link STRIDE}, so
 * the text is probed only every STRIDE positions; a probe that hits is extended both ways along
 * the secret to the whole run, and the scan skips past it.
 */

/** The shortest run of a secret's characters that is redacted wherever it appears. */
export const FRAGMENT = 10
const GRAM = 6
const STRIDE = 4
/** Places one gram is remembered at per secret (a repetitive secret would otherwise list hundreds). */
const OFFSETS_PER_GRAM = 8

export class FragmentIndex {
  readonly #secrets: string[] = []
  readonly #grams = new Map<string, Array<{ secret: number; offset: number }>>()

  get size(): number {
    return this.#secrets.length
  }

  /** Indexes `secret` (at least {@link FRAGMENT} characters; shorter values are ignored). */
  add(secret: string): void {
    if (secret.length < FRAGMENT || this.#secrets.includes(secret)) return
    const index = this.#secrets.push(secret) - 1
    for (let offset = 0; offset + GRAM <= secret.length; offset++) {
      const gram = secret.slice(offset, offset + GRAM)
      const places = this.#grams.get(gram) ?? []
      if (places.filter((place) => place.secret === index).length >= OFFSETS_PER_GRAM) continue
      places.push({ secret: index, offset })
      this.#grams.set(gram, places)
    }
  }

  /** Spans `[start, end)` of `text` that are runs of at least FRAGMENT characters of a secret, merged. */
  find(text: string): Array<[number, number]> {
    const spans: Array<[number, number]> = []
    if (!this.#secrets.length || text.length < FRAGMENT) return spans
    let covered = 0
    for (let probe = 0; probe + GRAM <= text.length; probe += STRIDE) {
      if (probe + GRAM <= covered) continue
      const places = this.#grams.get(text.slice(probe, probe + GRAM))
      if (!places) continue
      let best: [number, number] | undefined
      for (const place of places) {
        const span = this.#extend(text, probe, place.secret, place.offset)
        if (span[1] - span[0] >= FRAGMENT && (!best || span[1] - span[0] > best[1] - best[0])) best = span
      }
      if (!best) continue
      spans.push(best)
      covered = Math.max(covered, best[1])
    }
    // A run found later may reach back over an earlier one: sort, then merge what overlaps.
    spans.sort((a, b) => a[0] - b[0])
    const merged: Array<[number, number]> = []
    for (const span of spans) {
      const previous = merged.at(-1)
      if (previous && span[0] <= previous[1]) previous[1] = Math.max(previous[1], span[1])
      else merged.push(span)
    }
    return merged
  }

  /** The whole run of `secret` around a gram that matched at `probe`. */
  #extend(text: string, probe: number, index: number, offset: number): [number, number] {
    const secret = this.#secrets[index] as string
    let start = probe
    let from = offset
    while (start > 0 && from > 0 && text.charCodeAt(start - 1) === secret.charCodeAt(from - 1)) {
      start--
      from--
    }
    let end = probe + GRAM
    let to = offset + GRAM
    while (end < text.length && to < secret.length && text.charCodeAt(end) === secret.charCodeAt(to)) {
      end++
      to++
    }
    return [start, end]
  }
}
