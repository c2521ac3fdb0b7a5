import { z } from '@keel-mcp/core'
import { clean, cleanRendered } from '../lib/index.js'
import {
  cap,
  defineTool,
  entry,
  github,
  list,
  listed,
  more,
  number,
  page,
  pageInfo,
  perPage,
  read,
  repo,
  result,
  signalOf,
} from './shared.js'

// Code scanning, Dependabot and secret scanning alerts of one repository. Alert texts come from
// analysis tools and advisories (sanitised); a secret scanning alert's secret itself is never
// returned: the model needs where it leaked and its type, not the credential.

const alertNumber = number.describe('Alert number')
const alertState = (values: [string, ...string[]]) => z.enum(values).optional().describe('State')

interface CodeScanningAlert {
  number: number
  state: string | null
  rule: {
    id?: string | null
    severity?: string | null
    security_severity_level?: string | null
    description?: string
    name?: string
  }
  tool: { name?: string }
  most_recent_instance?: {
    ref?: string
    location?: { path?: string; start_line?: number; end_line?: number }
    message?: { text?: string }
  }
  created_at: string
  html_url: string
}

const codeAlertOf = (alert: CodeScanningAlert, full: boolean) => ({
  number: alert.number,
  state: alert.state,
  rule: alert.rule.id ?? null,
  severity: alert.rule.security_severity_level ?? alert.rule.severity ?? null,
  tool: alert.tool.name ?? null,
  path: alert.most_recent_instance?.location?.path ?? null,
  line: alert.most_recent_instance?.location?.start_line ?? null,
  ...(full
    ? {
        description: cap(cleanRendered(alert.rule.description), 2000),
        message: cap(cleanRendered(alert.most_recent_instance?.message?.text), 5000),
        ref: alert.most_recent_instance?.ref ?? null,
      }
    : {}),
  createdAt: alert.created_at,
  url: alert.html_url,
})

export const listCodeScanningAlerts = defineTool({
  name: 'list_code_scanning_alerts',
  title: 'Code scanning alerts',
  description: 'Code scanning alerts of a repo.',
  toolset: 'code_security',
  input: {
    repo,
    state: alertState(['open', 'closed', 'dismissed', 'fixed']),
    severity: z
      .enum(['critical', 'high', 'medium', 'low', 'warning', 'note', 'error'])
      .optional()
      .describe('Severity'),
    ref: z.string().optional().describe('Git ref'),
    page,
    per_page: perPage,
  },
  output: { alerts: list(), ...more },
  annotations: read,
  async run({ repo: { owner, repo }, state, severity, ref, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.codeScanning.listAlertsForRepo({
      owner,
      repo,
      page,
      per_page,
      ...(state ? { state: state as 'open' } : {}),
      ...(severity ? { severity } : {}),
      ...(ref ? { ref } : {}),
      ...signalOf(signal),
    })
    return listed(
      {
        alerts: response.data.map((alert) => codeAlertOf(alert as CodeScanningAlert, false)),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})

export const getCodeScanningAlert = defineTool({
  name: 'get_code_scanning_alert',
  title: 'Code scanning alert',
  description: 'One code scanning alert with rule and message.',
  toolset: 'code_security',
  input: { repo, alert_number: alertNumber },
  output: { alert: entry() },
  annotations: read,
  async run({ repo: { owner, repo }, alert_number }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.codeScanning.getAlert({
      owner,
      repo,
      alert_number,
      ...signalOf(signal),
    })
    return result({ alert: codeAlertOf(data as CodeScanningAlert, true) }, { untrusted: true })
  },
})

interface DependabotAlert {
  number: number
  state: string
  dependency: { package?: { ecosystem: string; name: string }; manifest_path?: string; scope?: string | null }
  security_advisory: {
    ghsa_id: string
    cve_id: string | null
    summary: string
    severity: string
    description?: string
  }
  security_vulnerability: {
    vulnerable_version_range: string
    first_patched_version: { identifier: string } | null
  }
  created_at: string
  html_url: string
}

const dependabotAlertOf = (alert: DependabotAlert, full: boolean) => ({
  number: alert.number,
  state: alert.state,
  package: alert.dependency.package?.name ?? null,
  ecosystem: alert.dependency.package?.ecosystem ?? null,
  manifest: alert.dependency.manifest_path ?? null,
  ghsa: alert.security_advisory.ghsa_id,
  cve: alert.security_advisory.cve_id,
  severity: alert.security_advisory.severity,
  summary: cap(clean(alert.security_advisory.summary), 500),
  vulnerable: alert.security_vulnerability.vulnerable_version_range,
  patched: alert.security_vulnerability.first_patched_version?.identifier ?? null,
  ...(full ? { description: cap(cleanRendered(alert.security_advisory.description), 10_000) } : {}),
  createdAt: alert.created_at,
  url: alert.html_url,
})

export const listDependabotAlerts = defineTool({
  name: 'list_dependabot_alerts',
  title: 'Dependabot alerts',
  description: 'Vulnerable dependencies of a repo.',
  toolset: 'dependabot',
  input: {
    repo,
    state: alertState(['auto_dismissed', 'dismissed', 'fixed', 'open']),
    severity: z.enum(['low', 'medium', 'high', 'critical']).optional().describe('Severity'),
    page,
    per_page: perPage,
  },
  output: { alerts: list(), ...more },
  annotations: read,
  async run({ repo: { owner, repo }, state, severity, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.dependabot.listAlertsForRepo({
      owner,
      repo,
      page,
      per_page,
      ...(state ? { state } : {}),
      ...(severity ? { severity } : {}),
      ...signalOf(signal),
    })
    return listed(
      {
        alerts: response.data.map((alert) => dependabotAlertOf(alert as DependabotAlert, false)),
        ...pageInfo(response.headers),
      },
      { untrusted: true, page },
    )
  },
})

export const getDependabotAlert = defineTool({
  name: 'get_dependabot_alert',
  title: 'Dependabot alert',
  description: 'One Dependabot alert with the advisory.',
  toolset: 'dependabot',
  input: { repo, alert_number: alertNumber },
  output: { alert: entry() },
  annotations: read,
  async run({ repo: { owner, repo }, alert_number }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.dependabot.getAlert({
      owner,
      repo,
      alert_number,
      ...signalOf(signal),
    })
    return result({ alert: dependabotAlertOf(data as DependabotAlert, true) }, { untrusted: true })
  },
})

interface SecretAlert {
  number: number
  state: string
  secret_type: string
  secret_type_display_name?: string
  resolution?: string | null
  validity?: string
  publicly_leaked?: boolean | null
  push_protection_bypassed?: boolean | null
  created_at: string
  html_url: string
}

/** Everything about the alert except the secret: `secret` is deliberately not copied. */
const secretAlertOf = (alert: SecretAlert) => ({
  number: alert.number,
  state: alert.state,
  type: alert.secret_type,
  typeName: alert.secret_type_display_name ?? null,
  resolution: alert.resolution ?? null,
  validity: alert.validity ?? null,
  publiclyLeaked: alert.publicly_leaked ?? null,
  pushProtectionBypassed: alert.push_protection_bypassed ?? null,
  createdAt: alert.created_at,
  url: alert.html_url,
})

export const listSecretScanningAlerts = defineTool({
  name: 'list_secret_scanning_alerts',
  title: 'Secret scanning alerts',
  description: 'Leaked-secret alerts of a repo (secrets not shown).',
  toolset: 'secret_protection',
  input: {
    repo,
    state: alertState(['open', 'resolved']),
    secret_type: z.string().optional().describe('Types, comma-separated'),
    page,
    per_page: perPage,
  },
  output: { alerts: list(), ...more },
  annotations: read,
  async run({ repo: { owner, repo }, state, secret_type, page, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.secretScanning.listAlertsForRepo({
      owner,
      repo,
      page,
      per_page,
      ...(state ? { state: state as 'open' } : {}),
      ...(secret_type ? { secret_type } : {}),
      ...signalOf(signal),
    })
    return listed(
      {
        alerts: response.data.map((alert) => secretAlertOf(alert as SecretAlert)),
        ...pageInfo(response.headers),
      },
      { page },
    )
  },
})

export const getSecretScanningAlert = defineTool({
  name: 'get_secret_scanning_alert',
  title: 'Secret scanning alert',
  description: 'One leaked-secret alert (secret not shown).',
  toolset: 'secret_protection',
  input: { repo, alert_number: alertNumber },
  output: { alert: entry() },
  annotations: read,
  async run({ repo: { owner, repo }, alert_number }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.secretScanning.getAlert({
      owner,
      repo,
      alert_number,
      ...signalOf(signal),
    })
    return result({ alert: secretAlertOf(data as SecretAlert) })
  },
})
