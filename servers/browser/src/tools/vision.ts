import { z } from '@keel-mcp/core'
import { clickPoint } from '../lib/element.js'
import { act, defineTool, pageOutput, perform, snapshotArgument, tabArgument } from './shared.js'

// Coordinate actions for pages whose controls are not in the accessibility tree (canvas, maps,
// games): the model reads positions off a screenshot. Offered only with --caps vision.
const coordinate = z.number().min(0).max(100_000).describe('CSS px from the viewport edge')

export const clickAt = defineTool({
  name: 'click_at',
  title: 'Click at',
  description: 'Clicks at viewport coordinates (from a screenshot). Prefer click by ref.',
  input: {
    x: coordinate,
    y: coordinate,
    button: z.enum(['left', 'right', 'middle']).default('left').describe('Button'),
    double: z.boolean().default(false).describe('Double click'),
    snapshot: snapshotArgument,
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: act,
  async run({ x, y, button, double, snapshot, tab: tabId }, context) {
    return perform(
      context,
      tabId,
      async (tab) => {
        await clickPoint(tab, { x, y }, { button, count: double ? 2 : 1 })
        return `Clicked at (${x}, ${y}).`
      },
      { snapshot },
    )
  },
})

export const dragAt = defineTool({
  name: 'drag_at',
  title: 'Drag at',
  description: 'Drags from one viewport point to another (from a screenshot).',
  input: {
    from_x: coordinate,
    from_y: coordinate,
    to_x: coordinate,
    to_y: coordinate,
    snapshot: snapshotArgument,
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: act,
  async run({ from_x, from_y, to_x, to_y, snapshot, tab: tabId }, context) {
    return perform(
      context,
      tabId,
      async (tab) => {
        const mouse = tab.page.mouse
        await mouse.move(from_x, from_y)
        await mouse.down()
        await mouse.move((from_x + to_x) / 2, (from_y + to_y) / 2, { steps: 5 })
        await mouse.move(to_x, to_y, { steps: 5 })
        await mouse.up()
        return `Dragged from (${from_x}, ${from_y}) to (${to_x}, ${to_y}).`
      },
      { snapshot },
    )
  },
})

export const typeAt = defineTool({
  name: 'type_at',
  title: 'Type at',
  description: 'Clicks at viewport coordinates, then types text (can press Enter after).',
  input: {
    x: coordinate,
    y: coordinate,
    text: z.string().max(10_000).describe('Text'),
    submit: z.boolean().default(false).describe('Press Enter after'),
    snapshot: snapshotArgument,
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: act,
  async run({ x, y, text, submit, snapshot, tab: tabId }, context) {
    return perform(
      context,
      tabId,
      async (tab) => {
        await clickPoint(tab, { x, y })
        if (text) await tab.page.keyboard.sendCharacter(text)
        if (submit) await tab.page.keyboard.press('Enter')
        return `Typed at (${x}, ${y}).`
      },
      { snapshot },
    )
  },
})
