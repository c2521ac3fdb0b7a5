/**
 * Markup that shows less on the page than it says in the source: collapsed `<details>` bodies,
 * attribute text, link and image titles, and images that load from outside GitHub. Runs after
 * `sanitize` removed invisible characters and never-rendered elements. Every pattern here is
 * linear in the text: no unbounded repetition that can restart at every position of a long run.
 */

/** What replaces an image that would load from outside GitHub. */
export const OUTSIDE_IMAGE = '[image from outside GitHub removed]'

const ownImageHosts = new Set<string>()

/**
 * Adds a host whose images are GitHub's own (the configured GitHub Enterprise host). github.com,
 * its subdomains and githubusercontent.com (uploads, avatars, the camo image proxy, raw files) are
 * always GitHub's.
 */
export function trustImageHost(host: string): void {
  if (ownImageHosts.size < 64) ownImageHosts.add(host.toLowerCase())
}

/** Whether an image URL loads from GitHub itself (a relative path does). */
export function isOwnImage(url: string): boolean {
  let parsed: URL
  try {
    parsed = new URL(url.trim(), 'https://relative.invalid/')
  } catch {
    return false
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return false
  const host = parsed.hostname.toLowerCase()
  return (
    host === 'relative.invalid' ||
    host === 'github.com' ||
    host.endsWith('.github.com') ||
    host.endsWith('.githubusercontent.com') ||
    ownImageHosts.has(parsed.host.toLowerCase())
  )
}

const image = (url: string) => (isOwnImage(url) ? `![image](${url})` : OUTSIDE_IMAGE)

const TITLE = String.raw`(?:"[^"\n]*"|'[^'\n]*'|\([^()\n]*\))`
const DESTINATION = String.raw`(?:<[^<>\n]*>|[^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*)`
// Alt text may span lines, but not a blank line (that ends the paragraph, and the image).
const ALT = String.raw`((?:[^\[\]\n]|\n(?![ \t]*\n)|\[[^\[\]]*\])*)`
const INLINE_IMAGE = new RegExp(String.raw`!\[${ALT}\]\(\s*(${DESTINATION})(?:\s+${TITLE})?\s*\)`, 'g')
const REFERENCE_IMAGE = new RegExp(String.raw`!\[${ALT}\](?:\[([^\[\]\n]*)\]|(?!\())`, 'g')
const DEFINITION = /^[ ]{0,3}\[([^\]\n]+)\]:[ \t]*(<[^<>\n]*>|\S+)/gm
const DEFINITION_TITLE = new RegExp(
  String.raw`^([ ]{0,3}\[[^\]\n]+\]:[ \t]*(?:<[^<>\n]*>|\S+))[ \t]*\n?[ \t]+${TITLE}[ \t]*$`,
  'gm',
)
const LINK_TITLE = new RegExp(String.raw`(\]\(\s*${DESTINATION})\s+${TITLE}\s*\)`, 'g')

const label = (text: string) => text.trim().replace(/\s+/g, ' ').toLowerCase()
const unbracket = (url: string) => (url.startsWith('<') ? url.slice(1, -1) : url)

/** Markdown images lose their alt text and title; outside images become a marker. */
function rewriteMarkdownImages(text: string): string {
  if (!text.includes('![')) return text
  const definitions = new Map<string, string>()
  for (const match of text.matchAll(DEFINITION)) {
    const key = label(match[1] ?? '')
    if (!definitions.has(key)) definitions.set(key, unbracket(match[2] ?? ''))
  }
  return text
    .replace(REFERENCE_IMAGE, (whole, alt: string, reference: string | undefined) => {
      const url = definitions.get(label(reference || alt))
      // Without a definition it is not an image: GitHub shows the brackets as text.
      return url === undefined ? whole : image(url)
    })
    .replace(INLINE_IMAGE, (_whole, _alt: string, url: string) => image(unbracket(url)))
}

// A tag as CommonMark reads raw HTML: a name, then attributes of valid names with optional
// values. Anything else (`i <n; i++`, `a < b and "c" > d`) is text GitHub shows as written.
const ATTRIBUTES = String.raw`((?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:[^\s"'=<>\x60]+|'[^']*'|"[^"]*"))?)*\s*\/?)`
const TAG = new RegExp(
  String.raw`<(?:(\/)([A-Za-z][A-Za-z0-9-]*)\s*|([A-Za-z][A-Za-z0-9-]*)${ATTRIBUTES})>`,
  'g',
)
const ATTRIBUTE = /([^\s"'<>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'<>`]+)))?/g
const LAYOUT = new Set(['width', 'height', 'align', 'colspan', 'rowspan', 'start'])

/**
 * HTML tags keep only what shows or works on the page: `href` on links, `src` of GitHub-hosted
 * media, `open` on details, short layout values. Everything else (`alt`, `title`, `data-*`,
 * `value`, `style`, `srcset`, `poster`, …) is text a reader does not see, and goes. A tag that
 * would load from outside GitHub becomes a marker.
 */
function rewriteTags(text: string): string {
  if (!text.includes('<')) return text
  return text.replace(TAG, (_whole, closing: string, closed: string, opened: string, attributes: string) => {
    if (closing) return `</${closed}>`
    const name = opened.toLowerCase()
    const kept: string[] = []
    for (const match of attributes.matchAll(ATTRIBUTE)) {
      const key = (match[1] ?? '').toLowerCase()
      const value = match[2] ?? match[3] ?? match[4]
      if (key === 'src') {
        if (value === undefined || !isOwnImage(value)) return OUTSIDE_IMAGE
        kept.push(`src="${value.replace(/"/g, '&quot;')}"`)
      } else if (key === 'href' && name === 'a' && value !== undefined) {
        kept.push(`href="${value.replace(/"/g, '&quot;')}"`)
      } else if (key === 'open' && name === 'details') {
        kept.push('open')
      } else if (LAYOUT.has(key) && value !== undefined && /^[\w%.-]{1,12}$/.test(value)) {
        kept.push(`${key}="${value}"`)
      }
    }
    const selfClosing = /\/\s*$/.test(attributes) ? ' /' : ''
    return `<${opened}${kept.length ? ` ${kept.join(' ')}` : ''}${selfClosing}>`
  })
}

const DETAILS_TAG = new RegExp(String.raw`<(\/?)(details|summary)(?:\s*|${ATTRIBUTES})>`, 'gi')

interface Open {
  kind: string
  /** Whether what follows this tag is hidden on the page. */
  hidden: boolean
  summarised: boolean
}

/**
 * A `<details>` without `open` shows only its first `<summary>` until a reader expands it: the
 * rest of its body is withheld, with a marker saying how much. Nesting is followed with a stack,
 * in one pass.
 */
export function collapseDetails(text: string): string {
  if (!/<details\b/i.test(text)) return text
  const stack: Open[] = []
  const hidden = () => stack.at(-1)?.hidden ?? false
  let out = ''
  let withheld = ''
  const show = (part: string) => {
    const count = withheld.trim().length
    if (count) out += `[collapsed on GitHub, withheld: ${count} characters]`
    withheld = ''
    out += part
  }
  let last = 0
  let depth = 0
  for (const match of text.matchAll(DETAILS_TAG)) {
    const segment = text.slice(last, match.index)
    if (hidden()) withheld += segment
    else show(segment)
    last = match.index + match[0].length
    const before = hidden()
    const kind = (match[2] ?? '').toLowerCase()
    if (!match[1]) {
      const parent = stack.at(-1)
      if (kind === 'details') {
        depth++
        stack.push({ kind, hidden: before || !/(^|\s)open\b/i.test(match[3] ?? ''), summarised: false })
      } else if (parent?.kind === 'details' && !parent.summarised) {
        // The first summary shows even when its details is closed.
        parent.summarised = true
        stack.push({ kind, hidden: stack.at(-2)?.hidden ?? false, summarised: false })
      } else {
        stack.push({ kind, hidden: before, summarised: false })
      }
    } else if (kind === 'summary') {
      if (stack.at(-1)?.kind === 'summary') stack.pop()
    } else if (depth > 0) {
      // Closes the innermost details and whatever it left open: each entry is popped once.
      while (stack.pop()?.kind !== 'details') {}
      depth--
    }
    if (before && hidden()) withheld += match[0]
    else show(match[0])
  }
  const rest = text.slice(last)
  if (hidden()) {
    withheld += rest
    show('')
  } else show(rest)
  return out
}

/** Everything above, in the order that lets each step see what the previous one left. */
export function rewriteMarkup(text: string): string {
  const collapsed = collapseDetails(text)
  const images = rewriteMarkdownImages(collapsed)
  const titles =
    images.includes('](') || images.includes(']:')
      ? images.replace(DEFINITION_TITLE, '$1').replace(LINK_TITLE, '$1)')
      : images
  return rewriteTags(titles)
}
