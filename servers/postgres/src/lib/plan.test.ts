import { describe, expect, it } from 'vitest'
import { summarizePlan } from './plan.js'

const plain = {
  Plan: {
    'Node Type': 'Hash Join',
    'Join Type': 'Inner',
    'Startup Cost': 1.11,
    'Total Cost': 2.23,
    'Plan Rows': 4,
    'Hash Cond': '(o.customer_id = c.id)',
    Plans: [
      {
        'Node Type': 'Seq Scan',
        'Relation Name': 'orders',
        Alias: 'o',
        'Startup Cost': 0,
        'Total Cost': 1.1,
        'Plan Rows': 4,
        Filter: "(status = 'paid'::shop.order_status)",
      },
      {
        'Node Type': 'Hash',
        'Startup Cost': 1.05,
        'Total Cost': 1.05,
        'Plan Rows': 5,
        Plans: [
          {
            'Node Type': 'Index Scan',
            'Index Name': 'customers_pkey',
            'Relation Name': 'customers',
            Alias: 'customers',
            'Startup Cost': 0,
            'Total Cost': 1.05,
            'Plan Rows': 5,
            'Index Cond': '(id > 0)',
          },
        ],
      },
    ],
  },
  'Planning Time': 0.2,
}

describe('summarizePlan', () => {
  it('summarises an estimated plan: root, cost, rows and the scans', () => {
    const { summary, nodeCount } = summarizePlan(plain)
    expect(summary).toBe(
      'Hash Join: estimated cost 2.23, 4 row(s). Scans: Seq Scan on orders o (~4 rows); Index Scan using customers_pkey on customers (~5 rows).',
    )
    expect(nodeCount).toBe(4)
  })

  it('renders a tree laid out like psql, with conditions under their node', () => {
    expect(summarizePlan(plain).tree).toBe(
      [
        'Hash Join (cost=1.11..2.23 rows=4)',
        '  Hash Cond: (o.customer_id = c.id)',
        '  ->  Seq Scan on orders o (cost=0.00..1.10 rows=4)',
        "        Filter: (status = 'paid'::shop.order_status)",
        '  ->  Hash (cost=1.05..1.05 rows=5)',
        '        ->  Index Scan using customers_pkey on customers (cost=0.00..1.05 rows=5)',
        '              Index Cond: (id > 0)',
        '',
      ].join('\n'),
    )
  })

  it('adds actual timings, rows and filter removals with analyze', () => {
    const analyzed = {
      Plan: {
        'Node Type': 'Aggregate',
        Strategy: 'Hashed',
        'Startup Cost': 10,
        'Total Cost': 12.5,
        'Plan Rows': 3,
        'Actual Startup Time': 0.5,
        'Actual Total Time': 0.75,
        'Actual Rows': 3,
        'Actual Loops': 1,
        'Group Key': ['kind'],
        Plans: [
          {
            'Node Type': 'Seq Scan',
            'Relation Name': 'events',
            Schema: 'analytics',
            Alias: 'events',
            'Startup Cost': 0,
            'Total Cost': 1.5,
            'Plan Rows': 50,
            'Actual Startup Time': 0.01,
            'Actual Total Time': 0.2,
            'Actual Rows': 40,
            'Actual Loops': 1,
            Filter: '(customer_id > 1)',
            'Rows Removed by Filter': 10,
          },
        ],
      },
      'Planning Time': 0.123,
      'Execution Time': 0.9876,
    }
    const { summary, tree } = summarizePlan(analyzed)
    expect(summary).toBe(
      'Hashed Aggregate: estimated cost 12.50, 3 row(s). Ran in 0.988 ms (planning 0.123 ms), 3 row(s) returned. Scans: Seq Scan on analytics.events (~50 rows).',
    )
    expect(tree).toContain(
      'Hashed Aggregate (cost=10.00..12.50 rows=3) (actual time=0.500..0.750 rows=3 loops=1)',
    )
    expect(tree).toContain('  Group Key: kind')
    expect(tree).toContain('        Rows Removed by Filter: 10')
  })

  it('marks nodes that never ran and names outer joins, CTEs and functions', () => {
    const { tree } = summarizePlan({
      Plan: {
        'Node Type': 'Nested Loop',
        'Join Type': 'Left',
        'Total Cost': 1,
        'Plan Rows': 1,
        Plans: [
          {
            'Node Type': 'CTE Scan',
            'CTE Name': 'recent',
            'Total Cost': 1,
            'Plan Rows': 1,
            'Actual Loops': 0,
          },
          {
            'Node Type': 'Function Scan',
            'Function Name': 'generate_series',
            'Total Cost': 1,
            'Plan Rows': 1,
          },
        ],
      },
    })
    expect(tree).toContain('Nested Loop (Left) (cost=?..1.00 rows=1)')
    expect(tree).toContain('->  CTE Scan on recent (cost=?..1.00 rows=1) (never executed)')
    expect(tree).toContain('->  Function Scan on generate_series')
  })

  it('copes with an empty or unexpected plan', () => {
    expect(summarizePlan({})).toEqual({ summary: 'The plan is empty.', tree: '', nodeCount: 0 })
  })
})
