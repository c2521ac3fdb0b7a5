import { ToolError, z } from '@keel-mcp/core'
import {
  centerOf,
  clearField,
  clickPoint,
  fieldKind,
  focus,
  refNode,
  resolveRef,
  selectOptions,
} from '../lib/element.js'
import type { Tab } from '../lib/tab.js'
import {
  act,
  browse,
  defineTool,
  pageOutput,
  perform,
  refArgument,
  snapshotArgument,
  tabArgument,
} from './shared.js'

async function typeInto(tab: Tab, ref: string, text: string, slowly: boolean): Promise<void> {
  const element = await resolveRef(tab, ref)
  const { kind } = await fieldKind(tab, element)
  if (kind !== 'text')
    throw new ToolError('invalid_argument', `Ref ${ref} is not a text field`, {
      hint: 'Use click for buttons and checkboxes, select_option for lists.',
    })
  await focus(tab, element)
  await clearField(tab, element)
  if (slowly) await tab.page.keyboard.type(text, { delay: 30 })
  else if (text) await tab.page.keyboard.sendCharacter(text)
}

export const click = defineTool({
  name: 'click',
  title: 'Click',
  description: 'Clicks an element; answers with what changed.',
  input: {
    ref: refArgument,
    button: z.enum(['left', 'right', 'middle']).default('left').describe('Button'),
    double: z.boolean().default(false).describe('Double click'),
    snapshot: snapshotArgument,
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: act,
  async run({ ref, button, double, snapshot, tab: tabId }, context) {
    return perform(
      context,
      tabId,
      async (tab) => {
        const point = await centerOf(tab, refNode(tab, ref))
        await clickPoint(tab, point, { button, count: double ? 2 : 1 })
        return undefined
      },
      { snapshot, targets: [ref] },
    )
  },
})

export const type = defineTool({
  name: 'type',
  title: 'Type text',
  description: 'Replaces the text of a field; can press Enter after.',
  input: {
    ref: refArgument,
    text: z.string().describe('Text'),
    submit: z.boolean().default(false).describe('Press Enter after'),
    slowly: z.boolean().default(false).describe('Key by key'),
    snapshot: snapshotArgument,
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: act,
  async run({ ref, text, submit, slowly, snapshot, tab: tabId }, context) {
    return perform(
      context,
      tabId,
      async (tab) => {
        await typeInto(tab, ref, text, slowly)
        if (submit) await tab.page.keyboard.press('Enter')
        return undefined
      },
      { snapshot, targets: [ref] },
    )
  },
})

export const fillForm = defineTool({
  name: 'fill_form',
  title: 'Fill form',
  description: 'Sets several fields: text, checkbox/radio ("true"/"false"), select (value or label).',
  input: {
    fields: z
      .array(z.object({ ref: refArgument, value: z.string() }))
      .min(1)
      .max(100)
      .describe('Fields'),
    snapshot: snapshotArgument,
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: act,
  async run({ fields, snapshot, tab: tabId }, context) {
    return perform(
      context,
      tabId,
      async (tab) => {
        for (const field of fields) {
          const element = await resolveRef(tab, field.ref)
          const { kind, checked } = await fieldKind(tab, element)
          if (kind === 'select') await selectOptions(tab, element, [field.value])
          else if (kind === 'checkbox') {
            const want = /^(true|on|yes|1|checked)$/i.test(field.value)
            if (want !== checked) {
              await clickPoint(tab, await centerOf(tab, element))
            }
          } else if (kind === 'text') await typeInto(tab, field.ref, field.value, false)
          else
            throw new ToolError('invalid_argument', `Ref ${field.ref} is not a form field`, {
              hint: 'Use click for buttons.',
            })
        }
        return `Filled ${fields.length} field${fields.length === 1 ? '' : 's'}.`
      },
      { snapshot, targets: fields.map((field) => field.ref) },
    )
  },
})

export const selectOption = defineTool({
  name: 'select_option',
  title: 'Select option',
  description: 'Selects options of a <select>.',
  input: {
    ref: refArgument,
    values: z.array(z.string()).min(1).max(100).describe('Values or labels'),
    snapshot: snapshotArgument,
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: act,
  async run({ ref, values, snapshot, tab: tabId }, context) {
    return perform(
      context,
      tabId,
      async (tab) => {
        const selected = await selectOptions(tab, await resolveRef(tab, ref), values)
        return `Selected ${JSON.stringify(selected)}.`
      },
      { snapshot, targets: [ref] },
    )
  },
})

export const hover = defineTool({
  name: 'hover',
  title: 'Hover',
  description: 'Moves the mouse over an element.',
  input: { ref: refArgument, tab: tabArgument },
  output: pageOutput,
  annotations: browse,
  async run({ ref, tab: tabId }, context) {
    return perform(
      context,
      tabId,
      async (tab) => {
        const point = await centerOf(tab, refNode(tab, ref))
        await tab.page.mouse.move(point.x, point.y)
        return undefined
      },
      { targets: [ref] },
    )
  },
})

const KEY = /^((Control|Shift|Alt|Meta)\+){0,3}[A-Za-z0-9]{1,12}$|^((Control|Shift|Alt|Meta)\+){0,3}.$/

export const pressKey = defineTool({
  name: 'press_key',
  title: 'Press key',
  description: 'Presses a key: Enter, Escape, ArrowDown, Control+A…',
  input: {
    key: z.string().describe('Key'),
    snapshot: snapshotArgument,
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: act,
  async run({ key, snapshot, tab: tabId }, context) {
    return perform(
      context,
      tabId,
      async (tab) => {
        if (!KEY.test(key))
          throw new ToolError('invalid_argument', `Unknown key "${key}"`, {
            hint: 'Use names like Enter or Control+A.',
          })
        const parts = key.split('+')
        const main = parts.pop() ?? key
        const keyboard = tab.page.keyboard
        try {
          // biome-ignore lint/suspicious/noExplicitAny: puppeteer types key names as a closed union
          for (const modifier of parts) await keyboard.down(modifier as any)
          // biome-ignore lint/suspicious/noExplicitAny: checked by puppeteer, which throws on unknown keys
          await keyboard.press(main as any)
        } catch (error) {
          if (/Unknown key/.test(String((error as Error).message)))
            throw new ToolError('invalid_argument', `Unknown key "${main}"`, {
              hint: 'Use names like Enter, Escape, ArrowDown, Tab, Backspace, a.',
            })
          throw error
        } finally {
          // biome-ignore lint/suspicious/noExplicitAny: as above
          for (const modifier of parts.reverse()) await keyboard.up(modifier as any).catch(() => undefined)
        }
        return undefined
      },
      { snapshot, targets: [] },
    )
  },
})

export const drag = defineTool({
  name: 'drag',
  title: 'Drag',
  description: 'Drags one element onto another.',
  input: { from: refArgument, to: refArgument, tab: tabArgument },
  output: pageOutput,
  annotations: act,
  async run({ from, to, tab: tabId }, context) {
    return perform(
      context,
      tabId,
      async (tab) => {
        const start = await centerOf(tab, refNode(tab, from))
        const end = await centerOf(tab, refNode(tab, to))
        const mouse = tab.page.mouse
        await mouse.move(start.x, start.y)
        await mouse.down()
        await mouse.move((start.x + end.x) / 2, (start.y + end.y) / 2, { steps: 5 })
        await mouse.move(end.x, end.y, { steps: 5 })
        await mouse.up()
        return undefined
      },
      { targets: [from, to] },
    )
  },
})
