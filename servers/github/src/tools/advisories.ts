import { z } from '@keel-mcp/core'
import { clean, cleanRendered } from '../lib/index.js'
import { cap, defineTool, entry, github, list, read, repo, result, signalOf } from './shared.js'

const toolset = 'security_advisories'
const severity = z.enum(['low', 'medium', 'high', 'critical']).optional().describe('Severity')

interface Advisory {
  ghsa_id: string
  cve_id: string | null
  summary: string
  severity: string | null
  state?: string
  published_at: string | null
  html_url: string
  description?: string | null
  vulnerabilities?: Array<{
    package?: { ecosystem?: string; name?: string | null } | null
    vulnerable_version_range?: string | null
    patched_versions?: string | null
    first_patched_version?: string | null
  }> | null
  cvss?: { score?: number | null } | null
  cwes?: Array<{ cwe_id: string }> | null
}

function advisoryOf(advisory: Advisory, full: boolean) {
  return {
    ghsa: advisory.ghsa_id,
    cve: advisory.cve_id,
    summary: cap(clean(advisory.summary), 500),
    severity: advisory.severity,
    ...(advisory.state ? { state: advisory.state } : {}),
    publishedAt: advisory.published_at,
    packages: (advisory.vulnerabilities ?? []).slice(0, 20).map((vulnerability) => ({
      ecosystem: vulnerability.package?.ecosystem ?? null,
      name: vulnerability.package?.name ?? null,
      vulnerable: vulnerability.vulnerable_version_range ?? null,
      patched: vulnerability.first_patched_version ?? vulnerability.patched_versions ?? null,
    })),
    ...(full
      ? {
          description: cap(cleanRendered(advisory.description), 20_000),
          cvss: advisory.cvss?.score ?? null,
          cwes: (advisory.cwes ?? []).map((cwe) => cwe.cwe_id),
        }
      : {}),
    url: advisory.html_url,
  }
}

/** The `after` cursor of the next page in a `Link` header (advisory lists page by cursor, not number). */
const cursorOf = (link: string | undefined) => {
  const next = link?.match(/<([^>]+)>;\s*rel="next"/)?.[1]
  return next ? (new URL(next, 'https://github.invalid').searchParams.get('after') ?? undefined) : undefined
}

const paging = {
  after: z.string().optional().describe('From nextCursor'),
  per_page: z.number().int().min(1).max(100).default(30).describe('Per page'),
}
const cursorOutput = { advisories: list(), nextCursor: z.string().optional() }

/** A page of advisories and the cursor of the next one (GitHub pages them with `after`). */
function advisoryPage(response: { data: unknown[]; headers: { link?: string } }) {
  const nextCursor = cursorOf(response.headers.link)
  return result(
    {
      advisories: response.data.map((advisory) => advisoryOf(advisory as Advisory, false)),
      ...(nextCursor ? { nextCursor } : {}),
    },
    {
      untrusted: true,
      ...(nextCursor ? { notice: 'More available: call again with after = nextCursor.' } : {}),
    },
  )
}

export const listGlobalSecurityAdvisories = defineTool({
  name: 'list_global_security_advisories',
  title: 'Global advisories',
  description: "GitHub's reviewed advisory database, filtered.",
  toolset,
  input: {
    ecosystem: z.string().optional().describe('e.g. npm'),
    affects: z.string().optional().describe('Package or package@version'),
    cve_id: z.string().optional().describe('CVE'),
    severity,
    ...paging,
  },
  output: cursorOutput,
  annotations: read,
  async run({ ecosystem, affects, cve_id, severity, after, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.securityAdvisories.listGlobalAdvisories({
      per_page,
      ...(ecosystem ? { ecosystem: ecosystem as 'npm' } : {}),
      ...(affects ? { affects } : {}),
      ...(cve_id ? { cve_id } : {}),
      ...(severity ? { severity } : {}),
      ...(after ? { after } : {}),
      ...signalOf(signal),
    })
    return advisoryPage(response)
  },
})

export const getGlobalSecurityAdvisory = defineTool({
  name: 'get_global_security_advisory',
  title: 'Get advisory',
  description: 'One advisory by GHSA id, with description and CVSS.',
  toolset,
  input: {
    ghsa_id: z
      .string()
      .regex(/^GHSA(-[23456789cfghjmpqrvwx]{4}){3}$/i, 'must be GHSA-xxxx-xxxx-xxxx')
      .describe('GHSA id'),
  },
  output: { advisory: entry() },
  annotations: read,
  async run({ ghsa_id }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const { data } = await octokit.rest.securityAdvisories.getGlobalAdvisory({ ghsa_id, ...signalOf(signal) })
    return result({ advisory: advisoryOf(data as Advisory, true) }, { untrusted: true })
  },
})

const state = z.enum(['triage', 'draft', 'published', 'closed']).optional().describe('State')

export const listRepositorySecurityAdvisories = defineTool({
  name: 'list_repository_security_advisories',
  title: 'Repo advisories',
  description: "A repo's own security advisories.",
  toolset,
  input: { repo, state, ...paging },
  output: cursorOutput,
  annotations: read,
  async run({ repo: { owner, repo }, state, after, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.securityAdvisories.listRepositoryAdvisories({
      owner,
      repo,
      per_page,
      ...(state ? { state } : {}),
      ...(after ? { after } : {}),
      ...signalOf(signal),
    })
    return advisoryPage(response)
  },
})

export const listOrgRepositorySecurityAdvisories = defineTool({
  name: 'list_org_repository_security_advisories',
  title: 'Org advisories',
  description: "Security advisories of an org's repos.",
  toolset,
  input: { org: z.string().min(1).describe('Org'), state, ...paging },
  output: cursorOutput,
  annotations: read,
  async run({ org, state, after, per_page }, { deps, auth, signal }) {
    const { octokit } = await github(deps, auth)
    const response = await octokit.rest.securityAdvisories.listOrgRepositoryAdvisories({
      org,
      per_page,
      ...(state ? { state } : {}),
      ...(after ? { after } : {}),
      ...signalOf(signal),
    })
    return advisoryPage(response)
  },
})
