import { ToolError, z } from '@keel-mcp/core'
import { writeOutput } from '../lib/output.js'
import { analyzeTrace, insightLines, TRACE_CATEGORIES, type TraceEvent } from '../lib/trace.js'
import { shownUrl } from '../lib/url.js'
import { browse, defineTool, onTab, pageInfo, pageOutput, tabArgument, untrusted } from './shared.js'

/** Tabs with a trace running (one at a time per tab, as Chromium allows). */
const tracing = new WeakSet<object>()

export const performanceTrace = defineTool({
  name: 'performance_trace',
  title: 'Performance trace',
  description:
    'Starts a performance trace (optionally reloading the page), or stops it and reports long tasks, LCP, CLS, the slowest interaction and render-blocking requests.',
  input: {
    action: z.enum(['start', 'stop']).describe('Start or stop'),
    reload: z.boolean().default(false).describe('start: reload the page'),
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: browse,
  async run({ action, reload, tab: tabId }, context) {
    const { settings } = context.deps
    return onTab(context, tabId, async (tab) => {
      if (action === 'start') {
        if (tracing.has(tab))
          throw new ToolError('conflict', 'A trace is already running in this tab', {
            hint: 'Stop it first.',
          })
        await tab.page.tracing.start({ categories: TRACE_CATEGORIES })
        tracing.add(tab)
        if (reload) await tab.page.reload({ waitUntil: 'load', timeout: settings.timeoutNavigation })
        return {
          data: pageInfo(tab),
          text: `Tracing tab ${tab.id}${reload ? ` (reloaded ${shownUrl(tab.page.url())})` : ''}. Act on the page, then performance_trace action=stop.`,
        }
      }
      if (!tracing.has(tab))
        throw new ToolError('not_found', 'No trace is running in this tab', { hint: 'Start one first.' })
      tracing.delete(tab)
      const buffer = await tab.page.tracing.stop()
      const raw = buffer ? Buffer.from(buffer).toString('utf8') : '{"traceEvents":[]}'
      let events: TraceEvent[] = []
      try {
        const parsed = JSON.parse(raw) as { traceEvents?: TraceEvent[] } | TraceEvent[]
        events = Array.isArray(parsed) ? parsed : (parsed.traceEvents ?? [])
      } catch {
        throw new ToolError('internal', 'The trace could not be read')
      }
      const lines = insightLines(analyzeTrace(events))
      if (settings.outputDir) {
        const file = await writeOutput(settings.outputDir, 'trace', tab.id, 'json', raw)
        lines.push(
          `The whole trace: ${file.path} (${file.bytes} bytes; open it in DevTools' Performance panel).`,
        )
      }
      return { data: pageInfo(tab), text: untrusted(lines.join('\n')) }
    })
  },
})
