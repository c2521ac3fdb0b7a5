/** One Chrome trace event (the fields the analysis reads). */
export interface TraceEvent {
  name: string
  ph: string
  ts: number
  dur?: number
  tid?: number
  pid?: number
  args?: { data?: Record<string, unknown>; name?: string } & Record<string, unknown>
}

/** Categories the analysis needs: tasks, paints and shifts, requests, input. */
export const TRACE_CATEGORIES = [
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'loading',
  'blink.user_timing',
  'latencyInfo',
  '__metadata',
]

/** A main-thread task longer than this blocks input (the RAIL and Lighthouse threshold). */
const LONG_TASK_US = 50_000

export interface TraceInsights {
  /** Milliseconds the trace spans. */
  span: number
  longTasks: { count: number; longest: number; blocking: number; at: number[] }
  /** Largest contentful paint after the last navigation start, in ms, if one happened. */
  lcp?: number | undefined
  /** Layout shifts without recent input, summed. */
  cls: number
  /** The slowest interaction's duration (event timing), in ms. */
  inp?: number | undefined
  renderBlocking: string[]
}

const ms = (microseconds: number) => Math.round(microseconds / 100) / 10

/** The renderer main threads: where tasks block the page. */
function mainThreads(events: TraceEvent[]): Set<string> {
  const threads = new Set<string>()
  for (const event of events)
    if (event.name === 'thread_name' && event.args?.name === 'CrRendererMain')
      threads.add(`${event.pid}:${event.tid}`)
  return threads
}

/** What a trace says about a page's loading and responsiveness, like DevTools' performance insights. */
export function analyzeTrace(events: TraceEvent[]): TraceInsights {
  const timed = events.filter((event) => event.ts > 0)
  const start = Math.min(...timed.map((event) => event.ts))
  const end = Math.max(...timed.map((event) => event.ts + (event.dur ?? 0)))
  const threads = mainThreads(events)
  const tasks = events.filter(
    (event) =>
      event.name === 'RunTask' &&
      event.ph === 'X' &&
      (event.dur ?? 0) > LONG_TASK_US &&
      (!threads.size || threads.has(`${event.pid}:${event.tid}`)),
  )
  const navigationStart = events
    .filter((event) => event.name === 'navigationStart')
    .reduce((latest, event) => Math.max(latest, event.ts), 0)
  const candidates = events.filter(
    (event) => event.name === 'largestContentfulPaint::Candidate' && event.ts >= navigationStart,
  )
  const lcp =
    candidates.length && navigationStart
      ? ms(Math.max(...candidates.map((event) => event.ts)) - navigationStart)
      : undefined
  let cls = 0
  for (const event of events)
    if (event.name === 'LayoutShift') {
      const data = event.args?.data as { score?: number; had_recent_input?: boolean } | undefined
      if (data && !data.had_recent_input) cls += data.score ?? 0
    }
  const interactions = events.filter(
    (event) =>
      event.name === 'EventTiming' &&
      event.ph === 'b' &&
      ((event.args?.data ?? {}) as { interactionId?: number })?.interactionId,
  )
  const durations = interactions.map((event) =>
    Number(((event.args?.data ?? {}) as { duration?: number }).duration ?? 0),
  )
  const renderBlocking = events
    .filter(
      (event) =>
        event.name === 'ResourceSendRequest' &&
        ((event.args?.data ?? {}) as { renderBlocking?: string })?.renderBlocking === 'blocking',
    )
    .map((event) => String(((event.args?.data ?? {}) as { url?: string }).url ?? ''))
  return {
    span: timed.length ? ms(end - start) : 0,
    longTasks: {
      count: tasks.length,
      longest: tasks.length ? ms(Math.max(...tasks.map((task) => task.dur ?? 0))) : 0,
      blocking: ms(tasks.reduce((sum, task) => sum + (task.dur ?? 0) - LONG_TASK_US, 0)),
      at: tasks.slice(0, 10).map((task) => ms(task.ts - start)),
    },
    lcp,
    cls: Math.round(cls * 1000) / 1000,
    inp: durations.length ? Math.max(...durations) : undefined,
    renderBlocking: [...new Set(renderBlocking)].slice(0, 20),
  }
}

/** The insights as lines for the model. */
export function insightLines(insights: TraceInsights): string[] {
  const { longTasks } = insights
  return [
    `Trace of ${insights.span} ms.`,
    longTasks.count
      ? `Long tasks (> 50 ms on the main thread): ${longTasks.count}, longest ${longTasks.longest} ms, total blocking time ${longTasks.blocking} ms; at ${longTasks.at.map((at) => `${at} ms`).join(', ')}.`
      : 'Long tasks: none.',
    insights.lcp !== undefined
      ? `Largest contentful paint: ${insights.lcp} ms after navigation start.`
      : 'Largest contentful paint: no navigation in the trace.',
    `Cumulative layout shift: ${insights.cls}.`,
    insights.inp !== undefined ? `Slowest interaction: ${insights.inp} ms.` : 'Interactions: none.',
    insights.renderBlocking.length
      ? `Render-blocking requests: ${insights.renderBlocking.join(', ')}.`
      : 'Render-blocking requests: none.',
  ]
}
