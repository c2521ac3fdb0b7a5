// A small Prometheus registry: counters, gauges and histograms with labels, rendered in the text
// exposition format (0.0.4). Label values come from bounded sets (tool names, error kinds, MCP
// methods), never from arguments, so series stay few. A hot path keeps the handle of its series
// (`series(labels)`): an increment is then one addition, with no label key built per call.

type Labels = Record<string, string>

const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')

function labelText(labels: Labels, extra?: [string, string]): string {
  const entries = Object.entries(labels)
  if (extra) entries.push(extra)
  if (!entries.length) return ''
  return `{${entries.map(([key, value]) => `${key}="${escapeLabel(value)}"`).join(',')}}`
}

const keyOf = (labels: Labels) => JSON.stringify(labels)
const number = (value: number) => (Number.isFinite(value) ? String(value) : value > 0 ? '+Inf' : '-Inf')

/** One labelled series: its value is read and written in place. */
export interface SeriesEntry<T> {
  readonly labels: Labels
  value: T
}

interface Metric {
  render(): string[]
}

abstract class Series<T> implements Metric {
  protected readonly entries = new Map<string, SeriesEntry<T>>()
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' | 'histogram',
  ) {}
  protected entry(labels: Labels, initial: () => T): SeriesEntry<T> {
    const key = keyOf(labels)
    let found = this.entries.get(key)
    if (!found) {
      found = { labels, value: initial() }
      this.entries.set(key, found)
    }
    return found
  }
  protected header(): string[] {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`]
  }
  abstract render(): string[]
}

export class Counter extends Series<number> {
  constructor(name: string, help: string) {
    super(name, help, 'counter')
  }
  inc(labels: Labels = {}, by = 1): void {
    this.entry(labels, () => 0).value += by
  }
  /** The series of `labels` (made now, at 0): keep it and add to its `value`. */
  series(labels: Labels = {}): SeriesEntry<number> {
    return this.entry(labels, () => 0)
  }
  get(labels: Labels = {}): number {
    return this.entries.get(keyOf(labels))?.value ?? 0
  }
  render(): string[] {
    return [
      ...this.header(),
      ...[...this.entries.values()].map(
        ({ labels, value }) => `${this.name}${labelText(labels)} ${number(value)}`,
      ),
    ]
  }
}

export class Gauge extends Series<number> {
  constructor(
    name: string,
    help: string,
    private readonly collect?: () => Array<{ labels?: Labels; value: number }>,
  ) {
    super(name, help, 'gauge')
  }
  set(labels: Labels, value: number): void {
    this.entry(labels, () => 0).value = value
  }
  add(labels: Labels, by: number): void {
    this.entry(labels, () => 0).value += by
  }
  /** The series of `labels` (made now, at 0): keep it and set or add to its `value`. */
  series(labels: Labels = {}): SeriesEntry<number> {
    return this.entry(labels, () => 0)
  }
  render(): string[] {
    if (this.collect) for (const { labels = {}, value } of this.collect()) this.set(labels, value)
    return [
      ...this.header(),
      ...[...this.entries.values()].map(
        ({ labels, value }) => `${this.name}${labelText(labels)} ${number(value)}`,
      ),
    ]
  }
}

/** Seconds: from a cheap cache hit to a minute-long call. */
export const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** Counts per bucket as observed (not cumulative: the exposition sums them), the sum and the count. */
export interface HistogramValue {
  counts: number[]
  sum: number
  count: number
}

export class Histogram extends Series<HistogramValue> {
  constructor(
    name: string,
    help: string,
    private readonly buckets: number[] = DURATION_BUCKETS,
  ) {
    super(name, help, 'histogram')
  }
  observe(labels: Labels, value: number): void {
    this.record(this.series(labels), value)
  }
  /** The series of `labels` (made now, empty): keep it and {@link record} into it. */
  series(labels: Labels): SeriesEntry<HistogramValue> {
    return this.entry(labels, () => ({ counts: this.buckets.map(() => 0), sum: 0, count: 0 }))
  }
  /** One observation into a series of this histogram: its own bucket only (render accumulates). */
  record(series: SeriesEntry<HistogramValue>, value: number): void {
    const entry = series.value
    const buckets = this.buckets
    let index = 0
    while (index < buckets.length && value > (buckets[index] as number)) index++
    if (index < buckets.length) entry.counts[index] = (entry.counts[index] as number) + 1
    entry.sum += value
    entry.count += 1
  }
  count(labels: Labels): number {
    return this.entries.get(keyOf(labels))?.value.count ?? 0
  }
  render(): string[] {
    const lines = this.header()
    for (const { labels, value } of this.entries.values()) {
      let cumulative = 0
      this.buckets.forEach((bound, index) => {
        cumulative += value.counts[index] as number
        lines.push(`${this.name}_bucket${labelText(labels, ['le', number(bound)])} ${cumulative}`)
      })
      lines.push(`${this.name}_bucket${labelText(labels, ['le', '+Inf'])} ${value.count}`)
      lines.push(`${this.name}_sum${labelText(labels)} ${number(value.sum)}`)
      lines.push(`${this.name}_count${labelText(labels)} ${value.count}`)
    }
    return lines
  }
}

/** Metrics in registration order. */
export class Registry {
  private readonly metrics: Metric[] = []
  register<M extends Metric>(metric: M): M {
    this.metrics.push(metric)
    return metric
  }
  /** The exposition text (`Content-Type: text/plain; version=0.0.4`). */
  render(): string {
    return `${this.metrics.flatMap((metric) => metric.render()).join('\n')}\n`
  }
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'
