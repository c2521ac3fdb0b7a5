/**
 * Reading PostgreSQL's JSON plans (`EXPLAIN (FORMAT JSON)`): a one-paragraph summary and a compact
 * tree like psql's text format, both far shorter than the JSON a model would otherwise read.
 */

type PlanNode = Record<string, unknown>

export interface PlanSummary {
  /** A few sentences: cost, rows, timings (with analyze), and the scans that do the work. */
  readonly summary: string
  /** One line per node, indented by depth, with the conditions that matter. */
  readonly tree: string
  /** Nodes in the plan. */
  readonly nodeCount: number
}

const isRecord = (value: unknown): value is PlanNode =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const num = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined

const fixed = (value: number | undefined, digits = 2) => (value === undefined ? '?' : value.toFixed(digits))

/** `Seq Scan on shop.orders o`, `Hash Join`, `Index Scan using orders_pkey on orders`. */
function nodeLabel(node: PlanNode): string {
  const type = String(node['Node Type'] ?? 'Unknown')
  const parts = [
    node.Strategy && type === 'Aggregate' && node.Strategy !== 'Plain' ? `${node.Strategy} ${type}` : type,
  ]
  if (typeof node['Join Type'] === 'string' && node['Join Type'] !== 'Inner' && /Join|Nested Loop/.test(type))
    parts[0] = `${type} (${node['Join Type']})`
  if (typeof node['Index Name'] === 'string') parts.push(`using ${node['Index Name']}`)
  if (typeof node['Relation Name'] === 'string') {
    const relation =
      typeof node.Schema === 'string' ? `${node.Schema}.${node['Relation Name']}` : node['Relation Name']
    const alias =
      typeof node.Alias === 'string' && node.Alias !== node['Relation Name'] ? ` ${node.Alias}` : ''
    parts.push(`on ${relation}${alias}`)
  } else if (typeof node['CTE Name'] === 'string') {
    parts.push(`on ${node['CTE Name']}`)
  } else if (typeof node['Function Name'] === 'string') {
    parts.push(`on ${node['Function Name']}`)
  }
  return parts.join(' ')
}

const conditionKeys = [
  'Index Cond',
  'Recheck Cond',
  'Hash Cond',
  'Merge Cond',
  'Join Filter',
  'Filter',
  'Sort Key',
  'Group Key',
] as const

function nodeLines(node: PlanNode, depth: number, lines: string[]): number {
  // psql's layout: children under `->` arrows, details two columns right of the node's text.
  const indent = depth === 0 ? '' : `${' '.repeat(6 * depth - 4)}->  `
  const detailIndent = ' '.repeat(6 * depth + 2)
  let line = `${indent}${nodeLabel(node)} (cost=${fixed(num(node['Startup Cost']))}..${fixed(num(node['Total Cost']))} rows=${num(node['Plan Rows']) ?? '?'})`
  const actualRows = num(node['Actual Rows'])
  if (actualRows !== undefined) {
    line += ` (actual time=${fixed(num(node['Actual Startup Time']), 3)}..${fixed(num(node['Actual Total Time']), 3)} rows=${actualRows} loops=${num(node['Actual Loops']) ?? 1})`
  } else if (node['Actual Loops'] === 0) {
    line += ' (never executed)'
  }
  lines.push(line)
  for (const key of conditionKeys) {
    const value = node[key]
    if (typeof value === 'string') lines.push(`${detailIndent}${key}: ${value}`)
    else if (Array.isArray(value) && value.length > 0)
      lines.push(`${detailIndent}${key}: ${value.map(String).join(', ')}`)
  }
  const removed = num(node['Rows Removed by Filter'])
  if (removed !== undefined && removed > 0) lines.push(`${detailIndent}Rows Removed by Filter: ${removed}`)
  let count = 1
  const children = Array.isArray(node.Plans) ? node.Plans : []
  for (const child of children) if (isRecord(child)) count += nodeLines(child, depth + 1, lines)
  return count
}

/** Relations the summary names at most. */
const SCANS_NAMED = 20

function collectScans(node: PlanNode, scans: Map<string, number>): void {
  const type = String(node['Node Type'] ?? '')
  if (/Scan$/.test(type) && typeof node['Relation Name'] === 'string') {
    const label = nodeLabel(node)
    scans.set(label, Math.max(scans.get(label) ?? 0, num(node['Plan Rows']) ?? 0))
  }
  for (const child of Array.isArray(node.Plans) ? node.Plans : [])
    if (isRecord(child)) collectScans(child, scans)
}

/**
 * Summarises one plan as returned by EXPLAIN (FORMAT JSON) — the object holding `Plan`,
 * `Planning Time` and, with ANALYZE, `Execution Time`.
 */
export function summarizePlan(explained: Record<string, unknown>): PlanSummary {
  const root = isRecord(explained.Plan) ? explained.Plan : undefined
  if (root === undefined) return { summary: 'The plan is empty.', tree: '', nodeCount: 0 }
  const lines: string[] = []
  const nodeCount = nodeLines(root, 0, lines)
  const sentences = [
    `${nodeLabel(root)}: estimated cost ${fixed(num(root['Total Cost']))}, ${num(root['Plan Rows']) ?? '?'} row(s).`,
  ]
  const execution = num(explained['Execution Time'])
  if (execution !== undefined) {
    sentences.push(
      `Ran in ${fixed(execution, 3)} ms (planning ${fixed(num(explained['Planning Time']), 3)} ms), ${num(root['Actual Rows']) ?? '?'} row(s) returned.`,
    )
  }
  const scans = new Map<string, number>()
  collectScans(root, scans)
  if (scans.size > 0) {
    // A plan over hundreds of partitions or branches scans as many relations: the summary names
    // the first of them, the tree every one.
    const named = [...scans].slice(0, SCANS_NAMED).map(([label, rows]) => `${label} (~${rows} rows)`)
    const more = scans.size - named.length
    sentences.push(`Scans: ${named.join('; ')}${more > 0 ? `; and ${more} more (see the tree)` : ''}.`)
  }
  return { summary: sentences.join(' '), tree: `${lines.join('\n')}\n`, nodeCount }
}
