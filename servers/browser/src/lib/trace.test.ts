import { describe, expect, it } from 'vitest'
import { analyzeTrace, insightLines, type TraceEvent } from './trace.js'

const main = { pid: 1, tid: 2 }
const events: TraceEvent[] = [
  { name: 'thread_name', ph: 'M', ts: 0, ...main, args: { name: 'CrRendererMain' } },
  { name: 'navigationStart', ph: 'R', ts: 1_000_000, ...main },
  { name: 'RunTask', ph: 'X', ts: 1_010_000, dur: 30_000, ...main },
  { name: 'RunTask', ph: 'X', ts: 1_100_000, dur: 120_000, ...main },
  // A long task on another thread does not block the page.
  { name: 'RunTask', ph: 'X', ts: 1_100_000, dur: 400_000, pid: 1, tid: 9 },
  { name: 'largestContentfulPaint::Candidate', ph: 'R', ts: 1_250_000, ...main },
  { name: 'largestContentfulPaint::Candidate', ph: 'R', ts: 1_400_000, ...main },
  {
    name: 'LayoutShift',
    ph: 'I',
    ts: 1_300_000,
    ...main,
    args: { data: { score: 0.05, had_recent_input: false } },
  },
  {
    name: 'LayoutShift',
    ph: 'I',
    ts: 1_310_000,
    ...main,
    args: { data: { score: 0.5, had_recent_input: true } },
  },
  {
    name: 'EventTiming',
    ph: 'b',
    ts: 1_500_000,
    ...main,
    args: { data: { interactionId: 3, duration: 184 } },
  },
  {
    name: 'ResourceSendRequest',
    ph: 'I',
    ts: 1_005_000,
    ...main,
    args: { data: { url: 'http://a.test/app.css', renderBlocking: 'blocking' } },
  },
]

describe('analyzeTrace', () => {
  it('reports main-thread long tasks, LCP after navigation, CLS without input, INP and render-blocking requests', () => {
    const insights = analyzeTrace(events)
    expect(insights.longTasks).toEqual({ count: 1, longest: 120, blocking: 70, at: [100] })
    expect(insights.lcp).toBe(400)
    expect(insights.cls).toBe(0.05)
    expect(insights.inp).toBe(184)
    expect(insights.renderBlocking).toEqual(['http://a.test/app.css'])
    expect(insightLines(insights)[1]).toBe(
      'Long tasks (> 50 ms on the main thread): 1, longest 120 ms, total blocking time 70 ms; at 100 ms.',
    )
  })
})
