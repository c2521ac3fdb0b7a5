import { z } from '@keel-mcp/core'
import { type HealthFinding, healthChecks, healthReport } from '../lib/index.js'
import { databaseShape, defineTool, items, readOnly } from './shared.js'

const order = { critical: 0, warning: 1, info: 2 } as const

function reportText(findings: readonly HealthFinding[]): string {
  const sorted = [...findings].sort((a, b) => order[a.severity] - order[b.severity])
  const problems = sorted.filter(
    (finding) => finding.severity !== 'info' || finding.action !== 'Nothing to do.',
  )
  const lines = sorted.map(
    (finding) =>
      `[${finding.severity}] ${finding.check}: ${finding.message}${finding.action === 'Nothing to do.' ? '' : `\n   → ${finding.action}`}`,
  )
  return `${problems.length} finding(s) to act on.\n${lines.join('\n')}`
}

export const analyzeDbHealth = defineTool({
  name: 'analyze_db_health',
  title: 'Analyze DB health',
  // The checks' names are in the enum of `checks`: the description need not list them again.
  description: 'Health findings with numbers and fixes: indexes, vacuum, wraparound, sequences…',
  input: {
    checks: z
      .array(z.enum(healthChecks as [string, ...string[]]))
      .optional()
      .describe('Default: all'),
    database: databaseShape,
  },
  output: { findings: items(), checks: z.record(z.string(), z.number()) },
  annotations: readOnly,
  async run({ checks, database }, { deps, signal }) {
    const { db } = deps.target(database)
    const report = await db.transaction({ signal }, (client) =>
      healthReport(client, (checks ?? healthChecks) as typeof healthChecks),
    )
    return {
      data: { findings: report.findings.map((finding) => ({ ...finding })), checks: report.checks },
      text: reportText(report.findings),
    }
  },
})
