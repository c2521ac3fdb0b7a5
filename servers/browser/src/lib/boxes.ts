import type { Tab } from './tab.js'

/** Refs boxed at most in one answer (a capped snapshot shows a few hundred). */
const MAX_BOXES = 1000

/**
 * Adds `[box x,y,w,h]` (viewport CSS px, rounded; what click_at takes) after each ref in `lines`
 * whose element has a box; the boxes are asked for together (one round trip's time).
 */
export async function withBoxes(tab: Tab, lines: string[]): Promise<string[]> {
  const refs = [...new Set(lines.join('\n').match(/#e\d+/g) ?? [])].slice(0, MAX_BOXES)
  const boxes = new Map<string, string>()
  await Promise.all(
    refs.map(async (shown) => {
      const backendNodeId = tab.refs.nodeOf(shown.slice(1))
      if (backendNodeId === undefined) return
      const answer = (await tab.cdp.send('DOM.getBoxModel', { backendNodeId }).catch(() => undefined)) as
        | { model: { border: number[] } }
        | undefined
      const quad = answer?.model.border
      if (!quad || quad.length < 8) return
      const xs = [quad[0], quad[2], quad[4], quad[6]] as number[]
      const ys = [quad[1], quad[3], quad[5], quad[7]] as number[]
      const x = Math.min(...xs)
      const y = Math.min(...ys)
      boxes.set(shown, `[box ${[x, y, Math.max(...xs) - x, Math.max(...ys) - y].map(Math.round).join(',')}]`)
    }),
  )
  return lines.map((line) =>
    line.replace(/#e\d+/g, (shown) => (boxes.has(shown) ? `${shown} ${boxes.get(shown)}` : shown)),
  )
}
