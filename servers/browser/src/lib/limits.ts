import type { Tab } from './tab.js'

/**
 * Elements a page may have for the server to read its whole accessibility tree (snapshot) or print
 * it (save_pdf). Chromium builds the tree, or lays out the print, in the page's renderer, where it
 * cannot be interrupted: on this project's machine 20,000 buttons take 3.5 s to fetch as a tree,
 * 200,000 take 31 s, and a PDF of 200,000 does not finish in 120 s. A page over the cap is refused
 * before that work starts, with a hint, instead of holding its tab for minutes.
 */
export const SNAPSHOT_MAX_ELEMENTS = 60_000
export const PDF_MAX_ELEMENTS = 60_000
/**
 * Nesting depth of a page a snapshot reads. Chromium's HTML parser stops nesting at 512; a script
 * can nest deeper, and a renderer asked for the accessibility tree of 10,000 levels crashes.
 */
export const SNAPSHOT_MAX_DEPTH = 512

/** A page too large for the whole-page work a call asked for. */
export class PageTooLargeError extends Error {
  override name = 'PageTooLargeError'
  constructor(
    message: string,
    readonly hint: string,
  ) {
    super(message)
  }
}

/**
 * Texts are counted on documents of at most this many elements (where the count can change how a
 * snapshot reads the page); a larger one is read in parts whatever its texts.
 */
export const TEXTS_MAX_ELEMENTS = 30_000

/** The size of a document, as {@link pageSize} counts it. */
export interface PageSize {
  elements: number
  depth: number
  /** Text nodes with more than white space, when asked for (0 past {@link TEXTS_MAX_ELEMENTS} elements). */
  texts: number
}

/**
 * How many elements the tab's document has (shadow roots not counted) and, when that is within
 * `maxElements`, how deeply they nest and how many texts they hold: one call into the page,
 * `getElementsByTagName('*')` being a count the engine keeps and the rest an iterative walk (no
 * recursion a deep page could exhaust).
 */
export async function pageSize(tab: Tab, maxElements: number, countTexts = false): Promise<PageSize> {
  const { result } = (await tab.cdp.send('Runtime.evaluate', {
    expression: `(() => {
      const elements = document.getElementsByTagName('*').length
      if (elements > ${maxElements} || !document.documentElement) return { elements, depth: 0, texts: 0 }
      let depth = 0, level = 1, texts = 0, node = document.documentElement
      const countTexts = ${countTexts} && elements <= ${TEXTS_MAX_ELEMENTS}
      while (node) {
        if (level > depth) depth = level
        if (countTexts && node.childElementCount !== node.childNodes.length)
          for (const child of node.childNodes) if (child.nodeType === 3 && child.data.trim()) texts++
        if (node.firstElementChild) { node = node.firstElementChild; level++; continue }
        while (node && !node.nextElementSibling) { node = node.parentElement; level-- }
        if (node) node = node.nextElementSibling
      }
      return { elements, depth, texts }
    })()`,
    returnByValue: true,
  })) as { result: { value?: { elements?: unknown; depth?: unknown; texts?: unknown } } }
  const value = result.value ?? {}
  const count = (field: unknown) => (typeof field === 'number' ? field : 0)
  return { elements: count(value.elements), depth: count(value.depth), texts: count(value.texts) }
}

/**
 * Refuses a whole-page read of a page over `max` elements (or, for a snapshot, nested too deeply);
 * returns the page's size otherwise.
 */
export async function assertPageSize(
  tab: Tab,
  max: number,
  what: 'snapshot' | 'PDF',
  options: { texts?: boolean } = {},
): Promise<PageSize> {
  const size = await pageSize(tab, max, options.texts === true)
  const { elements, depth } = size
  const hint =
    what === 'snapshot'
      ? 'take_screenshot shows it; or navigate to a smaller page.'
      : 'Take a screenshot instead, or print a smaller page.'
  if (elements > max)
    throw new PageTooLargeError(`The page has ${elements} elements, over the ${max} a ${what} reads`, hint)
  if (what === 'snapshot' && depth > SNAPSHOT_MAX_DEPTH)
    throw new PageTooLargeError(
      `The page nests ${depth} levels deep, over the ${SNAPSHOT_MAX_DEPTH} a snapshot reads`,
      hint,
    )
  return size
}
