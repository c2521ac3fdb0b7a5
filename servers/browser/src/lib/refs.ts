/** Where a browser context's ref numbers come from: one counter for all its tabs. */
export interface RefCounter {
  next: number
}

const counters = new WeakMap<object, RefCounter>()

/**
 * The ref counter of a browser context (created on first use). Every tab of the context, and a
 * crashed tab's replacement, draws from it: a ref is never handed out twice in one context, so a
 * ref kept from an earlier page or tab can only be refused, never land on another element.
 */
export function refCounterOf(context: object): RefCounter {
  let counter = counters.get(context)
  if (!counter) {
    counter = { next: 0 }
    counters.set(context, counter)
  }
  return counter
}

/** Makes `context` draw its ref numbers from `counter` (a connection's, kept across relaunches). */
export function useRefCounter(context: object, counter: RefCounter): void {
  counters.set(context, counter)
}

/**
 * The refs of one tab's document: short ids (e1, e2, …) for Chromium's backend DOM node ids,
 * numbered in the order elements are first shown. An element keeps its ref for as long as it lives in the page; refs of an
 * earlier document are forgotten on navigation.
 */
export class Refs {
  private readonly byRef = new Map<string, number>()
  private readonly byNode = new Map<number, string>()

  constructor(private readonly counter: RefCounter) {}

  /** The element's ref, handed out now if it has none yet. */
  refFor(backendNodeId: number): string {
    let ref = this.byNode.get(backendNodeId)
    if (!ref) {
      ref = `e${++this.counter.next}`
      this.byNode.set(backendNodeId, ref)
      this.byRef.set(ref, backendNodeId)
    }
    return ref
  }

  /** The backend node id behind a ref handed out on this document, if any. */
  nodeOf(ref: string): number | undefined {
    return this.byRef.get(ref)
  }

  get size(): number {
    return this.byRef.size
  }

  clear(): void {
    this.byRef.clear()
    this.byNode.clear()
  }
}
