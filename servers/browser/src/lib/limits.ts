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
/** Nesting depth a snapshot walks (Chromium's own parser stops nesting at 512). */
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
 * How many elements the tab's document has (shadow roots not counted), read in the page in one
 * cheap call: `getElementsByTagName('*')` is a live count the engine keeps, with no walk.
 */
export async function elementCount(tab: Tab): Promise<number> {
  const { result } = (await tab.cdp.send('Runtime.evaluate', {
    expression: "document.getElementsByTagName('*').length",
    returnByValue: true,
  })) as { result: { value?: unknown } }
  return typeof result.value === 'number' ? result.value : 0
}

/** Refuses a whole-page read of a page over `max` elements. */
export async function assertPageSize(tab: Tab, max: number, what: string): Promise<void> {
  const count = await elementCount(tab)
  if (count > max)
    throw new PageTooLargeError(
      `The page has ${count} elements, over the ${max} a ${what} reads`,
      what === 'snapshot'
        ? 'take_screenshot shows it; or navigate to a smaller page.'
        : 'Take a screenshot instead, or print a smaller page.',
    )
}
