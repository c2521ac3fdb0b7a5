/**
 * What a query asks of its tables' columns, read from PostgreSQL's parse tree: the columns it
 * compares for equality (`=`, `IN`, join conditions), by range (`<`, `BETWEEN`, `LIKE 'x%'`), and
 * the columns it orders by. The index advisor builds its candidates from these.
 */
import { loadSqlParser } from './sql-guard.js'

export interface ColumnUse {
  /** The relation as written: `name`, or `schema\0name` when qualified. */
  readonly table: string
  readonly column: string
  readonly kind: 'equality' | 'range' | 'order'
}

type Node = Record<string, unknown>

const isRecord = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const strings = (parts: unknown): string[] =>
  Array.isArray(parts)
    ? parts.map((part) => (isRecord(part) && isRecord(part.String) ? String(part.String.sval) : '*'))
    : []

const equalityOperators = new Set(['='])
const rangeOperators = new Set(['<', '>', '<=', '>=', '~~', '~~*'])

interface Scope {
  /** Alias or name → relation key. */
  readonly relations: Map<string, string>
}

/** Every node of `root`, depth first (iteratively: deep trees cannot overflow the stack). */
function* walk(root: unknown): Generator<[string, Node]> {
  const stack: unknown[] = [root]
  while (stack.length > 0) {
    const node = stack.pop()
    if (Array.isArray(node)) {
      for (const item of node) stack.push(item)
      continue
    }
    if (!isRecord(node)) continue
    for (const [key, value] of Object.entries(node)) {
      if (isRecord(value)) yield [key, value]
      if (typeof value === 'object' && value !== null) stack.push(value)
    }
  }
}

function collectRelations(root: unknown): Scope {
  const relations = new Map<string, string>()
  for (const [key, node] of walk(root)) {
    if (key !== 'RangeVar' || typeof node.relname !== 'string') continue
    const name =
      typeof node.schemaname === 'string' ? `${node.schemaname}\u0000${node.relname}` : node.relname
    const alias =
      isRecord(node.alias) && typeof node.alias.aliasname === 'string' ? node.alias.aliasname : undefined
    relations.set(alias ?? node.relname, name)
    if (alias === undefined) relations.set(node.relname, name)
  }
  return { relations }
}

/** The relation and column a ColumnRef names, when it can be told from the query alone. */
function resolve(reference: unknown, scope: Scope): { table: string; column: string } | undefined {
  if (!isRecord(reference) || !isRecord(reference.ColumnRef)) return undefined
  const fields = strings(reference.ColumnRef.fields)
  const column = fields.at(-1)
  if (column === undefined || column === '*') return undefined
  if (fields.length >= 2) {
    const qualifier = fields.at(-2) as string
    const table = scope.relations.get(qualifier)
    return table === undefined ? undefined : { table, column }
  }
  const tables = new Set(scope.relations.values())
  // Unqualified: only when the query reads one relation (else the catalog would have to decide).
  if (tables.size !== 1) return undefined
  return { table: [...tables][0] as string, column }
}

/** Column uses of one query (unparseable text yields none). */
export async function extractColumnUses(sql: string): Promise<ColumnUse[]> {
  const { parseSync } = await loadSqlParser()
  let tree: unknown
  try {
    tree = parseSync(sql)
  } catch {
    return []
  }
  const scope = collectRelations(tree)
  const uses: ColumnUse[] = []
  const add = (reference: unknown, kind: ColumnUse['kind']) => {
    const found = resolve(reference, scope)
    if (found !== undefined) uses.push({ ...found, kind })
  }
  for (const [key, node] of walk(tree)) {
    if (key === 'A_Expr') {
      const operator = strings(node.name).at(-1) ?? ''
      const kind = node.kind
      if (kind === 'AEXPR_IN' || (kind === 'AEXPR_OP' && equalityOperators.has(operator))) {
        add(node.lexpr, 'equality')
        add(node.rexpr, 'equality')
      } else if (
        kind === 'AEXPR_BETWEEN' ||
        kind === 'AEXPR_LIKE' ||
        (kind === 'AEXPR_OP' && rangeOperators.has(operator))
      ) {
        add(node.lexpr, 'range')
        add(node.rexpr, 'range')
      }
    } else if (key === 'SortBy') {
      add(node.node, 'order')
    }
  }
  return uses
}
