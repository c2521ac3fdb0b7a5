import { budgetOutput, openBudget, ToolError, withMarker, z } from '@keel-mcp/core'
import {
  act,
  browse,
  defineTool,
  fullSnapshot,
  listCursorArgument,
  maxTokensArgument,
  onTab,
  pageOutput,
  tabArgument,
  untrusted,
} from './shared.js'

const LEVELS = ['error', 'warn', 'info', 'log', 'debug'] as const
// Puppeteer's console types, mapped onto the levels a model asks for.
const levelOf = (type: string): (typeof LEVELS)[number] =>
  type === 'error' || type === 'assert'
    ? 'error'
    : type === 'warn' || type === 'warning'
      ? 'warn'
      : type === 'info'
        ? 'info'
        : type === 'debug' || type === 'verbose' || type === 'trace'
          ? 'debug'
          : 'log'

export const consoleMessages = defineTool({
  name: 'console_messages',
  title: 'Console',
  description: 'Recent console messages and uncaught errors (last 200).',
  input: {
    level: z.enum(LEVELS).default('log').describe('Minimum level'),
    max_tokens: maxTokensArgument,
    cursor: listCursorArgument,
    tab: tabArgument,
  },
  output: { tab: z.string(), count: z.number(), ...budgetOutput },
  annotations: { ...browse, idempotentHint: true },
  async run(args, context) {
    const { level, tab: tabId } = args
    const budget = openBudget('console_messages', args)
    const minimum = LEVELS.indexOf(level)
    return onTab(context, tabId, async (tab) => {
      const entries = tab.console.filter((entry) => LEVELS.indexOf(levelOf(entry.level)) <= minimum)
      const lines = entries.map(
        (entry) => `[${levelOf(entry.level)}] ${entry.text}${entry.location ? ` (${entry.location})` : ''}`,
      )
      const page = budget.items(lines, (line) => line, { noun: 'messages' })
      return {
        data: { tab: tab.id, count: entries.length, ...(page.cut ? { budget: page.cut } : {}) },
        text: page.lines.length
          ? withMarker(untrusted(page.text), page.marker)
          : `No console messages at ${level} or above.`,
      }
    })
  },
})

export const networkRequests = defineTool({
  name: 'network_requests',
  title: 'Network',
  description: 'Recent requests (last 300): method, URL, status, type, size, failure.',
  input: {
    failed_only: z.boolean().default(false).describe('Only failed'),
    max_tokens: maxTokensArgument,
    cursor: listCursorArgument,
    tab: tabArgument,
  },
  output: { tab: z.string(), count: z.number(), ...budgetOutput },
  annotations: { ...browse, idempotentHint: true },
  async run(args, context) {
    const { failed_only, tab: tabId } = args
    const budget = openBudget('network_requests', args)
    return onTab(context, tabId, async (tab) => {
      const entries = tab.network.filter((entry) => !failed_only || entry.failed)
      const lines = entries.map(
        (entry) =>
          `[${entry.id}] ${entry.method} ${entry.url} ${entry.failed ? `failed: ${entry.failed}` : (entry.status ?? '')} ${entry.type}${entry.size !== undefined ? ` ${entry.size}B` : ''}`,
      )
      const page = budget.items(lines, (line) => line, { noun: 'requests' })
      return {
        data: { tab: tab.id, count: entries.length, ...(page.cut ? { budget: page.cut } : {}) },
        text: page.lines.length ? withMarker(untrusted(page.text), page.marker) : 'No requests recorded.',
      }
    })
  },
})

export const handleDialog = defineTool({
  name: 'handle_dialog',
  title: 'Dialog',
  description: 'Accepts or dismisses the open alert, confirm or prompt.',
  input: {
    accept: z.boolean().describe('OK or Cancel'),
    prompt_text: z.string().optional().describe('Prompt answer'),
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: act,
  async run({ accept, prompt_text, tab: tabId }, context) {
    return onTab(
      context,
      tabId,
      async (tab) => {
        const open = await tab.answerDialog(accept, prompt_text)
        if (!open)
          throw new ToolError('not_found', 'No dialog is open', {
            hint: 'Dialogs are reported by the call that opened them.',
          })
        // Let the page finish the script that opened the dialog before reading it.
        await new Promise((resolve) => setTimeout(resolve, 50))
        const snapshot = await fullSnapshot(tab, context.deps.settings)
        return {
          ...snapshot,
          text: `${accept ? 'Accepted' : 'Dismissed'} the ${open.type}.\n${snapshot.text}`,
        }
      },
      { keepDialog: true },
    )
  },
})
