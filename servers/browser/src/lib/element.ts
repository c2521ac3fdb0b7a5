import { parseRef } from './snapshot.js'
import { REF_OBJECT_GROUP, StaleRefError, type Tab } from './tab.js'

/** CDP says this when a backend node id no longer names a live node. */
const GONE = /No node with given id|Could not find node|Node is detached|No node found|Cannot find context/i

async function send<T>(tab: Tab, method: string, params: Record<string, unknown>): Promise<T> {
  try {
    // biome-ignore lint/suspicious/noExplicitAny: CDP commands are typed by name; these are called generically
    return (await tab.cdp.send(method as any, params as any)) as T
  } catch (error) {
    if (GONE.test(String((error as Error).message)))
      throw new StaleRefError('The element is no longer in the page. Take a new snapshot and use its refs.')
    throw error
  }
}

/** An element found by ref: its backend node id and a handle to call functions on it. */
export interface Element {
  backendNodeId: number
  objectId: string
}

export async function resolveRef(tab: Tab, ref: string): Promise<Element> {
  const backendNodeId = parseRef(tab, ref)
  tab.refsHeld = true
  const { object } = await send<{ object: { objectId?: string } }>(tab, 'DOM.resolveNode', {
    backendNodeId,
    objectGroup: REF_OBJECT_GROUP,
  })
  if (!object.objectId) throw new StaleRefError(`Ref ${ref} is gone. Take a new snapshot.`)
  return { backendNodeId, objectId: object.objectId }
}

/**
 * The node a ref names, for what needs only its node id (a point to click, a box): no handle is
 * made in the page. A ref gone from the page fails the first command sent for it, as stale.
 */
export function refNode(tab: Tab, ref: string): Pick<Element, 'backendNodeId'> {
  return { backendNodeId: parseRef(tab, ref) }
}

/** Calls `fn` with the element as `this` in the page; returns its JSON result. */
export async function callOn<T>(tab: Tab, element: Element, fn: string, args: unknown[] = []): Promise<T> {
  const result = await send<{
    result: { value?: unknown }
    exceptionDetails?: { text?: string; exception?: { description?: string } }
  }>(tab, 'Runtime.callFunctionOn', {
    objectId: element.objectId,
    functionDeclaration: fn,
    arguments: args.map((value) => ({ value })),
    returnByValue: true,
    awaitPromise: true,
  })
  if (result.exceptionDetails) {
    const detail =
      result.exceptionDetails.exception?.description ?? result.exceptionDetails.text ?? 'the page threw'
    throw new Error((detail.split('\n')[0] ?? detail).replace(/^Error: /, ''))
  }
  return result.result.value as T
}

/** The element's centre in viewport coordinates, after scrolling it into view. */
export async function centerOf(
  tab: Tab,
  element: Pick<Element, 'backendNodeId'>,
): Promise<{ x: number; y: number }> {
  await send(tab, 'DOM.scrollIntoViewIfNeeded', { backendNodeId: element.backendNodeId }).catch(
    (error: unknown) => {
      if (error instanceof StaleRefError) throw error
    },
  )
  const { quads } = await send<{ quads: number[][] }>(tab, 'DOM.getContentQuads', {
    backendNodeId: element.backendNodeId,
  }).catch((error: unknown) => {
    if (error instanceof StaleRefError) throw error
    return { quads: [] as number[][] }
  })
  const quad = quads.find((candidate) => area(candidate) > 0.5)
  if (!quad) throw new NotVisibleError('The element has no visible box (hidden, zero-sized or not rendered).')
  const xs = [quad[0], quad[2], quad[4], quad[6]].map(Number)
  const ys = [quad[1], quad[3], quad[5], quad[7]].map(Number)
  return { x: xs.reduce((a, b) => a + b, 0) / 4, y: ys.reduce((a, b) => a + b, 0) / 4 }
}

/**
 * Clicks at a viewport point as a user would: the pointer moves there, then presses and releases
 * (twice for a double click), in that order.
 *
 * Chromium acknowledges a mouse move only at the next frame (moves are aligned with animation
 * frames), while a press is dispatched at once, after the move it follows: the page has handled
 * the move (`mouseover`, `:hover`) before it sees the press. So the click waits for the press and
 * release, not for the frame; the move's acknowledgement arrives on its own.
 */
export async function clickPoint(
  tab: Tab,
  point: { x: number; y: number },
  options: { button?: 'left' | 'right' | 'middle'; count?: number } = {},
): Promise<void> {
  const { button = 'left', count = 1 } = options
  const mouse = tab.page.mouse
  const moved = mouse.move(point.x, point.y)
  const presses: Promise<void>[] = []
  for (let clickCount = 1; clickCount <= count; clickCount++)
    presses.push(mouse.down({ button, clickCount }), mouse.up({ button, clickCount }))
  try {
    await Promise.all(presses)
  } finally {
    // A move that fails (the page went away) fails its press too, which is what is reported.
    moved.catch(() => undefined)
  }
}

/** The element's bounding box in page coordinates (for element screenshots). */
export async function boxOf(
  tab: Tab,
  element: Element,
): Promise<{ x: number; y: number; width: number; height: number }> {
  await send(tab, 'DOM.scrollIntoViewIfNeeded', { backendNodeId: element.backendNodeId }).catch(
    () => undefined,
  )
  const box = await callOn<{ x: number; y: number; width: number; height: number }>(
    tab,
    element,
    'function(){const r=this.getBoundingClientRect();return {x:r.left+window.scrollX,y:r.top+window.scrollY,width:r.width,height:r.height}}',
  )
  if (!box || box.width < 1 || box.height < 1) throw new NotVisibleError('The element has no visible box.')
  return box
}

function area(quad: number[]): number {
  let sum = 0
  for (let index = 0; index < 4; index++) {
    const x1 = quad[index * 2] ?? 0
    const y1 = quad[index * 2 + 1] ?? 0
    const x2 = quad[((index + 1) % 4) * 2] ?? 0
    const y2 = quad[((index + 1) % 4) * 2 + 1] ?? 0
    sum += x1 * y2 - x2 * y1
  }
  return Math.abs(sum / 2)
}

export class NotVisibleError extends Error {
  override name = 'NotVisibleError'
}

export async function focus(tab: Tab, element: Element): Promise<void> {
  await send(tab, 'DOM.focus', { backendNodeId: element.backendNodeId })
}

/** Empties a text field (value or contentEditable) the way a user's select-all + delete would. */
export async function clearField(tab: Tab, element: Element): Promise<void> {
  await callOn(
    tab,
    element,
    `function(){
      if (this.isContentEditable) { this.textContent = ''; this.dispatchEvent(new Event('input', {bubbles: true})); return }
      if (!('value' in this)) throw new Error('not a text field')
      if (this.value !== '') { this.value = ''; this.dispatchEvent(new Event('input', {bubbles: true})) }
    }`,
  )
}

/** Selects options of a <select> by value or visible label; returns the values now selected. */
export async function selectOptions(tab: Tab, element: Element, values: string[]): Promise<string[]> {
  return callOn<string[]>(
    tab,
    element,
    `function(wanted){
      if (this.tagName !== 'SELECT') throw new Error('not a <select> element')
      const options = Array.from(this.options)
      const chosen = []
      for (const want of wanted) {
        const option = options.find(o => o.value === want) || options.find(o => o.label.trim() === want.trim())
        if (!option) throw new Error('no option ' + JSON.stringify(want))
        chosen.push(option)
        if (!this.multiple) break
      }
      for (const option of options) option.selected = chosen.includes(option)
      this.dispatchEvent(new Event('input', {bubbles: true}))
      this.dispatchEvent(new Event('change', {bubbles: true}))
      return chosen.map(o => o.value)
    }`,
    [values],
  )
}

/** What kind of field an element is, to fill it the right way. */
export async function fieldKind(
  tab: Tab,
  element: Element,
): Promise<{ kind: 'text' | 'checkbox' | 'select' | 'file' | 'other'; checked?: boolean }> {
  return callOn(
    tab,
    element,
    `function(){
      if (this.tagName === 'SELECT') return {kind: 'select'}
      if (this.tagName === 'INPUT') {
        const type = (this.type || 'text').toLowerCase()
        if (type === 'checkbox' || type === 'radio') return {kind: 'checkbox', checked: this.checked}
        if (type === 'file') return {kind: 'file'}
        if (['button','submit','reset','image','hidden'].includes(type)) return {kind: 'other'}
        return {kind: 'text'}
      }
      if (this.tagName === 'TEXTAREA' || this.isContentEditable) return {kind: 'text'}
      const role = this.getAttribute('role')
      if (role === 'checkbox' || role === 'switch' || role === 'radio') return {kind: 'checkbox', checked: this.getAttribute('aria-checked') === 'true'}
      return {kind: 'other'}
    }`,
  )
}

export async function setFiles(tab: Tab, element: Element, files: string[]): Promise<void> {
  await send(tab, 'DOM.setFileInputFiles', { files, backendNodeId: element.backendNodeId })
}
