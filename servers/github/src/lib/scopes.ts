/**
 * Which tools a classic token cannot use, from the scopes GitHub lists in `X-OAuth-Scopes` on every
 * answer. Only what the scopes rule out for sure is hidden: public repositories are readable with
 * any token, so reading tools stay. Fine-grained tokens and GitHub Apps send no such header: their
 * 403s name the missing permission instead (grants.ts learns from those).
 */

export interface ToolFacts {
  name: string
  toolset: string
  readOnly: boolean
}

/** `"repo, gist"` → the scopes, with the ones a broader scope implies. */
export function parseScopes(header: string): Set<string> {
  const scopes = new Set(
    header
      .split(',')
      .map((scope) => scope.trim())
      .filter(Boolean),
  )
  if (scopes.has('repo'))
    for (const implied of ['public_repo', 'repo:status', 'security_events']) scopes.add(implied)
  if (scopes.has('project')) scopes.add('read:project')
  if (scopes.has('admin:org')) scopes.add('read:org')
  return scopes
}

const any = (scopes: Set<string>, ...wanted: string[]) => wanted.some((scope) => scopes.has(scope))

/** Writing tools that act on users and gists, not repositories. */
const NOT_REPOSITORY_WRITES = new Set(['create_gist', 'update_gist'])

/** The names of the tools these scopes cannot serve. */
export function hiddenByScopes(tools: ToolFacts[], scopes: Set<string>): Set<string> {
  const hidden = new Set<string>()
  for (const tool of tools) {
    let usable = true
    if (tool.toolset === 'notifications') usable = any(scopes, 'notifications', 'repo')
    else if (tool.toolset === 'projects')
      usable = tool.readOnly ? any(scopes, 'read:project') : any(scopes, 'project')
    else if (tool.toolset === 'gists') usable = tool.readOnly || any(scopes, 'gist')
    else if (['code_security', 'dependabot', 'secret_protection'].includes(tool.toolset))
      usable = any(scopes, 'security_events', 'public_repo')
    else if (!tool.readOnly && !NOT_REPOSITORY_WRITES.has(tool.name) && !['dynamic'].includes(tool.toolset))
      usable = any(scopes, 'public_repo')
    if (!usable) hidden.add(tool.name)
  }
  return hidden
}
