import { describe, expect, it } from 'vitest'
import { type ColumnUse, extractColumnUses } from './query-shape.js'

const uses = (table: string, column: string, kind: ColumnUse['kind']): ColumnUse => ({ table, column, kind })

describe('extractColumnUses', () => {
  it.each<[string, string, ColumnUse[]]>([
    [
      'an equality on the only table',
      'SELECT * FROM accounts WHERE email = $1',
      [uses('accounts', 'email', 'equality')],
    ],
    [
      'IN and a range on a qualified, aliased table',
      'SELECT * FROM shop.orders o WHERE o.status IN ($1, $2) AND o.ordered_at >= $3',
      [uses('shop\u0000orders', 'status', 'equality'), uses('shop\u0000orders', 'ordered_at', 'range')],
    ],
    [
      'both sides of a join condition',
      'SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id',
      [uses('customers', 'id', 'equality'), uses('orders', 'customer_id', 'equality')],
    ],
    [
      'BETWEEN, LIKE and ORDER BY',
      "SELECT * FROM t WHERE a BETWEEN 1 AND 5 AND b LIKE 'x%' ORDER BY c DESC",
      [uses('t', 'a', 'range'), uses('t', 'b', 'range'), uses('t', 'c', 'order')],
    ],
    ['nothing for an unqualified column of a join', 'SELECT * FROM a, b WHERE x = 1', []],
    ['nothing for text that does not parse', 'SELECT FROM WHERE', []],
  ])('%s', async (_label, sql, expected) => {
    expect(new Set(await extractColumnUses(sql))).toEqual(new Set(expected))
  })
})
